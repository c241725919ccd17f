// @n8n-evol-I:primitive — error_handler_lock_cleanup: keep the scopes the failed execution holds.
// GET replaces each item, so pair its answers with the scope list by position.
const requests = $('Build Scope List').all();
const owned = [];
$input.all().forEach((answer, index) => {
  const request = requests[index].json;
  let meta = answer.json.lock_meta;
  if (typeof meta === 'string') {
    try { meta = JSON.parse(meta); } catch (error) { meta = null; }
  }
  // Ours only if the record names the failed workflow and execution (execution ids repeat
  // across n8n instances that share a Redis), and the lock_id the index listed: a scope the
  // execution released and another execution took since is left alone.
  const isOwned = meta && typeof meta === 'object'
    && String(meta.execution_id) === request.failed_execution_id
    && (!request.failed_workflow_id || String(meta.workflow_id) === String(request.failed_workflow_id))
    && (request.expected_lock_id === null || String(meta.lock_id) === request.expected_lock_id);
  if (isOwned) {
    owned.push({ json: { ...request, owned: true, lock_id: meta.lock_id, locked_at: meta.locked_at } });
  }
});
if (owned.length === 0) {
  const first = requests[0].json;
  return [{ json: { failed_execution_id: first.failed_execution_id, owned: false, reason: 'no lock is still held by the failed execution' } }];
}
return owned;
