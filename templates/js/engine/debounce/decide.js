// The waiter's look: the key's last ticket (Debounce Read Seq) and that event's record (Debounce
// Read Last). Cut when the key was quiet for Q, the burst is M old, or it holds N events; else
// sleep until the earliest of those, and look at least every << poll_ms >> ms (N events).
// A Redis GET answers with its value alone: the state is what Debounce Sleep was given.
const w = { ...<< state >>, last_ticket: << seq >>.last_ticket, last_event: $json.last_event };
const now = Date.now();
const last = Number(w.last_ticket ?? w.s);
// A ticket whose record is not written yet: its event is arriving now. A cut's draw never gets
// one (a hole): counted from the look that first saw it, so that a burst whose last ticket is a
// hole is quiet Q after it, not only at the max wait. An event that stalls longer between its
// draw and its record is left out by the cut and draws again.
let lastAt = now;
let hole = { t: last, since: now };
try {
  const record = typeof w.last_event === 'string' ? JSON.parse(w.last_event) : w.last_event;
  if (record && record.at) {
    lastAt = Number(record.at);
    hole = null;
  }
} catch (error) {}
if (hole && w.hole && Number(w.hole.t) === last) {
  hole = w.hole;
  lastAt = Number(w.hole.since);
}
const count = last - w.s + 1;
const quietLeft = w.quiet_ms - (now - lastAt);
const maxLeft = w.max_ms - (now - w.first_at);
const reason = count >= w.max_items ? 'full' : quietLeft <= 0 ? 'quiet' : maxLeft <= 0 ? 'max_wait' : null;
return {
  key: w.key, base: w.base, seq_key: w.seq_key, quiet_ms: w.quiet_ms, max_ms: w.max_ms,
  max_items: w.max_items, s: w.s, first_at: w.first_at, took: w.took === true, hole,
  cut: reason !== null,
  reason,
  sleep: Math.max(50, Math.min(quietLeft, maxLeft, << poll_ms >>)) / 1000,
};
