<% import 'shared/fast_path.js' as fast_path %>
// What to read on this look at the line: one GET node reads every key in one connection. Runs
// inside Lock Decide (decide.js), which reads the line when `skip_read` is false.
const ctx = << context >>;
const now = Date.now();
// The ticket is the one the last INCR drew (a requeue draws a new one); a decision about an
// earlier ticket says nothing about this one.
const ticket = Number(<< drawn >>.map((item) => item.json[`${ctx.base}<< keys.ticket >>`]).find((v) => v !== undefined));
const decided = << decided >> ? << decision >> : null;
const before = decided && decided.ticket === ticket && decided.state !== 'requeue' ? decided : null;
const N = ctx.slots;
const lane = ticket % N;
// The fast path (keys.py): a fresh ticket right after the last ticket out is the head, and
// enters without this read. Only a first ticket counts, and only a value a release or a
// holder wrote (a holder writes the ticket before its own, so no arrival matches it).
const firstTicket = decided === null;
const drawn = (suffix) => (firstTicket ? << drawn >>.map((item) => item.json[`${ctx.base}${suffix}`]).find((v) => v !== undefined) : undefined);
<< fast_path.decoder() >>
const fastValue = Number(drawn('<< keys.fast >>') ?? 0);
const decoded = decodeFast(fastValue, now);
const lastOut = decoded.lastOut;
// A duplicate guard always reads: its done mark is read with the line (no fast path).
const fast = N === 1 && lastOut >= 1 && ticket === lastOut + 1 && !ctx.dedupe;
// A waiter sleeps before its first read when the same INCR node told it enough: the tickets
// ahead (to the last out), the hold average, and when the next ticket entered, if it did (its
// Lock Hold adds a mark and its entry time to the fast-path value). Each INCR since a write
// added 1, at most once per ticket ahead: taking that many off errs early, and an early wake
// costs a look where a late one costs the lock.
const ahead = ticket - lastOut - 1;
const averageRaw = Number(drawn('<< keys.hold >>') ?? 0) - (ahead + 1);
const averageMs = averageRaw >= 20 ? averageRaw : null;
const entered = decoded.entered;
const enteredMs = decoded.enteredAt(ahead);
let sleepFirstMs = null;
// Only a plain waiter: a buffer-one caller first finds out whether it may wait at all.
if (!fast && ctx.on_busy === 'wait' && N === 1 && lastOut >= 1 && averageMs !== null && ahead >= 1) {
  const turnMs = averageMs + << handoff_ms >>;
  if (entered) {
    const expectedMs = Math.max(0, enteredMs + averageMs - now) + (ahead - 1) * turnMs;
    const wakeMs = expectedMs * (ahead === 1 ? 1 : << far_sleep_share >>) + << wake_late_ms >>;
    if (wakeMs > << min_poll_ms >>) sleepFirstMs = Math.min(wakeMs, << max_sleep_ms >>);
  } else if (ahead >= 2) {
    // The next ticket has not entered yet: the turns between it and me cannot end sooner.
    sleepFirstMs = Math.min((ahead - 1) * turnMs * << far_sleep_share >>, << max_sleep_ms >>);
  }
}
<% if park %>
// A waiter that may park reads the line first: it parks rather than sleep in its slot.
if (ahead >= 2) sleepFirstMs = null;
<% endif %>
<% if reads_first %>
// A replaying duplicate guard's waiter reads first too: its first read may find the done mark.
sleepFirstMs = null;
<% endif %>
// Records are per ticket, so a look names the tickets whose records it reads: a window
// around the lane's head as last seen (on a first look: the last ticket out's successor for a
// mutex that knows it, else my predecessor), from the ticket before it to a few after it, never
// past mine. So the look after a sleep still knows the head when the line moved on meanwhile.
// A caller that may be turned away (skip, buffer-one) decides on its first look when it can:
// the fast-path value names the last ticket out also when it is 0, if the first ticket's Lock
// Hold wrote it (entered), or if no ticket has entered yet (it counted every arrival, as the
// ticket did).
const turnedAway = ctx.on_busy === 'skip' || ctx.on_busy === 'buffer-one';
const named = lastOut >= 1 || (turnedAway && (entered || fastValue === ticket));
<% if park %>
// Back from a park that a release resumed (the one two tickets ahead: release.js), an entry
// after a head that ran no release, or a waiter that watched it as a quiet head (decide.js
// keeps such a waiter awake): the head is at most two places ahead, where the park's own look
// saw it far back. (A wrong guess costs one more look: decide.js reads again what it lacks.)
const park = before !== null && before.state === 'park' && << parked >>.isExecuted ? << parked >>.first().json : null;
const resumed = park !== null && park.body !== undefined && park.body !== null && Number(park.body.n8nlock_wake) === ticket;
const guess = resumed ? Math.max(before.head, ticket - 2 * N) : before ? before.head : (N === 1 && named && lastOut < ticket ? lastOut + 1 : ticket - N);
<% else %>
const guess = before ? before.head : (N === 1 && named && lastOut < ticket ? lastOut + 1 : ticket - N);
<% endif %>
// Tickets start at 1: there is nothing to read below (a new scope's first look reads 4 keys).
const window = guess - N >= 1 ? [guess - N] : [];
// A buffer-one caller reads every ticket between the head and its own (up to a bound): it
// waits only when none of them still waits. A skip caller reads the head and the first
// tickets after it: their marks are the oldest, which tell whether the head died.
// The look after a skip reads further: the marked tickets a burst of skipped callers left go in
// one write when one look read them all (decide.js).
// A waiter that has watched a quiet head for a while reads the tickets between it and the
// head too, with their `alive` beacons (decide.js: a run of dead tickets goes in one skip).
const watchedMs = before && before.quiet_since ? now - before.quiet_since : 0;
const beacons = watchedMs >= << beacon_after_ms >>;
const reach = ctx.on_busy === 'buffer-one' || (before && before.state === 'skip') || beacons ? << buffer_window >>
  : ctx.on_busy === 'skip' ? << skip_window >> : << look_window >>;
