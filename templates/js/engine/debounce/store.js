// The event's ticket is drawn: store its items under the ticket (its own key, nobody else
// writes it), then claim the ticket (Debounce Claim pushes "e" onto its claims list: the first
// mark decides) and meet the cut before it (Debounce After).
const ctx = << context >>;
const ticket = Number(<< drawn >>.map((item) => item.json[ctx.seq_key]).find((v) => v !== undefined));
return {
  ticket,
  set: [{ key: `${ctx.base}<< keys.event >>${ticket}`, value: JSON.stringify({ at: Date.now(), items: ctx.items }), ttl: << debounce_ttl >> }],
  claim_key: `${ctx.base}<< keys.event_claim >>${ticket}`,
  after_key: `${ctx.base}<< keys.after >>${ticket - 1}`,
};
