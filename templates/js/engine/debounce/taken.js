// A claim that answered 2 is an event that stored its items before the runner came: it is in
// this burst (and in no other: only one INCR of its claim answers 2). After 2: event c + 1
// came first and does not wait, so this execution waits for the next burst after the body.
const w = << decision >>;
const take = << take >>;
const got = (key) => Number(<< claimed >>.map((item) => item.json[key]).find((v) => v !== undefined));
const tickets = take.tickets.filter((t) => got(`${w.base}<< keys.event_claim >>${t}`) === 2);
return {
  tickets,
  next: got(`${w.base}<< keys.after >>${take.c}`) === 2,
  c: take.c,
  get: tickets.map((t) => ({ key: `${w.base}<< keys.event >>${t}` })),
};
