// The event is in (Debounce In?: its own mark came first on its claims list) and answered. After
// 2: the cut just before this ticket came first, so this event waits for the burst that begins
// with it (its runner INCRs the same key and gets 1); ticket 1 begins the key's first burst.
// Any other event reads the watch (Debounce Read Watch): a waiter silent for
// << debounce_stale_ms >> ms is taken to be dead, and the event tries to take its burst over
// (Debounce Take Over), one event per burst and << debounce_stale_ms >> ms slot of its own clock:
// a taker that dies before its first look leaves the watch as stale as before, and the key's
// next event in a later slot takes over again (keyed by the stale watch alone, every later
// event would meet the dead taker's INCR and stay buffered, for the keys' day). No watch at
// all: the key's first burst (nobody else writes the watch before its waiter's first look),
// whose waiter may have died before that look or never exist (ticket 1 a hole: a retried
// ticket INCR); the event tries to take burst 1 over at once, the same way. A live waiter (or
// a taker of another slot) meets it at the cut.
const ctx = << context >>;
const stored = << stored >>;
const after = Number(<< after >>[stored.after_key]);
const now = Date.now();
const waits = stored.ticket === 1 || after === 2;
let watched = null;
try {
  watched = typeof $json.watch === 'string' ? JSON.parse($json.watch) : $json.watch;
} catch (error) {}
let stale = !waits && watched && Number.isFinite(Number(watched.s)) && now - Number(watched.at) > << debounce_stale_ms >>;
if (!waits && !watched) {
  watched = { s: 1, first_at: now };
  stale = true;
}
const slot = Math.floor(now / << debounce_stale_ms >>);
const s = stale ? Number(watched.s) : stored.ticket;
return {
  state: waits ? 'wait' : stale ? 'take' : 'buffered',
  take_key: stale ? `${ctx.base}<< keys.take >>${watched.s}:${slot}` : null,
  watch: {
    key: ctx.key, base: ctx.base, seq_key: ctx.seq_key, quiet_ms: ctx.quiet_ms, max_ms: ctx.max_ms,
    max_items: ctx.max_items, s, first_at: stale ? Number(watched.first_at) || now : now, took: stale,
    sleep: Math.min(ctx.quiet_ms, << poll_ms >>) / 1000,
  },
};
