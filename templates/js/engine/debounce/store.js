// The event's ticket is drawn: store its items under the ticket (its own key, nobody else
// writes it), then claim the ticket (Debounce Claim pushes "e" onto its claims list: the first
// mark decides) and meet the cut before it (Debounce After).
const ctx = << context >>;
const ticket = Number(<< drawn >>[ctx.seq_key]);
return {
  ticket,
  event_key: `${ctx.base}<< keys.event >>${ticket}`,
  event: JSON.stringify({ at: Date.now(), items: ctx.items }),
  claim_key: `${ctx.base}<< keys.event_claim >>${ticket}`,
  after_key: `${ctx.base}<< keys.after >>${ticket - 1}`,
};
