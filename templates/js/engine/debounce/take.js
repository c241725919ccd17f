// The cut drew ticket c: the burst is the tickets s .. c-1. Claim each (an event that has not
// claimed its own yet is left out and draws again), and meet the runner of the burst before
// (cut at s - 1) at `ran:<s-1>`: whoever comes first runs that burst. (This list is never
// empty, so the chain goes on for a burst that holds no ticket.)
const w = << decision >>;
const c = Number($json[w.seq_key]);
const tickets = [];
for (let t = w.s; t < c; t += 1) tickets.push(t);
return {
  c,
  tickets,
  incr: [
    ...tickets.map((t) => ({ key: `${w.base}<< keys.event_claim >>${t}`, expire: true, ttl: << debounce_ttl >> })),
    { key: `${w.base}<< keys.ran >>${w.s - 1}`, expire: true, ttl: << debounce_ttl >> },
  ],
};
