// Before counting: would this call fit every limit, by what the window holds now? A call that
// does not is refused (or waits) without counting, so it spends no limit's budget.
const ctx = __CONTEXT__;
const look = __LOOK__;
const values = __READ__.map((item) => Number(item.json.value) || 0);
const counts = ctx.limits.map(() => []);
look.read.forEach((entry, i) => counts[entry.limit].push([entry.bucket, values[i]]));
const totals = counts.map((c, i) => c.reduce((sum, pair) => sum + pair[1], 0) + ctx.limits[i].cost);
__PLAN__
return judge(ctx, counts, totals, look.look_ms, look.wait, 1, { state: 'take', incr: look.incr, wait: look.wait }, true);
