// @n8n-evol-I:primitive — lock_renew: extend the lock only while the caller still owns it.
const ctx = $('Build Renew Context').first().json;
const raw = $input.first().json.lock_meta;
const refuse = (reason, extra = {}) => [{ json: { renewed: false, reason, scope: ctx.scope, lock_id: ctx.lock_id, ...extra } }];

if (raw === null || raw === undefined || raw === '') return refuse('released');
let meta = null;
try { meta = typeof raw === 'string' ? JSON.parse(raw) : raw; } catch (error) { meta = null; }
if (!meta || typeof meta !== 'object') return refuse('unreadable');
if (meta.lock_id !== ctx.lock_id) {
  return refuse('not-owner', { holder_lock_id: meta.lock_id ?? 'unknown', holder_execution_id: meta.execution_id ?? 'unknown' });
}
// As with release: this close to expiry the key may already belong to a successor by the
// time the SET lands, and the SET would take it over.
const RELEASE_MARGIN_MS = << release_margin_seconds * 1000 >>;
const now = Date.now();
if (now >= Date.parse(meta.expires_at) - RELEASE_MARGIN_MS) return refuse('expired', { expires_at: meta.expires_at });

const ttl = ctx.ttl_seconds ?? (Number(meta.ttl_seconds) || << default_ttl_seconds >>);
const renewed = { ...meta, ttl_seconds: ttl, expires_at: new Date(now + ttl * 1000).toISOString(), renewed_at: new Date(now).toISOString() };
const indexKey = `n8nlock:exec:${meta.workflow_id ?? 'unknown'}:${meta.execution_id}`;
const base = { renewed: true, scope: ctx.scope, lock_id: ctx.lock_id, expires_at: renewed.expires_at, ttl_seconds: ttl };
// One SET node writes all three: the holder counter's TTL, the record, and the index entry.
return [
  { json: { ...base, set_key: ctx.key, set_type: 'string', set_value: '1', set_ttl: ttl } },
  { json: { ...base, set_key: ctx.meta_key, set_type: 'string', set_value: JSON.stringify(renewed), set_ttl: ttl } },
  { json: { ...base, set_key: indexKey, set_type: 'hash', set_value: JSON.stringify({ [ctx.scope]: ctx.lock_id }), set_ttl: ttl + 3600 } },
];