for (let k = guess; k < ticket && window.length < reach; k += N) if (k >= 1) window.push(k);
<% if park %>
// The resume URLs (`park:<t>`) of the window (a parked head it may wake, parked waiters ahead
// of it) and of the waiter right behind it: when this one enters after a head that ran no
// release (it skipped the head, or the cleanup handler freed it), that waiter is second in line
// and this entry wakes it, as the head's release would have (decide.js).
const parks = [ticket + N, ...window];
<% endif %>
return {
  ticket, lane, guess, fast, window, beacons,
<% if park %>
  parks, resumed,
<% endif %>
  // When this look began, before its read: a skip counts quiet time from one look's answer to
  // a later look's start, so that a stall in between never counts as watched quiet.
  look_ms: now,
  skip_read: fast || sleepFirstMs !== null,
  last_out: lastOut, ahead, sleep_first_ms: sleepFirstMs,
  before,
  read: [
    { key: `${ctx.base}<< keys.served >>${lane}` },
    { key: `${ctx.base}<< keys.hold >>` },
    ...window.flatMap((k) => [
      { key: `${ctx.base}<< keys.holder >>${k}` }, { key: `${ctx.base}<< keys.gone >>${k}` },
      ...(beacons ? [{ key: `${ctx.base}<< keys.alive >>${k}` }] : []),
    ]),
    // Last: a release writes the done mark before it frees the line, so a look that finds the
    // line free also finds the mark.
    ...(ctx.dedupe ? [{ key: ctx.dedupe.done_key }] : []),
<% if park %>
    ...parks.map((k) => ({ key: `${ctx.base}<< keys.park >>${k}` })),
<% endif %>
  ],
};
