// @n8n-evol-I:primitive — lock_acquisition: check the request and name the keys.
const input = $input.first().json;

function required(name, value) {
  const text = value === null || value === undefined ? '' : String(value).trim();
  if (!text) throw new Error(`lock_acquisition: ${name} is required (an empty scope would lock nothing)`);
  return text;
}

function atLeastOne(name, value, fallback) {
  if (value === null || value === undefined || value === '') return fallback;
  const number = Number(value);
  if (!Number.isFinite(number) || number < 1) {
    throw new Error(`lock_acquisition: ${name} must be a number >= 1, got ${JSON.stringify(value)}`);
  }
  return Math.ceil(number); // EXPIRE takes whole seconds
}

const scope = required('scope', input.scope);
const ttlSeconds = atLeastOne('ttl_seconds', input.ttl_seconds, << default_ttl_seconds >>);
const maxWaitSeconds = atLeastOne('max_wait_seconds', input.max_wait_seconds, << default_max_wait_seconds >>);
// The caller passes its own $execution.id: that is the execution the Error Trigger reports.
const executionId = String(input.execution_id || $execution.id);
const wait = !(input.wait_till_lock_released === false || input.wait_till_lock_released === 'false');
// Execution ids restart at 1 on every n8n instance; with the workflow id they name one
// execution even when several instances share this Redis.
const workflowId = String(input.workflow_id || 'unknown');
const key = `n8n-lock-${scope}`;
const now = Date.now();
// The fence outlives every lock on its scope (each acquisition refreshes its TTL), so it never
// goes backwards while a lock can exist; an idle scope's fence expires after a week.
const FENCE_TTL_SECONDS = Math.max(7 * 86400, 2 * ttlSeconds);
// Where the cleanup handler finds what a failed execution holds: scope -> lock_id. It lives
// an hour past the lock's TTL; the handler trusts only entries whose :meta still matches.
const INDEX_TTL_SECONDS = ttlSeconds + 3600;
const STATS_TTL_SECONDS = << stats_ttl_seconds >>;
const hour = new Date(now).toISOString().slice(0, 13).replace(/[-T]/g, '');

return [{
  json: {
    scope,
    key,
    meta_key: `${key}:meta`,
    fence_key: `${key}:fence`,
    fence_ttl_seconds: FENCE_TTL_SECONDS,
    index_key: `n8nlock:exec:${workflowId}:${executionId}`,
    index_ttl_seconds: INDEX_TTL_SECONDS,
    stats_prefix: `n8nlock:stats:${hour}:`,
    // Waiters count themselves in when they first wait and out when they leave, so that
    // `n8nlock locks` can show how many wait: waiting = arrived - left.
    arrived_key: `n8nlock:arrived:${scope}`,
    left_key: `n8nlock:left:${scope}`,
    queue_ttl_seconds: maxWaitSeconds + ttlSeconds,
    stats_ttl_seconds: STATS_TTL_SECONDS,
    started_ms: now,
    ttl_seconds: ttlSeconds,
    max_wait_seconds: maxWaitSeconds,
    wait_till_lock_released: wait,
    execution_id: executionId,
    lock_id: String(input.lock_id || `${executionId}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`),
    workflow_id: workflowId,
    workflow_name: String(input.workflow_name || 'unknown'),
    deadline_ms: now + maxWaitSeconds * 1000,
  },
}];
