// Shared by Rate Check and Rate Verdict: what the INCR node counted, and what a denial becomes.
const ownCounts = (ctx, counted) => {
  let offset = 0;
  return ctx.limits.map((l) => {
    const mine = counted.slice(offset, offset + l.cost);
    offset += l.cost;
    // Units that fell into an earlier bucket (a boundary between two INCRs) are read there.
    const key = String(mine[mine.length - 1][0]);
    const last = mine.filter((m) => String(m[0]) === key);
    return { bucket: Number(key.slice(l.prefix.length)), count: Math.max(...last.map((m) => Number(m[1]))) };
  });
};
// When `excess` units would fit if nothing new arrived: a bucket is counted until bucket
// j + past + 1 begins, and beyond what the window holds now every span admits `limit` more.
const fitsAt = (l, counts, excess, now) => {
  const span = (l.past + 1) * l.bucket_ms;
  const rounds = Math.floor((excess - 1) / l.limit);
  const rest = excess - rounds * l.limit;
  let freed = 0;
  let at = now + span;
  for (const [bucket, n] of [...counts].sort((a, b) => a[0] - b[0])) {
    freed += n;
    if (freed >= rest) {
      at = (bucket + l.past + 1) * l.bucket_ms;
      break;
    }
  }
  return at + rounds * span;
};
// When `need` units of what the window held when it was read will have left it (a refused
// call's retry_after: it waits for no one, so the units counted are all that stand before it).
const leaves = (l, counts, need) => {
  let freed = 0;
  for (const [bucket, n] of [...counts].sort((a, b) => a[0] - b[0])) {
    freed += n;
    if (freed >= need) return (bucket + l.past + 1) * l.bucket_ms;
  }
  return Date.now();
};
// Units still counted at `at`, of what the window held when it was read.
const freeAt = (l, counts, at) => l.limit - counts.filter((c) => (c[0] + l.past + 1) * l.bucket_ms > at).reduce((sum, c) => sum + c[1], 0);
const tooLong = (ctx, l, now, next, maxWait) => {
  const waited = ((now - ctx.started_ms) / 1000).toFixed(1);
  const needed = ((next - ctx.started_ms) / 1000).toFixed(1);
  return `Rate limit for scope '${l.scope}' (limit ${l.limit} per ${l.window_seconds} s): waited ${waited} s, and a place would come only after ${needed} s, past the max wait of ${maxWait} s`;
};
// The next look of a waiter: when it fits, but only once the Redis node executions its wait
// has added so far (its place in line, looks that found no room) are at most one per second
// waited (the look that ends the wait is not paid ahead), and never past its max wait.
const nextLook = (ctx, fits, wait, now, maxWait) => {
  const next = Math.max(fits + __WAKE_LATE_MS__, wait.started_ms + wait.spent * 1000, now + __MIN_SLEEP_MS__);
  return { next, late: next - ctx.started_ms > maxWait * 1000 };
};
// A call refused before counting (`queue`) also takes a place in line among the calls waiting
// for the same moment (one INCR), so that they go in the order they came.
const judge = (ctx, counts, totals, now, wait, lookCost, passed, queue) => {
  const over = ctx.limits.map((l, i) => ({ l, i, total: totals[i] })).filter((o) => o.total > o.l.limit);
  if (over.length === 0) return passed;
  const refusing = over.find((o) => o.l.on_denied !== 'wait');
  const first = refusing || over[0];
  const denial = {
    allowed: false,
    scope: first.l.scope,
    count: first.total,
    limit: first.l.limit,
    window_seconds: first.l.window_seconds,
    retry_after_ms: 0,
    queue: [],
    message: `Rate limit exceeded for scope '${first.l.scope}': ${first.total} calls in this window, limit ${first.l.limit}`,
  };
  if (refusing) {
    const retry = leaves(refusing.l, counts[refusing.i], refusing.total - refusing.l.limit);
    // From the clock of now: `now` may be when the call looked, before others counted.
    return { state: 'deny', mode: refusing.l.on_denied, ...denial, retry_after_ms: Math.max(0, Math.ceil(retry - Date.now())) };
  }
  const waitNow = { started_ms: wait ? wait.started_ms : now, spent: wait ? wait.spent + lookCost : 0 };
  const fits = over.map((o) => ({ o, at: fitsAt(o.l, counts[o.i], o.total - o.l.limit, now) }));
  const binding = fits.reduce((a, b) => (b.at > a.at ? b : a));
  const maxWait = Math.min(...over.map((o) => o.l.max_wait_seconds));
  const look = nextLook(ctx, binding.at, waitNow, now, maxWait);
  if (look.late) return { state: 'fail', ...denial, message: tooLong(ctx, binding.o.l, now, look.next, maxWait) };
  const l = binding.o.l;
  const place = queue
    ? {
        queue: [{ key: `${l.prefix}q${Math.floor(binding.at / l.bucket_ms)}`, expire: true, ttl: Math.ceil((binding.at - now) / 1000) + l.window_seconds }],
        place: { limit: binding.o.i, fits: binding.at, free: freeAt(l, counts[binding.o.i], binding.at), max_wait_seconds: maxWait },
      }
    : {};
  return { state: 'wait', ...denial, ...place, sleep_seconds: Math.max(0.01, (look.next - now) / 1000), wait: waitNow };
};
