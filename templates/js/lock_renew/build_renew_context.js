// @n8n-evol-I:primitive — lock_renew: check the request and name the keys.
const input = $input.first().json;
const text = (value) => (value === null || value === undefined ? '' : String(value).trim());
const scope = text(input.scope);
if (!scope) throw new Error('lock_renew: scope is required');
const lockId = text(input.lock_id);
if (!lockId) throw new Error('lock_renew: lock_id is required (the lock_id lock_acquisition returned)');
let ttlSeconds = null;
if (text(input.ttl_seconds)) {
  ttlSeconds = Number(input.ttl_seconds);
  if (!Number.isFinite(ttlSeconds) || ttlSeconds < 1) {
    throw new Error(`lock_renew: ttl_seconds must be a number >= 1, got ${JSON.stringify(input.ttl_seconds)}`);
  }
  ttlSeconds = Math.ceil(ttlSeconds);
}
const key = `n8n-lock-${scope}`;

return [{ json: { scope, key, meta_key: `${key}:meta`, lock_id: lockId, ttl_seconds: ttlSeconds } }];
