<% import 'shared/slots.js' as slot %>
// Shared by the rate limit's Set nodes. A sliding limit is `limit` slots; a call takes `cost` of
// them by winning a claim on each (one INCR of `<hash>:c<slot>:<generation>`, 1 wins) and then
// writes each slot's next generation and the time it is free again. A claim won by a call that
// gives up is given back (the next generation, the old time). A slot whose claim this call lost
// at the generation it still reads is in limbo: its winner has not written yet, or is giving it
// back, so a call that would be refused for want of it looks again before it answers.
// The slots the hash holds (a slot never written is free, generation 0), by index.
const slotsOf = (l, value) => {
  const slots = [];
  if (!value || typeof value !== 'object') return slots;
  for (const [field, raw] of Object.entries(value)) {
    const i = Number(field);
    if (!Number.isInteger(i) || i < 0 || i >= l.limit) continue;
    const parts = << slot.read('raw') >>;
    slots.push({ i, g: Number(parts[0]) || 0, t: Number(parts[1]) || 0 });
  }
  return slots.sort((a, b) => a.i - b.i);
};
const shuffled = (list) => {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
};
// One limit, as this look read it: the slots to claim (free ones at random among the lowest
// << pool >>, so that callers spread over them while the hash stays as small as the use; else the
// earliest to come free, ties at random), from when, and what stands in the way.
const planOf = (l, index, value, lost, now) => {
  if (l.algorithm === 'fixed') {
    const count = Number(value) || 0;
    const fits = count + l.cost <= l.limit;
    const claims = [];
    for (let n = 0; n < l.cost; n += 1) claims.push({ prefix: l.prefix, bucket_ms: l.bucket_ms, expire: true, ttl: l.ttl });
    return { index, at: fits ? now : (Math.floor(now / l.bucket_ms) + 1) * l.bucket_ms, busy: count, limbo: 0, chosen: [], claims };
  }
  const mine = lost[index] || {};
  // A claim lost more than its TTL ago has expired: a winner that never wrote is gone.
  const isLost = (s) => mine[s.i] !== undefined && mine[s.i].g === s.g && now - mine[s.i].at < << claim_ttl_s >> * 1000;
  const written = slotsOf(l, value);
  // A slot never written is free at generation 0: one whose claim this call lost counts too.
  Object.keys(mine).map(Number).filter((i) => i < l.limit && !written.some((s) => s.i === i))
    .forEach((i) => written.push({ i, g: 0, t: 0 }));
  written.sort((a, b) => a.i - b.i);
  const limbo = written.filter((s) => isLost(s) && now - mine[s.i].at < << limbo_ms >>).length;
  const busy = written.filter((s) => s.t > now || isLost(s)).length;
  const pool = [];
  const want = Math.max(2 * l.cost, << pool >>);
  let w = 0;
  for (let i = 0; i < l.limit && pool.length < want; i += 1) {
    while (w < written.length && written[w].i < i) w += 1;
    const s = w < written.length && written[w].i === i ? written[w] : { i, g: 0, t: 0 };
    if (s.t <= now && !isLost(s)) pool.push(s);
  }
  let chosen = shuffled(pool).slice(0, l.cost);
  if (chosen.length < l.cost) chosen = shuffled(written.filter((s) => !isLost(s))).sort((a, b) => a.t - b.t).slice(0, l.cost);
  const at = chosen.length < l.cost ? Infinity : Math.max(now, ...chosen.map((s) => s.t));
  const claims = chosen.map((s) => ({ key: << slot.claim('l.key', 's.i', 's.g') >>, expire: true, ttl: << claim_ttl_s >> }));
  return { index, at, busy, limbo, chosen, claims };
};
const waited = (ctx, now) => ((now - ctx.started_ms) / 1000).toFixed(1);
const denial = (ctx, p, now) => {
  const l = ctx.limits[p.index];
  const count = p.busy + l.cost;
  return {
    allowed: false,
    scope: l.scope,
    count,
    limit: l.limit,
    window_seconds: l.window_seconds,
    retry_after_ms: Number.isFinite(p.at) ? Math.max(1, Math.ceil(p.at - now)) : l.window_seconds * 1000,
    message: `Rate limit exceeded for scope '${l.scope}': ${count} calls in this window, limit ${l.limit}`,
  };
};
// Look again after a short sleep, longer each time (at random, so that racing callers part).
const again = (ctx, look, now, extra) => {
  const pause = Math.min(<< retry_max_ms >>, << retry_ms >> * 2 ** look.tries) * (0.5 + Math.random());
  return { state: 'retry', wait: look.wait || { started_ms: now }, lost: look.lost, tries: look.tries + 1, sleep_seconds: Math.max(0.01, pause / 1000), ...extra };
};
const tooLong = (ctx, l, now, next, maxWait) => `Rate limit for scope '${l.scope}' (limit ${l.limit} per ${l.window_seconds} s): waited ${waited(ctx, now)} s, and a place would come only after ${((next - ctx.started_ms) / 1000).toFixed(1)} s, past the max wait of ${maxWait} s`;
// What a look decides: claim the chosen slots (now, or booked ahead for a call that waits), look
// again (a slot in limbo), refuse (the on_denied of the first limit that has no room), or fail
// (a waiter whose place would come after its max wait).
const decide = (ctx, plans, look, now) => {
  const short = plans.filter((p) => p.at > now);
  const carry = { wait: look.wait, lost: look.lost, tries: look.tries, checked_ms: now };
  const refusing = short.filter((p) => ctx.limits[p.index].on_denied !== 'wait');
  // Short for want of slots whose claims this call lost (their winners have not written yet),
  // or of any it may claim at all: look again rather than answer from this read.
  const unsure = short.filter((p) => p.limbo > 0 || !Number.isFinite(p.at));
  const patient = now - ctx.started_ms < 3 * << limbo_ms >>;
  if (unsure.length > 0 && (refusing.length === 0 || patient)) {
    const l = ctx.limits[unsure[0].index];
    if (refusing.length === 0 && now - ctx.started_ms > l.max_wait_seconds * 1000) {
      return { state: 'fail', ...denial(ctx, unsure[0], now), message: tooLong(ctx, l, now, now, l.max_wait_seconds), ...carry };
    }
    return again(ctx, look, now, {});
  }
  if (refusing.length > 0) {
    const p = refusing[0];
    return { state: 'deny', mode: ctx.limits[p.index].on_denied, ...denial(ctx, p, now), ...carry };
  }
  const at = Math.max(now, ...plans.map((p) => p.at));
  if (short.length > 0) {
    const binding = short.reduce((a, b) => (b.at > a.at ? b : a));
    const l = ctx.limits[binding.index];
    const maxWait = Math.min(...short.map((p) => ctx.limits[p.index].max_wait_seconds));
    if (at - ctx.started_ms > maxWait * 1000) {
      return { state: 'fail', ...denial(ctx, binding, now), message: tooLong(ctx, l, now, at, maxWait), ...carry };
    }
    // A fixed window has no slots to book: look again when the window it waits for begins.
    if (short.some((p) => ctx.limits[p.index].algorithm === 'fixed')) {
      return { state: 'retry', ...carry, wait: look.wait || { started_ms: now }, tries: look.tries + 1, sleep_seconds: Math.max(0.01, (at - now + Math.random() * 200) / 1000) };
    }
  }
  return { state: 'take', claims: plans.flatMap((p) => p.claims), plans: plans.map((p) => ({ index: p.index, busy: p.busy, chosen: p.chosen })), at, ...carry };
};
