<% import 'shared/slots.js' as slot %>
// The verdict once its writes are done (Rate Limit Commit hands on its items, each with the
// verdict, or the verdict itself), and the last look at the clock before the body. A call
// allowed at `planned_ms` that gets here more than << gate_ms >> ms later (a slow Redis, a busy
// n8n) may not go yet: another call may use its slots from planned_ms + W + margin. It restamps
// them: it claims each slot's generation it wrote (Rate Limit Restamp → Rate Limit Claim), as a
// waiter that booked the slot ahead claimed it too, and only a call that wins every claim writes
// its slots again from now and goes (Rate Limit Verdict); a waiter that booked one keeps it.
// Long after its write (a stall) such a waiter's claim may have expired: it looks again. A call
// that booked ahead sleeps.
const verdict = $json.verdict || $json;
const now = Date.now();
const held = verdict.held || [];
if (verdict.state === 'allow' && held.length > 0 && now - verdict.planned_ms > << gate_ms >>) {
  // (Written as a `<` test so that a verdict without written_ms, NaN, looks again too.)
  if (!(now - verdict.written_ms < << restamp_within_ms >>)) return { ...verdict, state: 'retry', late: true, sleep_seconds: 0.01 };
  const claims = held.flatMap((h) => h.slots.map(([i, g]) => ({ key: << slot.claim('h.key', 'i', 'g') >>, expire: true, ttl: << claim_ttl_s >> })));
  return { ...verdict, state: 'restamp', claims };
}
if (verdict.state === 'sleep') return { ...verdict, sleep_seconds: Math.max(0.01, (verdict.planned_ms - now) / 1000) };
return verdict;
