// Check the rate limits' inputs and fix what each one counts. Runs as a Set node expression (no
// task runner). n8n swallows an error thrown inside an expression, so a bad input is answered as
// { problem } for Rate Input Valid? to stop the execution with it, before anything is counted.
try {
<< input >>
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
  const maxWait = whole('max_wait_seconds', raw.max_wait_seconds, scope, raw.labels);
  const common = { scope, limit, cost, window_seconds: windowSeconds, on_denied: raw.on_denied, max_wait_seconds: maxWait };
  if (!sliding) {
    // The fixed window keeps the keys of rate_limit_check, so both count in one budget.
    return { ...common, algorithm: 'fixed', prefix: `<< keys.rate >>${scope}<< keys.window >>`, bucket_ms: windowSeconds * 1000, ttl: windowSeconds };
  }
  // A sliding limit is `limit` slots in one hash, each "generation:time it is free again". A
  // slot used at s is free again at s + W + << margin_ms >> ms: the margin covers the hop from the
  // last check of the start (Rate Limit Outcome, Rate Limit Woken) to the body.
  return {
    ...common,
    algorithm: 'sliding',
    key: `<< keys.rate >>${scope}<< keys.slots >>${windowSeconds}`,
    gap_ms: windowSeconds * 1000 + << margin_ms >>,
    // The hash outlives every time it holds (a waiter books up to its max wait ahead) and every
    // claim on it, so a hash that expired held nothing that still counts.
    ttl: windowSeconds + maxWait + << claim_ttl_s >> + Math.ceil(<< margin_ms >> / 1000) + 1,
  };
});
return { problem: null, started_ms: Date.now(), limits };
} catch (error) {
  return { problem: String(error && error.message ? error.message : error) };
}
