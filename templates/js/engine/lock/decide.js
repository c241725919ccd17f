<% import 'shared/records.js' as records %>
<% import 'shared/fast_path.js' as fast_path %>
// One decision per look at the line: enter, wait (and for how long), skip a dead head, or
// give up. Tickets are served in order per lane (ticket % slots); a lane's `served` holds the
// last ticket that left it, so the lane's head is served + slots. Each ticket that entered has
// its own record (`holder:<t>`), so no write, however late, overwrites another caller's.
const ctx = << context >>;
// This node looks at the line (read.js) and decides. A look that must read the line first
// answers `read` (Lock Route → Lock Read Line → this node again): this node's last decision is
// then that look, which the read completes. Any other last decision is the one before this
// look (read.js: `before`).
const asked = << decided >> ? << decision >> : null;
<% if park %>
// A decision taken with a wake (Lock Wake resumed a parked waiter first) is carried out now.
// When n8n refused the resume (409: the waiter has not parked yet, or was resumed already) it
// is forgotten, so that a later look wakes that listing again, after PARK_RETRY when this one
// was about to enter (it enters once the waiter behind is woken). After PARK_REFUSALS in a row,
// or a 404 (no such execution), that waiter is taken for dead (it died on its way to the park,
// or parked and was deleted): this one wakes it no more, and a head so listed gets the plain
// skip grace. A resume not answered in time is on its way (n8n answers once the resumed
// run has a slot).
if (asked !== null && asked.state === 'wake') {
  const answer = << woke >>.isExecuted ? << woke >>.first().json : {};
  const status = Number(answer.statusCode);
  // No answer at all: a timeout is a resume on its way (n8n answers once the run has a slot);
  // any other error (the resume URL does not reach n8n: docs/parking.md) counts as a refusal.
  const error = answer.error === undefined || answer.error === null ? '' : JSON.stringify(answer.error);
  const unreached = error !== '' && !/time(d)?\s*out|ETIMEDOUT|ESOCKETTIMEDOUT/i.test(error);
  const refusals = status === 409 || unreached ? (asked.then.refusals ?? 0) + 1 : 0;
  if (status === 404 || refusals >= << park_refusals >>) {
    const dead = { refusals: 0, dead_listings: [...(asked.then.dead_listings ?? []), asked.wake.ticket] };
    if (asked.then.state !== 'enter') return { ...asked.then, ...dead };
    // About to enter: look once more, to wake the waiter behind the dead one first.
    return { ...asked.then, ...dead, state: 'wait', reason: 'refused', expected_ms: 0, wake_ms: 0, sleep_seconds: 0.01 };
  }
  if (refusals === 0) return { ...asked.then, refusals: 0 };
  const woken = { ...asked.then.woken };
  delete woken[asked.wake.ticket];
  if (asked.then.state !== 'enter') return { ...asked.then, woken, refusals };
  return {
    ...asked.then, state: 'wait', reason: 'refused', expected_ms: 0, wake_ms: 0, woken, refusals,
    sleep_seconds: << park_retry_ms >> / 1000,
  };
}
<% endif %>
const fresh = asked === null || asked.state !== 'read';
const look = fresh ? << look >> : asked.look;
if (fresh && !look.skip_read) return { ticket: look.ticket, lane: look.lane, state: 'read', look, read: look.read };
// A waiter lists its ticket in its execution's cleanup index before its first sleep (Lock
// Enqueue, the entry Lock Hold writes on entering): if the execution dies waiting (n8n
// crashed, was killed, redeployed), the cleanup handler n8n's recovery runs for it marks the
// ticket gone, and the line passes a run of such marks in one write, not one grace each.
// Lock Enqueue writes one key per sleep: the index entry first, then a waiter's `alive` beacon
// (`beacon`: see the skip of a dead run below) at its later looks.
const listed = look.before !== null && look.before !== undefined && look.before.ticket === look.ticket && look.before.listed === true;
const sleep = (decision, beacon = false) => {
  const queue = !listed ? {
    key: ctx.index_key,
    value: { [ctx.scope]: << records.index_entry('ctx.lock_id', 'look.ticket', 'ctx.slots') >> },
    ttl: Math.max(ctx.ttl_seconds, ctx.max_wait_seconds) + 3600,
  } : beacon ? { key: `${ctx.base}<< keys.alive >>${look.ticket}`, value: String(Date.now()), ttl: << alive_ttl >> } : null;
  return queue === null ? { ...decision, listed: true } : { ...decision, listed: true, state: 'queue', queue };
};
// Sleeping before the first read (read.js): the head is not watched yet, so its quiet time
// starts at a later look.
if (!look.fast && look.sleep_first_ms !== null && look.sleep_first_ms !== undefined) {
  return sleep({
    ticket: look.ticket, lane: look.lane, head: look.last_out + 1, served: look.last_out,
    quiet_since: null, overdue: 0, state: 'wait', wake_ms: look.sleep_first_ms,
    sleep_seconds: Math.max(0.01, Math.round(look.sleep_first_ms / 10) / 100),
  });
}
const N = ctx.slots;
const t = look.ticket;
// On the fast path nothing was read: the ticket before this one is the last out, and its
// release wrote the fast-path value after marking its record released (release.js).
const values = look.fast ? [String(t - 1), null] : << read >>.map((item) => item.json.value);
const [servedRaw, holdRaw] = values;
const firstInLane = look.lane === 0 ? N : look.lane;
const served = servedRaw === null || servedRaw === undefined ? firstInLane - N : Number(servedRaw);
const head = served + N;
const now = Date.now();
<< records.reader() >>
// The records and marks this look read, by ticket (read.js: its window); a ticket it did not
// read is undefined (unknown).
const records = look.fast ? { [t - 1]: null } : {};
const marks = {};
const beacons = {}; // when the look read them (read.js `beacons`): ms, or null
const stride = look.beacons ? 3 : 2;
if (!look.fast) {
  look.window.forEach((k, index) => {
    records[k] = parse(values[2 + stride * index]);
    marks[k] = values[3 + stride * index] ?? null;
    if (look.beacons) beacons[k] = values[4 + stride * index] === null || values[4 + stride * index] === undefined ? null : Number(values[4 + stride * index]);
  });
}
// parse() gives null for a key that is absent; undefined means the look did not read it.
const known = (ticket) => ticket < 1 || records[ticket] !== undefined; // none below 1
// A duplicate guard's done mark: a success of this key within its window.
const done = ctx.dedupe && !look.fast ? parse(values[2 + stride * look.window.length]) : null;
// Ticket `ticket` may hold: its record is there and not released. It may have entered late
// (after a stall), so the caller after it waits for it like for any holder.
const active = (ticket) => {
  const record = records[ticket];
  return record !== null && record !== undefined && !record.released && record.ticket === ticket;
};
const meta = known(head) ? records[head] : null;
const holding = active(head);
const averageMs = holdRaw ? Number(holdRaw) : << default_hold_ms >>;
const before = look.before && look.before.ticket === t ? look.before : null;
const waitedMs = now - ctx.started_ms;
const out = { ticket: t, lane: look.lane, head, served, quiet_since: null, overdue: 0, fast: look.fast, listed };
<% if park %>
// Parking (engine.py PARK_*): the resume URLs this look read (read.js `parks`), by ticket.
const parkAt = 2 + stride * look.window.length + (ctx.dedupe ? 1 : 0);
// A listing is "<ms> <url>": when it was listed, and where. One listed less than PARK_SETTLE ago
// is not woken yet: its waiter is still between its look and its park (a resume then would be
// refused, and on n8n 1.x a refused resume costs a concurrency slot for good).
const parkUrls = {};
const parkSince = {};
if (!look.fast && look.parks) look.parks.forEach((k, index) => {
  const value = values[parkAt + index] === null || values[parkAt + index] === undefined ? '' : String(values[parkAt + index]);
  const space = value.indexOf(' ');
  parkUrls[k] = space > 0 ? value.slice(space + 1) : null;
  parkSince[k] = space > 0 ? Number(value.slice(0, space)) : null;
});
const parkedAt = (k) => parkUrls[k] ?? null;
const settled = (k) => parkedAt(k) !== null && now - parkSince[k] >= << park_settle_ms >>;
// The listings this one resumed (ticket -> the listing's time: a waiter that parks again lists
// itself anew, and is woken again), whether it was resumed itself (a waiter woken by the one
// ahead stays awake: its turn is near), and whether its own listing is there, and stale (it
// was woken from the park it was for).
const woken = before && before.woken && !Array.isArray(before.woken) ? before.woken : {};
const unwoken = (k) => settled(k) && woken[k] !== parkSince[k];
const unparked = before !== null && before.state === 'park';
const resumed = unparked && look.resumed === true; // read.js: the park's resume named this ticket
out.woken = woken;
out.dead_listings = before !== null && before.dead_listings ? before.dead_listings : [];
const alive = (k) => parkedAt(k) !== null && !out.dead_listings.includes(k);
out.refusals = before !== null && before.refusals ? before.refusals : 0;
out.awake = (before !== null && before.awake === true) || resumed;
// Woken by its backstop, not resumed: it stays awake PARK_BACKSTOP_AWAKE_MS before it parks
// again. After an n8n crash the WaitTracker resumes every parked waiter whose backstop passed
// at once, as n8n gets ready, while the recovery's cleanup handler is still freeing the
// holder; one that parked again at once would wait for the WaitTracker's next look (60 s).
out.backstop_at = unparked && !resumed ? now : before !== null && before.backstop_at ? before.backstop_at : null;
const backstopped = out.backstop_at !== null && now - out.backstop_at < << park_backstop_awake_ms >>;
out.registered = before !== null && before.registered === t ? t : null;
// This waiter skipped the head before it (no release then wakes the waiter behind it).
out.skipped_in = before !== null && before.ticket === t && (before.state === 'skip' || before.skipped_in === true);
const staleListing = unparked || (before !== null && before.stale_listing === true);
out.stale_listing = out.registered !== null && staleListing;
const wakeThen = (k, then) => ({
  ...then, state: 'wake', wake: { ticket: k, url: parkedAt(k) },
  then: { ...then, woken: { ...woken, [k]: parkSince[k] } },
});
<% endif %>
// Turned away without the body: skipped (skip, buffer-one, a duplicate) or, for a duplicate
// guard with on_busy error, refused. `firstExecution`: the execution of the key that ran.
const turnedAway = (holderExecution, firstExecution) => {
  const key = ctx.dedupe ? ctx.dedupe.key : null;
  const first = firstExecution ?? holderExecution;
  const state = ctx.on_busy === 'error' ? 'busy' : 'skipped';
  const message = ctx.dedupe
    ? `Duplicate execution of key '${key}': ${firstExecution !== null ? `execution ${first} ran it within the last ${ctx.dedupe.window_seconds} s` : `execution ${first ?? '(about to start)'} is running it`}.`
    : `Skipped: scope '${ctx.scope}' is busy; on_busy is ${ctx.on_busy}.`;
  const metric = ctx.dedupe ? 'duplicate' : state === 'busy' ? 'busy' : 'skipped';
  return {
    ...out, state, message,
    gone: { key: `${ctx.base}<< keys.gone >>${t}`, ttl: ctx.gone_ttl, at: String(now) },
    incr: [stat(metric)],
    leave: [{ key: `${ctx.base}<< keys.gone >>${t}`, expire: true, ttl: ctx.gone_ttl }, stat(metric)],
    answer: {
      skipped: true, acquired: false, reason: ctx.dedupe ? 'duplicate' : 'busy',
      scope: ctx.scope, on_busy: ctx.on_busy, holder_execution_id: holderExecution,
      ...(ctx.dedupe ? { key, first_execution_id: first } : {}),
    },
  };
};
const bucket = (seconds) => << wait_buckets >>.find((le) => seconds <= le) ?? 'inf';
const stat = (name) => ({ key: `${ctx.stats_prefix}${name}:${ctx.scope}`, expire: true, ttl: << stats_ttl >> });
// A look that did not read the records it needs looks again at once, knowing the head now.
const again = (reason) => ({ ...out, state: 'wait', reason, expected_ms: 0, wake_ms: 0, overdue: 0, sleep_seconds: 0.01 });
// Skipped while alive (it stalled past the grace): draw again, counting no new arrival.
if (t < head) return { ...out, state: 'requeue', incr: [{ key: `${ctx.base}<< keys.ticket >>`, expire: false, ttl: 1 }] };
// The ticket before the head must have left before the head may enter: its record may have
// been written late, after a caller behind it had skipped it (verify.js withdraws it then).
if (!known(head - N)) return again('unread');
if (done !== null) return turnedAway(null, done.execution_id);
const blocked = active(head - N);
if (t === head && !blocked) {
  const expiresMs = now + ctx.ttl_seconds * 1000;
  const record = {
    lock_id: ctx.lock_id, scope: ctx.scope, ticket: t, fence: t, slots: N, format: << format >>,
    workflow_id: ctx.workflow_id, workflow_name: ctx.workflow_name, execution_id: ctx.execution_id,
    locked_at: new Date(now).toISOString(), locked_ms: now,
    expires_at: new Date(expiresMs).toISOString(), expires_ms: expiresMs,
    ttl_seconds: ctx.ttl_seconds,
  };
<% if park %>
  const entering = {
<% else %>
  return {
<% endif %>
    ...out, state: 'enter', hold_average_ms: holdRaw ? Number(holdRaw) : null,
    anchor_ms: ctx.started_ms, base: ctx.base, gone_key: `${ctx.base}<< keys.gone >>${t}`,
    // The release writes it (release.js): a duplicate guard's mark of this success.
    dedupe: ctx.dedupe,
    ...record,
    // Counted after the release, off the path between the release and the next holder.
    wait_stats: before === null ? [] : [stat('waited'), stat(`wait_le_${bucket(waitedMs / 1000)}`)],
    // The record goes last: a node that fails part-way (n8n times out an expression across a
    // stall) then leaves no holder behind, only keys that hold nothing, and a retry writes
    // them all again.
    set: [
      // An object: Lock Hold writes it as a hash (one field per scope the execution holds).
      { key: ctx.index_key, value: { [ctx.scope]: << records.index_entry('ctx.lock_id', 't', 'N') >> }, ttl: ctx.ttl_seconds + 3600 },
      // A mutex's fast-path value keeps naming the last ticket out (t - 1, which `served` is),
      // and tells arrivals when this ticket entered (read.js).
      // It expires with the lease: only a hint, and an arrival that finds none reads the line.
      ...(N === 1 ? [{ key: `${ctx.base}<< keys.fast >>`, value: << fast_path.held('t', 'now') >>, ttl: ctx.ttl_seconds }] : []),
      // The lane's copy, for the operator commands and a release without a ticket (keys.py);
      // it holds nothing by itself for this engine.
      // Both live until `expires_ms`, counted when Lock Hold writes them (expires_ms in
      // SET_EXPIRING_EACH): a Lock Hold delayed by a stall must not outlive the holder's own expiry.
      { key: `${ctx.base}<< keys.meta >>${look.lane}`, value: JSON.stringify(record), ttl: ctx.ttl_seconds, expires_ms: expiresMs },
      { key: `${ctx.base}<< keys.holder >>${t}`, value: JSON.stringify(record), ttl: ctx.ttl_seconds, expires_ms: expiresMs },
    ],
  };
<% if park %>
  // A waiter that parked behind this one is woken by the release two tickets ahead of it
  // (release.js), as it becomes second in line. A head that this waiter skipped released
  // nothing, and one that the cleanup handler freed (its record says healed: its execution
  // failed or was stopped) ran no release: then this entry wakes it, once its listing has
  // settled (it is about to park).
  const behind = t + N;
  const healedBefore = records[t - N] !== null && records[t - N] !== undefined && records[t - N].healed === true;
  if ((out.skipped_in || healedBefore) && parkedAt(behind) !== null && woken[behind] !== parkSince[behind] && !out.dead_listings.includes(behind)) {
    if (!settled(behind)) return { ...again('settle'), sleep_seconds: << park_retry_ms >> / 1000 };
    return wakeThen(behind, entering);
  }
  return entering;
<% endif %>
}
if (t > head && (!known(head) || marks[head] === undefined)) return again('unread');
const holder = holding && meta
  ? `${meta.workflow_name} (workflow ${meta.workflow_id}, execution ${meta.execution_id}) since ${meta.locked_at}`
  : 'a caller ahead in line';
const giveUp = (state, metric, message) => ({
  ...out, state, message,
  // One INCR node marks the ticket gone (a count: a mark that a caller behind wrote first, a
  // time or 1, stays a number) and counts the give-up.
  leave: [{ key: `${ctx.base}<< keys.gone >>${t}`, expire: true, ttl: ctx.gone_ttl }, stat(metric)],
});
// Watched: the time since the answer of the first look that saw this head, with the ticket
// before it gone (not while it still leaves), to the start of this look (read.js): a stall in
// between never counts. A holder whose record expired is skipped once watched that long too.
const watched = t > head && !blocked;
const quietSince = watched ? (before && before.head === head && before.quiet_since ? before.quiet_since : now) : null;
const quiet = watched && !holding;
out.quiet_since = quietSince;
// The same watch without the time this waiter itself was stopped: each look adds the time since
// the one before, at most that look's sleep and a second (a stall of the whole n8n counts
// once, so that waiters it stopped too have a look to say they are alive). At the first look
// of a watch, nothing.
const continued = quiet && before && before.head === head && before.watch_ms !== undefined && before.at_ms;
out.watch_ms = continued ? before.watch_ms + Math.max(0, Math.min(now - before.at_ms, (before.sleep_seconds ?? 0) * 1000 + 1000)) : 0;
out.at_ms = now;
// A head that never shows up (its waiter died, stopped or gave up) is skipped: at once when
// it left a mark, else after a grace no live waiter needs to take its turn. The skip marks the
// head gone before it advances `served`, so that a head that wrote its record late finds the
// mark (verify.js), or else the caller after it finds the record.
const markedHead = quiet && marks[head] !== null && marks[head] !== undefined;
// A head whose record says released has left: the release wrote `served` before its record,
// so `served` behind it was set back by a late write (a skip decided before a stall). Seen
// so on two looks in a row (not a release between this look's two reads), it is skipped at
// once rather than after the grace.
const releasedHead = quiet && meta !== null && meta !== undefined && meta.released === true && meta.ticket === head;
out.released_head = releasedHead;
const leftHead = releasedHead && before && before.head === head && before.released_head === true;
<% if park %>
// A parked head is woken (below) and given the parked grace: woken, it may queue for an n8n
// concurrency slot before its run starts.
const graceMs = alive(head) ? << parked_grace_ms >> : << skip_grace_ms >>;
const graceOver = quiet && before && before.head === head && before.quiet_since && look.look_ms - before.quiet_since >= graceMs;
<% else %>
const graceOver = quiet && before && before.head === head && before.quiet_since && look.look_ms - before.quiet_since >= << skip_grace_ms >>;
<% endif %>
const skipHead = (last) => ({
  // The next head is watched from a later look of its own, never from this one's watch.
  ...out, head: last + N, quiet_since: null, state: 'skip',
  skip: [
    { key: `${ctx.base}<< keys.gone >>${head}`, type: 'string', value: '1', ttl: ctx.gone_ttl },
    { key: `${ctx.base}<< keys.served >>${look.lane}`, type: 'string', value: String(last), ttl: 0 },
  ],
});
// A marked head goes with the marked tickets right behind it that this look read and that do
// not hold: after a burst of skipped callers, the next arrival passes them all in one write,
// not one look each. Each is skipped as it would be as the head (its mark is there, its
// ticket before it does not hold), and one that writes its record late withdraws (verify.js).
const markedRun = () => {
  let last = head;
  for (let k = head + N; k < t && known(k) && marks[k] !== undefined && marks[k] !== null && !active(k); k += N) last = k;
  return last;
};
if (markedHead) return skipHead(markedRun());
if (leftHead) return skipHead(head);
// A head quiet past the grace, with tickets between it and mine that have not left (no mark):
// one of them, alive, takes the skip (the one right behind the head skips at the grace, as
// here when none is between). After n8n crashed with callers in line, though, they are all
// dead, and one grace each adds up (10 in line: 55 s). So a waiter watching that long writes
// its `alive` beacon at every look (Lock Enqueue), and one that watched the head RUN_GRACE
// passes the head and every unmarked ticket between without a fresh beacon in one skip: it
// marks them all gone and advances `served` past the head only; the next look passes the
// marked run (markedRun). A live one among them that was slow to say so withdraws and draws
// again, as a skipped caller does (verify.js: the run's tickets were drawn before this one,
// so any record they write after the marks is checked against them).
const watchedMs = quiet && before && before.head === head && before.quiet_since ? look.look_ms - before.quiet_since : 0;
const between = [];
let liveBetween = false;
let unreadBetween = false;
for (let k = head + N; k < t; k += N) {
  if (!known(k) || marks[k] === undefined) { unreadBetween = true; break; }
  if (active(k)) break;
  if (marks[k] !== null) continue; // left the line: passed with the marked run
<% if park %>
  if (alive(k)) { liveBetween = true; break; } // parked: alive, in n8n's database
<% endif %>
  if (beacons[k] !== undefined && beacons[k] !== null && look.look_ms - beacons[k] < << alive_fresh_ms >>) { liveBetween = true; break; }
  between.push(k);
}
const mayBeLive = between.length > 0 || liveBetween || unreadBetween;
if (graceOver && !mayBeLive) return skipHead(head);
if (graceOver && !liveBetween && between.length > 0 && out.watch_ms >= << run_grace_ms >>) {
  const run = skipHead(head);
  return { ...run, run: between, skip: [
    { key: `${ctx.base}<< keys.gone >>${head}`, type: 'string', value: '1', ttl: ctx.gone_ttl },
    ...between.map((k) => ({ key: `${ctx.base}<< keys.gone >>${k}`, type: 'string', value: '1', ttl: ctx.gone_ttl })),
    { key: `${ctx.base}<< keys.served >>${look.lane}`, type: 'string', value: String(head), ttl: 0 },
  ] };
}
const beacon = quiet && mayBeLive && watchedMs >= << beacon_after_ms >>;
// The overlap policy (context.js). `error` (fail-fast): a marked head was skipped above; any
// other head, or a ticket before mine that has not left yet, is busy.
if (ctx.on_busy === 'error') {
  if (ctx.dedupe) return turnedAway(holding && meta ? String(meta.execution_id) : null, null);
  return giveUp('busy', 'busy', `Lock acquisition failed (fail-fast): scope '${ctx.scope}' is held by ${holder}. Caller passed wait_till_lock_released=false.`);
}
// A skipped caller leaves the line (Lock Skip Leave): its `gone` mark holds when it left, which
// tells later skip callers how long the head before it has been quiet at least.
const skipped = () => turnedAway(holding && meta ? String(meta.execution_id) : null, null);
if (ctx.on_busy === 'skip') {
  // Busy while the head holds, or has not entered yet: it drew its ticket just before mine and
  // is about to enter, or it died. Dead only when a caller after it left a mark more than the
  // grace ago: the head was drawn before that and never entered since (a waiter's watch, kept
  // in the marks, since a skip caller does not stay to watch).
  const left = [];
  for (let k = head + N; k < t; k += N) {
    const at = Number(marks[k]);
    if (marks[k] !== undefined && marks[k] !== null && at > 1e12) left.push(at);
  }
  const quietSince = left.length > 0 ? Math.min(...left) : null;
  const dead = !holding && !blocked && quietSince !== null && now - quietSince >= << skip_grace_ms >>;
  return dead ? skipHead(head) : skipped();
}
if (ctx.on_busy === 'buffer-one') {
  // Wait only when no ticket between the head and mine (in my lane) still waits: one that has
  // not left a mark may still enter. Unread tickets count as waiting once the look read from
  // the head (read.js reads up to << buffer_window >> of them).
  let unread = false;
  for (let k = head + N; k < t; k += N) {
    if (marks[k] === undefined) { unread = true; break; }
    if (marks[k] === null) return skipped();
  }
  if (unread) return look.guess === head ? skipped() : again('unread');
}
if (now >= ctx.deadline_ms) {
  return giveUp('timeout', 'timeout', `Lock acquisition timed out after ${ctx.max_wait_seconds}s waiting for scope '${ctx.scope}' (held by ${holder}; ${(t - head) / N} ahead in line).`);
}
// Sleep until my expected turn: the holder's rest, then a hold average and a handoff per place
// ahead; at most half the skip grace, so that a waiter whose turn comes early takes it before
// the one behind skips it. Waking late costs the lock that long, waking early costs a look:
// a waiter further back sleeps most of its expected wait and looks again; the next in line
// wakes just after the expected release, then looks every 10 ms, and backs off when the
// holder overruns (or when the ticket before it is slow to leave).
const ahead = (t - head) / N;
const turnMs = averageMs + << handoff_ms >>;
// A head whose record says released is between the release's writes, or already gone.
const releasing = meta !== null && meta !== undefined && meta.released && meta.ticket === head;
const holderLeft = holding && meta ? meta.locked_ms + averageMs - now : releasing || blocked ? 0 : turnMs;
const expectedMs = ahead === 0 ? 0 : holderLeft + (ahead - 1) * turnMs;
const wakeMs = ahead <= 1 ? expectedMs + (ahead === 1 ? << wake_late_ms >> : 0) : expectedMs * << far_sleep_share >>;
const overdue = before && before.wake_ms <= << min_poll_ms >> ? before.overdue + 1 : 0;
const sleepMs = wakeMs > << min_poll_ms >>
  ? Math.min(wakeMs, << max_sleep_ms >>)
  : Math.min(<< min_poll_ms >> * 1.5 ** Math.max(0, overdue - 6), << max_poll_ms >>);
<% if park %>
// Far back in line (not the next), its turn more than PARK_AFTER away, and not woken to stay
// awake: park. Its resume URL is listed first (Lock Enqueue; its cleanup index entry waits for
// a sleep: a parked execution is in n8n's database, it does not die with the process), then it
// looks again, then it parks. The release two tickets ahead of it reads that URL after its
// release writes and resumes it (release.js): a look after the listing that still sees that
// ticket ahead comes before the release, so the release's read finds the listing. A waiter
// that finds itself next on the look after listing empties its URL (Lock Enqueue) and stays
// awake instead.
// And always behind a parked waiter: an awake waiter behind a parked one would hold a slot
// the parked one needs to resume (n8n queues a resumed run for a slot like any other); with
// the instance full of such waiters, nobody moves until the backstop.
let parkedAhead = false;
for (let k = head + N; k < t; k += N) if (alive(k)) parkedAhead = true;
// A holder that has outlasted its average may well hold as long again: expectedMs counts it
// as leaving any moment (right for the next in line's looks), so behind a long first hold on a
// fresh scope (no average yet) or an overrun the line would wait awake, holding slots, for as
// long as the holder holds.
const heldMs = holding && meta ? now - meta.locked_ms : 0;
const parkExpectedMs = heldMs > averageMs ? heldMs + (ahead - 1) * turnMs : expectedMs;
// Nor while the head is quiet (it holds nothing yet): it is about to enter, or it died, and
// a waiter that watches it awake passes it, with the dead behind it, after the grace (after an
// n8n crash, the awake waiters died and the first parked one to wake must heal the line).
const parkable = ahead >= 2 && (parkedAhead || (!out.awake && !quiet && !backstopped && parkExpectedMs > << park_after_ms >>));
const waiting = { ...out, state: 'wait', expected_ms: expectedMs, wake_ms: wakeMs, overdue, sleep_seconds: Math.max(0.01, Math.round(sleepMs / 10) / 100) };
const listing = (url, ttl) => ({ ...waiting, state: 'queue', listed: true, sleep_seconds: 0.01, queue: { key: `${ctx.base}<< keys.park >>${t}`, value: url, ttl } });
// A parked waiter is woken by the release two tickets ahead of it in its lane (release.js), as
// it becomes second in line; any waiter resumes a parked head it watched quiet WAKE_PARKED (its
// waker died, or its resume was lost).
const lost = quiet && unwoken(head) && alive(head) && watchedMs >= << wake_parked_ms >> ? head : null;
const target = lost;
let next;
// A waiter back from a park lists itself anew before it parks again: its listing's new time
// tells the waiter ahead to wake it again.
if (parkable && (out.registered === null || out.stale_listing)) next = { ...listing(`${now} ${ctx.resume_url}`, << park_limit_s >> + 60), registered: t, stale_listing: false };
// The backstop: short near the front, where a crash leaves nobody awake to resume (engine.py).
else if (parkable) next = { ...waiting, state: 'park', park_seconds: Math.max(1, Math.min(ahead <= << park_near_ahead >> ? << park_near_limit_s >> : << park_limit_s >>, Math.ceil((ctx.deadline_ms - now) / 1000) + 1)) };
// Its listing emptied, it sleeps as it would have: nothing needs a look right after (a look
// that owes a beacon looks at once, so that the waiters behind see it alive).
else if (out.registered !== null) next = { ...listing('', 1), registered: null, stale_listing: false, sleep_seconds: beacon ? 0.01 : waiting.sleep_seconds };
else next = sleep(backstopped && ahead >= 2 ? { ...waiting, sleep_seconds: Math.max(waiting.sleep_seconds, << park_backstop_look_ms >> / 1000) } : waiting, beacon);
return target !== null && parkedAt(target) !== null ? wakeThen(target, next) : next;
<% else %>
return sleep({ ...out, state: 'wait', expected_ms: expectedMs, wake_ms: wakeMs, overdue, sleep_seconds: Math.max(0.01, Math.round(sleepMs / 10) / 100) }, beacon);
<%- endif %>
