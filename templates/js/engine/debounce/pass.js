// Before anyone can run the next burst (its waiter exists only after this pass: the watch below,
// or `after:c` met after it), write the tickets this burst runs, `burst:<c>`: every runner of the
// cut writes the same. Should they all die before their body, a later runner runs them (Debounce
// Walk). Then the watch: the next burst begins at c + 1; its waiter writes it from its first
// look, and until then it says when it opened, so that a burst whose waiter died before its
// first look is taken over too. Only the runner whose own draw is the cut writes it, or one that
// took the burst over from a stale watch (it finishes the cut of a runner that died before its
// pass): a runner back from a long stall would set the watch back to a burst long cut.
const w = << decision >>;
const claimed = << claimed >>;
const watch = { key: `${w.base}<< keys.watch >>`, value: JSON.stringify({ s: claimed.c + 1, at: Date.now(), first_at: Date.now() }), ttl: << debounce_ttl >> };
return {
  tickets: claimed.own,
  set: [
    { key: `${w.base}<< keys.burst >>${claimed.c}`, value: JSON.stringify({ s: w.s, tickets: claimed.own }), ttl: << debounce_ttl >> },
    ...(claimed.mine || w.took ? [watch] : []),
  ],
};
