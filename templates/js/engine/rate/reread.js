// After counting: the other counted buckets of each sliding limit, read again. Of two calls in
// different buckets, the one whose INCR came last reads the other's bucket after that INCR
// (each INCRs before it reads), so it counts the other. A call whose INCR was done before
// its own bucket ended needs no later bucket: a call there chose its bucket after this INCR,
// so it INCRs after it too and counts this call.
const ctx = __CONTEXT__;
__PLAN__
const own = ownCounts(ctx, __COUNTED__);
const counted = Date.now();
const read = [];
ctx.limits.forEach((l, index) => {
  const b = own[index].bucket;
  const last = counted < (b + 1) * l.bucket_ms ? b - 1 : b + l.future;
  for (let j = b - l.past; j <= last; j += 1) if (j !== b) read.push({ key: l.prefix + j, limit: index, bucket: j });
});
// A Split Out of nothing would end the execution: a fixed limit (whose algorithm is only known
// at run time) reads its own bucket again, which the verdict leaves out.
if (read.length === 0) read.push({ key: ctx.limits[0].prefix + own[0].bucket, limit: -1, bucket: own[0].bucket });
return { read, counted_ms: counted };
