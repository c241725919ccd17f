// Which bursts before this one may still need running: the one cut at s - 1, then (while the
// one looked at was not run: `ran:<x>` never INCRed) the one before it, and so on. A burst whose
// runners all died or failed before their body has `ran:<x>` unset and its tickets in
// `burst:<x>`; this runner will INCR its `ran` with its own, right before the body (Debounce
// Ran), and run it if answered 1. Reads only: nothing is decided here.
const w = << decision >>;
const claimed = << claimed >>;
const walked = << walked >>;
const at = (x, chain) => ({
  c: claimed.c, x, chain, done: !(x >= 1) || chain.length >= << debounce_walk_max >>,
  get: [
    { key: `${w.base}<< keys.ran >>${x}`, property: 'ran' },
    { key: `${w.base}<< keys.burst >>${x}`, property: 'burst' },
  ],
});
if (walked === null) return at(w.s - 1, []);
const got = (p) => walked.read.map((item) => item.json[p]).find((v) => v !== undefined);
let burst = null;
try {
  const raw = got('burst');
  burst = typeof raw === 'string' ? JSON.parse(raw) : raw;
} catch (error) {}
if (Number(got('ran') ?? 0) >= 1 || !burst || !Array.isArray(burst.tickets)) return { ...walked.state, done: true };
const chain = [{ c: walked.state.x, tickets: burst.tickets.map(Number) }, ...walked.state.chain];
return at(Number(burst.s) - 1, chain);
