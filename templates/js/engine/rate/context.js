// Check the rate limits' inputs and fix what each one counts. Runs as a Set node expression (no
// task runner). n8n swallows an error thrown inside an expression, so a bad input is answered as
// { problem } for Rate Input Valid? to stop the execution with it, before anything is counted.
try {
__INPUT__
const text = (value) => (value === null || value === undefined ? '' : String(value).trim());
const whole = (name, value, scope, labels) => {
  name = (labels && labels[name]) || name;
  const number = typeof value === 'string' && value.trim() === '' ? NaN : Number(value);
  if (value === null || value === undefined || typeof value === 'boolean' || !Number.isFinite(number) || number < 1) {
    throw new Error(`n8nlock rate limit '${scope}': ${name} must be a number >= 1, got ${JSON.stringify(value)}; nothing was counted`);
  }
  return Math.ceil(number);
};
const limits = input.map((raw, index) => {
  const scope = text(raw.scope);
  if (!scope) {
    throw new Error(`n8nlock rate limit ${index + 1}: the scope is empty (an empty scope would count every caller together); check the scope expression, nothing was counted`);
  }
  const limit = whole('limit', raw.limit, scope, raw.labels);
  const windowSeconds = whole('window_seconds', raw.window_seconds, scope, raw.labels);
  const cost = whole('cost', raw.cost, scope, raw.labels);
  if (cost > limit) {
    throw new Error(`n8nlock rate limit '${scope}': this call costs ${cost}, more than the limit of ${limit} per ${windowSeconds} s, so it could never pass; nothing was counted`);
  }
  if (raw.algorithm !== 'sliding' && raw.algorithm !== 'fixed') {
    throw new Error(`n8nlock rate limit '${scope}': algorithm must be 'sliding' or 'fixed', got ${JSON.stringify(raw.algorithm)}; nothing was counted`);
  }
  const sliding = raw.algorithm === 'sliding';
  // A bucket of at least __MIN_BUCKET_MS__ ms: a burst of calls then mostly counts in one bucket.
  const bucketMs = sliding ? Math.max((windowSeconds * 1000) / __SUB_BUCKETS__, Math.min(__MIN_BUCKET_MS__, windowSeconds * 1000)) : windowSeconds * 1000;
  const buckets = Math.round((windowSeconds * 1000) / bucketMs);
  // Buckets counted before one's own: the window, and at least __MARGIN_MS__ ms more, since a
  // body starts some time after its bucket was fixed and that time varies under load.
  const past = sliding ? buckets + Math.max(1, Math.ceil(__MARGIN_MS__ / bucketMs)) : 0;
  return {
    scope, limit, cost,
    window_seconds: windowSeconds,
    algorithm: sliding ? 'sliding' : 'fixed',
    on_denied: raw.on_denied,
    max_wait_seconds: whole('max_wait_seconds', raw.max_wait_seconds, scope, raw.labels),
    // The fixed window keeps the keys of rate_limit_check, so both count in one budget.
    prefix: sliding ? `n8n-ratelimit-${scope}:sw${windowSeconds}:` : `n8n-ratelimit-${scope}-`,
    bucket_ms: bucketMs,
    past,
    future: sliding ? __FUTURE__ : 0,
    ttl: sliding ? Math.ceil((bucketMs * (past + __FUTURE__ + 2)) / 1000) : windowSeconds,
  };
});
return { problem: null, started_ms: Date.now(), limits };
} catch (error) {
  return { problem: String(error && error.message ? error.message : error) };
}
