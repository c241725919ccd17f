// @n8n-evol-I:primitive — lock_acquisition: one decision after every GET or INCR.
// GET first, INCR only when the counter is absent: a waiter or a late arrival never
// touches the holder's key, so contention cannot extend the holder's TTL.
const ctx = $('Build Lock Context').first().json;
const result = $input.first().json;

let state = null;
let count;
if (Object.prototype.hasOwnProperty.call(result, 'lock_value')) {
  const value = result.lock_value;
  count = value === null || value === undefined || value === '' ? 0 : Number(value);
  if (count === 0) state = 'free';
} else {
  // INCR answers { "<key>": n }: only the caller that took the counter from 0 to 1 holds it.
  count = Number(Object.values(result)[0]);
  if (count === 1) state = 'won';
}
if (state === null) {
  if (!ctx.wait_till_lock_released) state = 'busy';
  else if (Date.now() >= ctx.deadline_ms) state = 'timeout';
  else state = 'wait';
}

const verdict = { state, count, scope: ctx.scope, key: ctx.key };
if (state !== 'won') return [{ json: verdict }];

// The winner's INCRs, run by one Redis node over one connection: the fence, then the
// statistics (`n8nlock stats` reads them). The wait lands in one histogram bucket.
const waitedSeconds = (Date.now() - ctx.started_ms) / 1000;
const bucket = << wait_buckets|tojson >>.find((le) => waitedSeconds <= le) ?? 'inf';
const stat = (name) => ({ incr_key: `${ctx.stats_prefix}${name}:${ctx.scope}`, incr_ttl: ctx.stats_ttl_seconds });
return [
  { incr_key: ctx.fence_key, incr_ttl: ctx.fence_ttl_seconds },
  stat('acquired'),
  ...($('Wait Before Poll').isExecuted
    ? [stat('waited'), { incr_key: ctx.left_key, incr_ttl: ctx.queue_ttl_seconds }]
    : []),
  stat(`wait_le_${bucket}`),
].map((incr) => ({ json: { ...verdict, ...incr } }));
