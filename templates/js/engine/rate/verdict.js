// The decision: this call's place in its bucket (the INCR result orders the callers) plus what
// the other buckets of the window hold, for every limit.
const ctx = __CONTEXT__;
const wait = __LOOK__.wait;
__PLAN__
const own = ownCounts(ctx, __COUNTED__);
const counts = own.map((o) => [[o.bucket, o.count]]);
const reread = __REREAD__;
const values = __REREAD_VALUES__.map((item) => Number(item.json.value) || 0);
if (reread) reread.read.forEach((entry, i) => entry.limit >= 0 && counts[entry.limit].push([entry.bucket, values[i]]));
const totals = counts.map((c) => c.reduce((sum, pair) => sum + pair[1], 0));
const now = Date.now();
const passed = {
  state: 'allow',
  allowed: true,
  limits: ctx.limits.map((l, i) => ({ scope: l.scope, count: totals[i], limit: l.limit, algorithm: l.algorithm })),
  waited_ms: wait ? now - wait.started_ms : 0,
};
return judge(ctx, counts, totals, now, wait, __LOOK_COST__, passed, false);
