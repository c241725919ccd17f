// A look: would this call fit every limit, by what Redis holds now? A call that does not is
// refused or fails without claiming anything, so it spends no limit's budget; a waiter books
// the earliest slots instead.
const ctx = << context >>;
const look = << look >>;
<% include 'engine/rate/plan.js' +%>
const now = Date.now();
const values = << read >>.map((item) => item.json.value);
const plans = ctx.limits.map((l, index) => planOf(l, index, values[index], look.lost, now));
return decide(ctx, plans, look, now);
