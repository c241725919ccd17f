// A claim that answered 2 is an event that stored its items before the runner came: it is in
// this burst (and in no other: only one INCR of its claim answers 2). `ran:<s-1>` answered 1:
// the runner of the burst before had not reached its body (it died, failed or stalls); this
// runner runs that burst first, from `burst:<s-1>` (Debounce Read Prev), and that runner,
// answered 2, runs nothing.
const w = << decision >>;
const take = << take >>;
const got = (key) => Number(<< claimed >>.map((item) => item.json[key]).find((v) => v !== undefined));
return {
  c: take.c,
  own: take.tickets.filter((t) => got(`${w.base}<< keys.event_claim >>${t}`) === 2),
  ran_prev: got(`${w.base}<< keys.ran >>${w.s - 1}`),
  prev_key: `${w.base}<< keys.burst >>${w.s - 1}`,
};
