<% import 'shared/slots.js' as slot %>
// After the claims: a call that won every slot it claimed (and whose fixed counts stay within
// their limits) writes each slot's next generation and when it is free again (its start plus
// W plus the margin), and goes now or sleeps until the slots it booked are free. A call that
// lost a claim gives back the ones it won and looks again.
const ctx = << context >>;
const check = << check >>;
const look = << look >>;
<% include 'engine/rate/plan.js' +%>
const counted = << claimed >>;
const now = Date.now();
const carry = { wait: look.wait, lost: look.lost.map((m) => ({ ...m })), tries: look.tries };
// A claim this old may have expired and been won again: write nothing, look again.
if (now - check.checked_ms > << void_ms >>) return { ...again(ctx, look, now, {}), commit: [] };
let offset = 0;
const results = check.plans.map((p) => {
  const l = ctx.limits[p.index];
  const mine = counted.slice(offset, offset + l.cost);
  offset += l.cost;
  if (l.algorithm === 'fixed') return { p, l, over: Math.max(...mine) > l.limit, count: Math.max(...mine), won: [], lost: [] };
  return { p, l, over: false, won: p.chosen.filter((s, k) => mine[k] === 1), lost: p.chosen.filter((s, k) => mine[k] !== 1) };
});
const ok = results.every((r) => !r.over && r.lost.length === 0);
const start = Math.max(now, check.at);
// The items of Rate Limit Commit, each carrying the verdict to Rate Limit Outcome.
const write = (time, verdict) => results.filter((r) => r.won.length > 0).map((r) => {
  const value = {};
  r.won.forEach((s) => { value[String(s.i)] = << slot.value('s.g + 1', 'time(s, r.l)') >>; });
  return { key: r.l.key, type: 'hash', value, ttl: r.l.ttl, verdict };
});
if (ok) {
  const limits = results.map((r) => ({
    scope: r.l.scope, limit: r.l.limit, algorithm: r.l.algorithm,
    count: r.l.algorithm === 'fixed' ? r.count : r.p.busy + r.l.cost,
  }));
  const state = start > now + << sleep_min_ms >> ? 'sleep' : 'allow';
  // What this call holds: Rate Limit Outcome moves the slots' time on if it comes late.
  const held = results.filter((r) => r.won.length > 0).map((r) => ({ key: r.l.key, ttl: r.l.ttl, gap_ms: r.l.gap_ms, slots: r.won.map((s) => [s.i, s.g + 1]) }));
  const verdict = {
    state, allowed: true, limits, held, planned_ms: start, ...carry,
    waited_ms: Math.max(0, start - ctx.started_ms),
    sleep_seconds: Math.max(0.01, (start - now) / 1000),
  };
  return { ...verdict, commit: write((s, l) => start + l.gap_ms, verdict) };
}
// Give back what was won; remember what was lost, at the generation it was lost.
results.forEach((r) => r.lost.forEach((s) => { carry.lost[r.p.index][String(s.i)] = { g: s.g, at: now }; }));
const over = results.find((r) => r.over);
let verdict;
if (over && over.l.on_denied !== 'wait') {
  const p = { index: over.p.index, busy: over.count - over.l.cost, at: (Math.floor(now / over.l.bucket_ms) + 1) * over.l.bucket_ms };
  verdict = { state: 'deny', mode: over.l.on_denied, ...denial(ctx, p, now), ...carry };
} else {
  verdict = again(ctx, { ...look, lost: carry.lost }, now, {});
}
return { ...verdict, commit: write((s) => s.t, verdict) };
