// @n8n-evol-I:primitive — lock_release: what the caller gets back.
const verdict = $('Verify Ownership').first().json;

if (verdict.outcome === 'expired') {
  // Left to its TTL: whatever holds the key by now may be a successor.
  return [{
    json: {
      released: false,
      idempotent: false,
      reason: 'expired',
      scope: verdict.scope,
      lock_id: verdict.lock_id,
      expires_at: verdict.expires_at,
    },
  }];
}

return [{
  json: {
    released: true,
    idempotent: verdict.outcome === 'absent',
    scope: verdict.scope,
    lock_id: verdict.lock_id,
  },
}];
