// The keys of this look: every counted bucket of every limit (read in one GET node), and one
// INCR item per unit of cost. The INCR node picks the bucket when it runs (key = prefix + its
// clock's bucket), so a call counts in the bucket of the moment it is counted, not of the
// moment it looked: under load that can be a bucket later. A waiter comes back here after its
// sleep, with its wait so far in $json.wait.
const ctx = __CONTEXT__;
const now = Date.now();
const read = [];
const incr = [];
ctx.limits.forEach((l, index) => {
  const bucket = Math.floor(now / l.bucket_ms);
  for (let j = bucket - l.past; j <= bucket + l.future; j += 1) read.push({ key: l.prefix + j, limit: index, bucket: j });
  for (let n = 0; n < l.cost; n += 1) incr.push({ prefix: l.prefix, bucket_ms: l.bucket_ms, expire: true, ttl: l.ttl });
});
return { look_ms: now, read, incr, wait: $json.wait || null };
