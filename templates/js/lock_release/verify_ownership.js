// @n8n-evol-I:primitive — lock_release: absent, ours, or someone else's?
// Absent meta deletes nothing: the counter may already belong to a new holder whose meta
// is not written yet.
const ctx = $('Build Release Context').first().json;
const raw = $input.first().json.lock_meta;

if (raw === null || raw === undefined || raw === '') {
  return [{ json: { ...ctx, outcome: 'absent' } }];
}
let meta = raw;
if (typeof raw === 'string') {
  try { meta = JSON.parse(raw); } catch (error) { meta = null; }
}
if (!meta || typeof meta !== 'object') {
  meta = { lock_id: String(raw), workflow_name: 'unknown (unreadable meta)' };
}

// A release this close to (or past) the lock's expiry must not delete: the TTL may run out
// between this GET and the DEL, and the DEL would then remove a successor's lock (W4).
const RELEASE_MARGIN_MS = << release_margin_seconds * 1000 >>;
const expiresAt = Date.parse(meta.expires_at);
let outcome = meta.lock_id === ctx.lock_id ? 'match' : 'mismatch';
if (outcome === 'match' && Number.isFinite(expiresAt) && Date.now() >= expiresAt - RELEASE_MARGIN_MS) {
  outcome = 'expired';
}

return [{
  json: {
    ...ctx,
    outcome,
    expires_at: meta.expires_at ?? null,
    holder_lock_id: meta.lock_id ?? 'unknown',
    holder_workflow_id: meta.workflow_id ?? 'unknown',
    holder_workflow_name: meta.workflow_name ?? 'unknown',
    holder_execution_id: meta.execution_id ?? 'unknown',
    holder_locked_at: meta.locked_at ?? 'unknown',
  },
}];
