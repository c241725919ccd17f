// @n8n-evol-I:primitive — error_handler_lock_cleanup: one item per registered scope.
// `n8nlock push` writes the env's lockScopes here; a missing or empty list is a no-op.
const LOCK_SCOPES = {{@:env:lockScopes}};
const scopes = Array.isArray(LOCK_SCOPES)
  ? [...new Set(LOCK_SCOPES.filter((scope) => typeof scope === 'string' && scope.trim()))]
  : [];
const error = $('Error Trigger').first().json;
const failed = {
  failed_execution_id: error.execution?.id ? String(error.execution.id) : null,
  failed_workflow_id: error.workflow?.id ?? null,
  failed_workflow_name: error.workflow?.name ?? null,
  failed_error_message: error.execution?.error?.message ?? error.trigger?.error?.message ?? null,
};

function stop(reason) {
  console.log(`n8nlock cleanup: ${reason}`);
  return [{ json: { ...failed, cleanup_terminal: true, reason } }];
}

if (scopes.length === 0) return stop('no lockScopes registered in the env file: nothing to clean');
// A trigger failure has no execution id, so no lock can be proven to belong to it.
if (!failed.failed_execution_id) return stop('the error has no execution id: nothing to clean');

return scopes.map((scope) => ({
  json: { ...failed, scope, key: `n8n-lock-${scope}`, meta_key: `n8n-lock-${scope}:meta`, cleanup_terminal: false },
}));
