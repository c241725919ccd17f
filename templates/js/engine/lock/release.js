<% import 'shared/records.js' as records %>
<% import 'shared/fast_path.js' as fast_path %>
// Leave the line: mark this ticket's record and the lane's copy released, then advance the
// lane to this ticket. The record goes first: the next ticket enters at its first look that
// sees `served`, with nothing left to wait for. A look that sees the record released and
// `served` not yet waits a moment; two looks in a row that see so skip it (a release stopped
// between its writes). SET is idempotent, so a second release (or the cleanup handler after
// this one) changes nothing.
const held = << held >>;
const now = Date.now();
const base = `<< keys.lock >>${held.scope}`;
const released = << records.released('held.ticket', 'held.lock_id', 'new Date(now).toISOString()') >>;
<% if park %>
// The waiter two behind this ticket in its lane is second in line once this one is out: if it
// parked, the release wakes it (Lock Wake Read → Lock Wake Next), so that it is awake when its
// turn comes (the next in line enters by itself). Not when the lease ran out: the caller
// behind skips this ticket, and its entry wakes that waiter (decide.js).
const behind = held.ticket + 2 * (held.slots ?? 1);
const wake = { ticket: behind, key: `${base}<< keys.park >>${behind}` };
<% endif %>if (now >= held.expires_ms - << release_margin_ms >>) {
  // This close to the lock's expiry (or past it) the lane is left to the caller behind, which
  // skips this ticket; only this ticket's own record says it left, so that it does so at once.
  // The record is per ticket: no other caller's key is written.
  return {
    released: false, reason: 'expired', scope: held.scope, lock_id: held.lock_id, incr: held.wait_stats,
<% if park %>
    // Ticket 0 is never drawn (tickets start at 1): Lock Wake Read finds no listing.
    wake: { ticket: 0, key: `${base}<< keys.park >>0` },
<% endif %>
    set: [{ key: `${base}<< keys.holder >>${held.ticket}`, value: released, ttl: << released_ttl >> }],
  };
}
const heldMs = now - held.locked_ms;
const average = held.hold_average_ms === null || held.hold_average_ms === undefined
  ? heldMs : Math.round(0.5 * held.hold_average_ms + 0.5 * heldMs);
return {
  released: true, reason: 'released', scope: held.scope, lock_id: held.lock_id, ticket: held.ticket,
  incr: held.wait_stats,
<% if park %>
  wake,
<% endif %>
  set: [
    // A duplicate guard's mark of this success goes first: a caller that finds the line free
    // (after `served` below) also finds it (read.js reads it last).
    ...(held.dedupe ? [{ key: held.dedupe.done_key, value: JSON.stringify({ execution_id: held.execution_id, workflow_id: held.workflow_id, done_at: new Date(now).toISOString() }), ttl: held.dedupe.window_seconds }] : []),
    { key: `${base}<< keys.holder >>${held.ticket}`, value: released, ttl: << released_ttl >> },
    { key: `${base}<< keys.meta >>${held.lane}`, value: released, ttl: << released_ttl >> },
    { key: `${base}<< keys.served >>${held.lane}`, value: String(held.ticket), ttl: 0 },
    // After `served` and the record, so that it never names a ticket ahead of `served`, or
    // one whose record still holds (keys.py).
    ...(held.slots === 1 ? [{ key: `${base}<< keys.fast >>`, value: << fast_path.released('held.ticket') >>, ttl: 0 }] : []),
    { key: `${base}<< keys.hold >>`, value: String(average), ttl: << hold_ttl >> },
  ],
};
