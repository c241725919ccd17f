// @n8n-evol-I:primitive — error_handler_lock_cleanup: what failed, and where its locks are listed.
const error = $('Error Trigger').first().json;
const failed = {
  failed_execution_id: error.execution?.id ? String(error.execution.id) : null,
  failed_workflow_id: error.workflow?.id ?? null,
  failed_workflow_name: error.workflow?.name ?? null,
  failed_error_message: error.execution?.error?.message ?? error.trigger?.error?.message ?? null,
};

// A trigger failure has no execution id, so no lock can be proven to belong to it.
if (!failed.failed_execution_id) {
  const reason = 'the error has no execution id: nothing to clean';
  console.log(`n8nlock cleanup: ${reason}`);
  return [{ json: { ...failed, cleanup_terminal: true, reason } }];
}
// The lock engine lists every lock an execution takes in this hash (scope -> JSON {lock_id,
// ticket, slots}), keyed by workflow and execution: execution ids alone repeat across n8n
// instances.
const indexKey = `<< keys.index >>${failed.failed_workflow_id ?? 'unknown'}:${failed.failed_execution_id}`;
return [{ json: { ...failed, index_key: indexKey, cleanup_terminal: false } }];
