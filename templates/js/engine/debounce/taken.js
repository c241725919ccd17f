// `ran:<x>` answered 1: this runner runs burst x (its tickets' records are read already); 2 or
// more: another execution runs it. After 2: event c + 1 came first and does not wait, so this
// execution waits for the next burst after the body. A runner that took the burst over from a
// stale watch and found it cut by another (it finished a cut it did not draw) waits for the next
// burst whatever it met: the waiter the stale watch hid may be dead too, and nothing else would
// notice.
const w = << decision >>;
const claimed = << claimed >>;
const plan = << plan >>;
const passed = << passed >>;
const got = (key) => Number(<< ran >>.map((item) => item.json[key]).find((v) => v !== undefined));
const won = (c) => got(`${w.base}<< keys.ran >>${c}`) === 1;
const inherited = plan.chain.filter((b) => won(b.c)).flatMap((b) => b.tickets);
const tickets = [...inherited, ...(won(claimed.c) ? passed.tickets : [])];
const took = w.took === true && !claimed.mine;
return {
  tickets,
  inherited,
  next: got(`${w.base}<< keys.after >>${claimed.c}`) === 2 || took,
  took,
  c: claimed.c,
};
