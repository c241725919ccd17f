// A waiter's place in line among the calls waiting for the same moment (the INCR result): the
// first ones that fit go then, the others a window later per limit's worth ahead of them.
const ctx = __CONTEXT__;
const decision = __DECISION__;
__PLAN__
const place = Number(Object.values($json)[0]);
const l = ctx.limits[decision.place.limit];
const ahead = (place - 1) * l.cost;
const rounds = Math.max(0, Math.ceil((ahead + l.cost - decision.place.free) / l.limit));
const now = Date.now();
const wait = { started_ms: decision.wait.started_ms, spent: decision.wait.spent + 1 };
const fits = decision.place.fits + rounds * (l.past + 1) * l.bucket_ms;
const look = nextLook(ctx, fits, wait, now, decision.place.max_wait_seconds);
if (look.late) return { ...decision, queue: [], state: 'fail', message: tooLong(ctx, l, now, look.next, decision.place.max_wait_seconds) };
return { ...decision, queue: [], place: null, sleep_seconds: Math.max(0.01, (look.next - now) / 1000), wait };
