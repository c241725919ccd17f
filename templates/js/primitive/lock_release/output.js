// What the caller of lock_release gets back. Only 'held' reached the release; 'released'
// and 'absent' change nothing and say so (idempotent).
const check = << check >>;
const answer = { scope: check.scope, lock_id: check.lock_id };
if (!<< released >>) return { released: false, idempotent: true, reason: check.outcome, ...answer };
const verdict = << verdict >>;
if (verdict.released) return { released: true, idempotent: false, ...answer };
return { released: false, idempotent: false, reason: verdict.reason, ...answer, expires_at: check.held.expires_at };
