<% import 'shared/slots.js' as slot %>
// The verdict once its writes are done (Rate Limit Commit hands on its items, each with the
// verdict, or the verdict itself), and the last look at the clock before the body. A call
// allowed at `planned_ms` that gets here more than << gate_ms >> ms later (a slow Redis, a busy
// n8n) may not go yet: its slots
// are free again from planned_ms + W + margin. While nobody else can have claimed them (well
// before that time), it writes them again from now and comes back here; later than that (a
// stall) its slots are spent, and it looks again. A call that booked ahead sleeps.
const verdict = $json.verdict || $json;
const now = Date.now();
const held = verdict.held || [];
if (verdict.state === 'allow' && held.length > 0 && now - verdict.planned_ms > << gate_ms >>) {
  const safe = held.every((h) => now < verdict.planned_ms + h.gap_ms - << restamp_ms >>);
  if (!safe) return { ...verdict, state: 'retry', late: true, sleep_seconds: 0.01 };
  const again = { ...verdict, planned_ms: now, restamped: (verdict.restamped || 0) + 1 };
  const commit = held.map((h) => {
    const value = {};
    h.slots.forEach(([i, g]) => { value[String(i)] = << slot.value('g', 'now + h.gap_ms') >>; });
    return { key: h.key, type: 'hash', value, ttl: h.ttl, verdict: again };
  });
  // `verdict`: Rate Limit Commit hands on this item itself when it writes one item (rate.Shape).
  return { ...again, state: 'restamp', commit, verdict: again };
}
if (verdict.state === 'sleep') return { ...verdict, sleep_seconds: Math.max(0.01, (verdict.planned_ms - now) / 1000) };
return verdict;
