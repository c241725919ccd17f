// @n8n-evol-I:primitive — error_handler_lock_cleanup: keep the scopes the failed execution holds.
// GET replaces each item, so pair its answers with the scope list by position.
const requests = $('Prepare Scope List').all();
const owned = [];
$input.all().forEach((answer, index) => {
  const request = requests[index].json;
  let meta = answer.json.lock_meta;
  if (typeof meta === 'string') {
    try { meta = JSON.parse(meta); } catch (error) { meta = null; }
  }
  if (meta && typeof meta === 'object' && String(meta.execution_id) === request.failed_execution_id) {
    owned.push({ json: { ...request, owned: true, lock_id: meta.lock_id, locked_at: meta.locked_at } });
  }
});
if (owned.length === 0) {
  const first = requests[0].json;
  return [{ json: { failed_execution_id: first.failed_execution_id, owned: false, reason: 'no registered lock is owned by the failed execution' } }];
}
return owned;
