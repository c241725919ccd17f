<% import 'shared/slots.js' as slot %>
// After the claims: a call that won every slot it claimed (and whose fixed counts stay within
// their limits) writes each slot's next generation and when it is free again (its start plus
// W plus the margin), and goes now or sleeps until the slots it booked are free. A call that
// lost a claim gives back the ones it won and looks again. A restamp (Rate Limit Restamp ran
// after this call's last look) claimed the generations of the slots it holds: won, it writes
// them again from now; lost, a waiter booked the slot, and the call looks again.
const ctx = << context >>;
const check = << check >>;
const look = << look >>;
<% include 'engine/rate/plan.js' +%>
const counted = << claimed >>;
const now = Date.now();
const carry = { wait: look.wait, lost: look.lost.map((m) => ({ ...m })), tries: look.tries };
<% if restamp %>
const restamp = << restamp >>.isExecuted ? << restamp >>.first().json : null;
if (restamp !== null && restamp.restamp_ms >= check.checked_ms) {
  let k = 0;
  const held = restamp.held.map((h) => ({ ...h, slots: h.slots.map(([i, g]) => [i, g, counted[k++] === 1]) }));
  // Claims made this long after its write may have missed an expired one: write nothing.
  if (!(now - restamp.written_ms < << claims_live_ms >>)) return { ...again(ctx, look, now, {}), commit: [] };
  const kept = held.every((h) => h.slots.every(([, , won]) => won));
  const stamp = { ...restamp, state: 'allow', claims: undefined, planned_ms: now, written_ms: now, restamped: (restamp.restamped || 0) + 1 };
  const back = kept ? stamp : { ...again(ctx, look, now, {}), restamped: stamp.restamped };
  // Won: the next generation from now. Lost: the slots it won go back at their time as it last
  // wrote them (it claimed them, so a caller reading that generation would lose its claim).
  const commit = held.map((h) => {
    const value = {};
    h.slots.filter(([, , won]) => won).forEach(([i, g]) => {
      value[String(i)] = << slot.value('g + 1', 'kept ? now + h.gap_ms : restamp.planned_ms + h.gap_ms') >>;
    });
    return { key: h.key, type: 'hash', value, ttl: h.ttl, verdict: back };
  }).filter((item) => Object.keys(item.value).length > 0);
  const next = kept ? { ...stamp, held: held.map((h) => ({ ...h, slots: h.slots.map(([i, g]) => [i, g + 1]) })) } : back;
  return { ...next, commit: commit.map((item) => ({ ...item, verdict: next })) };
}
<% endif %>
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
    state, allowed: true, limits, held, planned_ms: start, written_ms: now, ...carry,
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
