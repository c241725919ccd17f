// What this look reads, in one GET node: each sliding limit's slots (a hash), each fixed limit's
// count in the window of now. A call that sleeps or looks again comes back here with what it
// carries: when it began waiting, the slot claims it lost, and how many times it looked.
const ctx = << context >>;
const now = Date.now();
const read = ctx.limits.map((l) => (l.algorithm === 'sliding'
  ? { key: l.key, type: 'hash' }
  : { key: l.prefix + Math.floor(now / l.bucket_ms), type: 'string' }));
return { look_ms: now, read, wait: $json.wait || null, lost: $json.lost || ctx.limits.map(() => ({})), tries: $json.tries || 0 };
