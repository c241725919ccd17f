// What the caller of lock_release gets back. Only 'held' reached the release; 'released'
// and 'absent' change nothing and say so (idempotent).
const check = __CHECK__;
const answer = { scope: check.scope, lock_id: check.lock_id };
if (__OLD_RELEASED__) return { released: true, idempotent: false, format: 1, ...answer };
if (!__RELEASED__) return { released: false, idempotent: true, reason: check.outcome, ...answer };
const verdict = __VERDICT__;
if (verdict.released) return { released: true, idempotent: false, ...answer };
return { released: false, idempotent: false, reason: verdict.reason, ...answer, expires_at: check.held.expires_at };
