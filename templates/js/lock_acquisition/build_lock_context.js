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
const key = `n8n-lock-${scope}`;

return [{
  json: {
    scope,
    key,
    meta_key: `${key}:meta`,
    fence_key: `${key}:fence`,
    ttl_seconds: ttlSeconds,
    max_wait_seconds: maxWaitSeconds,
    wait_till_lock_released: wait,
    execution_id: executionId,
    lock_id: String(input.lock_id || `${executionId}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`),
    workflow_id: String(input.workflow_id || 'unknown'),
    workflow_name: String(input.workflow_name || 'unknown'),
    deadline_ms: Date.now() + maxWaitSeconds * 1000,
  },
}];
