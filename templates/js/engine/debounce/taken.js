// `ran:<c>` answered 1: this runner runs its burst (with the burst before it, when it took that
// over; their records are read already); 2: the next runner got there first and ran it, so this
// one runs nothing. After 2:
// event c + 1 came first and does not wait, so this execution waits for the next burst after
// the body; not when the next runner passed it (then the next burst was cut already).
const w = << decision >>;
const claimed = << claimed >>;
const passed = << passed >>;
const got = (key) => Number(<< ran >>.map((item) => item.json[key]).find((v) => v !== undefined));
const runs = got(`${w.base}<< keys.ran >>${claimed.c}`) === 1;
const tickets = runs ? passed.tickets : [];
return {
  tickets,
  inherited: runs ? passed.inherited : [],
  next: runs && got(`${w.base}<< keys.after >>${claimed.c}`) === 2,
  c: claimed.c,
};
