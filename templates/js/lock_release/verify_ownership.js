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

return [{
  json: {
    ...ctx,
    outcome: meta.lock_id === ctx.lock_id ? 'match' : 'mismatch',
    holder_lock_id: meta.lock_id ?? 'unknown',
    holder_workflow_id: meta.workflow_id ?? 'unknown',
    holder_workflow_name: meta.workflow_name ?? 'unknown',
    holder_execution_id: meta.execution_id ?? 'unknown',
    holder_locked_at: meta.locked_at ?? 'unknown',
  },
}];
