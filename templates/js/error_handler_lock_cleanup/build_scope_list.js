// @n8n-evol-I:primitive — error_handler_lock_cleanup: one item per scope the failed execution may hold.
// The execution's index names every scope it locked, dynamic ones included. `n8nlock push`
// writes the env's lockScopes here too, for locks taken before the index existed.
const LOCK_SCOPES = {{@:env:lockScopes}};
const failed = $('Prepare Cleanup').first().json;
const index = $input.first().json.lock_index;
const listed = index && typeof index === 'object' ? index : {};
const registered = Array.isArray(LOCK_SCOPES)
  ? LOCK_SCOPES.filter((scope) => typeof scope === 'string' && scope.trim())
  : [];
const hour = new Date().toISOString().slice(0, 13).replace(/[-T]/g, '');

const scopes = new Map(Object.entries(listed).map(([scope, lockId]) => [scope, String(lockId)]));
for (const scope of registered) if (!scopes.has(scope)) scopes.set(scope, null);
if (scopes.size === 0) {
  const reason = 'the failed execution held no lock (none indexed, no lockScopes registered)';
  console.log(`n8nlock cleanup: ${reason}`);
  return [{ json: { ...failed, cleanup_terminal: true, reason } }];
}

return [...scopes].map(([scope, expectedLockId]) => ({
  json: {
    ...failed,
    scope,
    key: `n8n-lock-${scope}`,
    meta_key: `n8n-lock-${scope}:meta`,
    expected_lock_id: expectedLockId,
    healed_key: `n8nlock:stats:${hour}:healed:${scope}`,
    cleanup_terminal: false,
  },
}));
