// Before anyone can run the next burst (its waiter exists only after this pass: the watch below,
// or `after:c` met after it), write what this burst runs: the tickets of the burst before when
// its runner had not reached its body (`ran:<s-1>` answered 1), then this burst's own.
// Should this runner die before its body, the next runner runs them (`ran:<c>`). Then the
// watch: the next burst begins at c + 1; its waiter writes it from its first look, and until
// then it says when it opened, so that a burst whose waiter died before its first look is
// taken over too.
const w = << decision >>;
const claimed = << claimed >>;
let prev = null;
try {
  const raw = << read_prev >>.prev;
  prev = typeof raw === 'string' ? JSON.parse(raw) : raw;
} catch (error) {}
const inherited = claimed.ran_prev === 1 && prev && Array.isArray(prev.tickets) ? prev.tickets.map(Number) : [];
const tickets = [...inherited, ...claimed.own];
return {
  inherited,
  tickets,
  set: [
    // `get` rides on this item through Debounce Pass to Debounce Read Items: the records to read.
    { key: `${w.base}<< keys.burst >>${claimed.c}`, value: JSON.stringify({ s: w.s, tickets }), ttl: << debounce_ttl >>, get: tickets.map((t) => ({ key: `${w.base}<< keys.event >>${t}` })) },
    { key: `${w.base}<< keys.watch >>`, value: JSON.stringify({ s: claimed.c + 1, at: Date.now(), first_at: Date.now() }), ttl: << debounce_ttl >> },
  ],
};
