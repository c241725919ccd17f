// The keys of this look: every counted bucket of every limit (read in one GET node), and the
// current bucket once per unit of cost (counted in one INCR node). A waiter comes back here
// after its sleep, with its wait so far in $json.wait.
const ctx = __CONTEXT__;
const now = Date.now();
const read = [];
const incr = [];
ctx.limits.forEach((l, index) => {
  const bucket = Math.floor(now / l.bucket_ms);
  for (let j = bucket - l.past; j <= bucket + l.future; j += 1) read.push({ key: l.prefix + j, limit: index, bucket: j });
  for (let n = 0; n < l.cost; n += 1) incr.push({ key: l.prefix + bucket, expire: true, ttl: l.ttl });
});
return { look_ms: now, read, incr, wait: $json.wait || null };
