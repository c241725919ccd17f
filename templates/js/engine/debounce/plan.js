// The walk is done: read the records of every ticket this runner may run (the walked bursts',
// oldest first, then its own), then INCR, in one node right before the body, `after:c` (who
// waits next: the party answered 2), `ran:<x>` of each walked burst and `ran:<c>`: of all the
// executions that INCR one `ran` key (this cut's runners, the next cuts' runners), the one
// answered 1 runs that burst.
const w = << decision >>;
const claimed = << claimed >>;
const passed = << passed >>;
const chain = Array.isArray($json.chain) ? $json.chain : [];
const tickets = [...chain.flatMap((b) => b.tickets), ...passed.tickets];
return {
  c: claimed.c,
  chain,
  tickets,
  get: tickets.map((t) => ({ key: `${w.base}<< keys.event >>${t}` })),
  incr: [
    { key: `${w.base}<< keys.after >>${claimed.c}`, expire: true, ttl: << debounce_ttl >> },
    ...chain.map((b) => ({ key: `${w.base}<< keys.ran >>${b.c}`, expire: true, ttl: << debounce_ttl >> })),
    { key: `${w.base}<< keys.ran >>${claimed.c}`, expire: true, ttl: << debounce_ttl >> },
  ],
};
