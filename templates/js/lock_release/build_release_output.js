// @n8n-evol-I:primitive — lock_release: what the caller gets back.
const verdict = $('Verify Ownership').first().json;

return [{
  json: {
    released: true,
    idempotent: verdict.outcome === 'absent',
    scope: verdict.scope,
    lock_id: verdict.lock_id,
  },
}];
