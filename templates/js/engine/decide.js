// One decision per look at the line: enter, wait (and for how long), skip a dead head, or
// give up. Tickets are served in order per lane (ticket % slots); a lane's `served` holds the
// last ticket that left it, so the lane's head is served + slots.
const ctx = __CONTEXT__;
const look = __LOOK__;
// Sleeping before the first read (read.js): the head is not watched yet, so its quiet time
// starts at that read.
if (!look.fast && look.sleep_first_ms !== null && look.sleep_first_ms !== undefined) {
  return {
    ticket: look.ticket, lane: look.lane, head: look.last_out + 1, served: look.last_out,
    quiet_since: null, overdue: 0, state: 'wait', wake_ms: look.sleep_first_ms,
    sleep_seconds: Math.max(0.01, Math.round(look.sleep_first_ms / 10) / 100),
  };
}
// On the fast path nothing was read: the ticket before this one is the last out (read.js).
const [servedRaw, metaRaw, goneRaw, holdRaw, oldRaw] = look.fast
  ? [String(look.ticket - 1), null, null, null, null]
  : __READ__.map((item) => item.json.value);
// A holder of the format before engine v2 (a count at the bare scope key) still holds the
// scope: during an upgrade the new form waits for it instead of entering beside it.
const oldHolder = oldRaw !== null && oldRaw !== undefined && Number(oldRaw) >= 1;
const N = ctx.slots;
const t = look.ticket;
const firstInLane = look.lane === 0 ? N : look.lane;
const served = servedRaw === null || servedRaw === undefined ? firstInLane - N : Number(servedRaw);
const head = served + N;
const now = Date.now();
let meta = null;
try { meta = metaRaw ? JSON.parse(metaRaw) : null; } catch (error) { meta = null; }
const holding = meta !== null && !meta.released && meta.ticket === head;
const averageMs = holdRaw ? Number(holdRaw) : __DEFAULT_HOLD_MS__;
const before = look.before && look.before.ticket === t ? look.before : null;
// A head waiting for an old-format holder is not quiet: nobody may skip it meanwhile.
const quietSince = before && before.head === head && before.quiet_since && !oldHolder ? before.quiet_since : now;
const waitedMs = now - ctx.started_ms;
const out = { ticket: t, lane: look.lane, head, served, quiet_since: quietSince, overdue: 0 };
const bucket = (seconds) => __WAIT_BUCKETS__.find((le) => seconds <= le) ?? 'inf';
const stat = (name) => ({ key: `${ctx.stats_prefix}${name}:${ctx.scope}`, expire: true, ttl: __STATS_TTL__ });
if (t === head && !oldHolder) {
  const expiresMs = now + ctx.ttl_seconds * 1000;
  const record = {
    lock_id: ctx.lock_id, scope: ctx.scope, ticket: t, fence: t, slots: N,
    workflow_id: ctx.workflow_id, workflow_name: ctx.workflow_name, execution_id: ctx.execution_id,
    locked_at: new Date(now).toISOString(), locked_ms: now,
    expires_at: new Date(expiresMs).toISOString(), expires_ms: expiresMs,
    ttl_seconds: ctx.ttl_seconds,
  };
  return {
    ...out, state: 'enter', hold_average_ms: holdRaw ? Number(holdRaw) : null,
    ...record,
    // Counted after the release, off the path between the release and the next holder.
    wait_stats: before === null ? [] : [stat('waited'), stat(`wait_le_${bucket(waitedMs / 1000)}`)],
    set: [
      { key: `${ctx.base}:meta:${look.lane}`, type: 'string', value: JSON.stringify(record), ttl: ctx.ttl_seconds },
      { key: ctx.index_key, type: 'hash', value: JSON.stringify({ [ctx.scope]: JSON.stringify({ lock_id: ctx.lock_id, ticket: t, slots: N }) }), ttl: ctx.ttl_seconds + 3600 },
      // A mutex's fast-path value keeps naming the last ticket out (t - 1, which `served` is),
      // and tells arrivals when this ticket entered (read.js).
      ...(N === 1 ? [{ key: `${ctx.base}:fast`, type: 'string', value: String((t - 1) * __FAST_SCALE__ + __HELD_MARK__ + (now % __HELD_WRAP_MS__)), ttl: 0 }] : []),
    ],
  };
}
// Skipped while alive (it stalled past the grace): draw again, counting no new arrival.
if (t < head) return { ...out, state: 'requeue', incr: [{ key: `${ctx.base}:ticket`, expire: false, ttl: 1 }] };
const holder = holding
  ? `${meta.workflow_name} (workflow ${meta.workflow_id}, execution ${meta.execution_id}) since ${meta.locked_at}`
  : oldHolder ? 'a caller of the format before engine v2 (n8nlock locks shows it)' : 'a caller ahead in line';
const giveUp = (state, metric, message) => ({
  ...out, state, message,
  gone: { key: `${ctx.base}:gone:${t}`, ttl: ctx.ttl_seconds },
  incr: [stat(metric)],
});
// A head that never shows up (its waiter died, stopped or gave up) is skipped: at once when
// it left a marker, else after a grace no live waiter needs to take its turn. A marker only
// counts for a head that does not hold (one left over from an idle scope's reset must not).
const goneHead = goneRaw !== null && look.head === head;
if (!holding && !oldHolder && (goneHead || now - quietSince >= __SKIP_GRACE_MS__)) {
  return { ...out, head: head + N, state: 'skip', skip: { key: `${ctx.base}:served:${look.lane}`, value: String(head) } };
}
if (!ctx.wait) {
  // Fail-fast: a head that does not hold may have given up too; look at its marker first.
  if (!holding && !oldHolder && look.head !== head) return { ...out, state: 'wait', expected_ms: 0, overdue: 0, sleep_seconds: 0.01 };
  return giveUp('busy', 'busy', `Lock acquisition failed (fail-fast): scope '${ctx.scope}' is held by ${holder}. Caller passed wait_till_lock_released=false.`);
}
if (now >= ctx.deadline_ms) {
  return giveUp('timeout', 'timeout', `Lock acquisition timed out after ${ctx.max_wait_seconds}s waiting for scope '${ctx.scope}' (held by ${holder}; ${(t - head) / N} ahead in line).`);
}
// Sleep until my expected turn: the holder's rest, then a hold average and a handoff per place
// ahead; at most half the skip grace, so that a waiter whose turn comes early takes it before
// the one behind skips it. Waking late costs the lock that long, waking early costs a look:
// a waiter further back sleeps most of its expected wait and looks again; the next in line
// wakes just after the expected release, then looks every 20 ms, and backs off when the
// holder overruns.
const ahead = (t - head) / N;
const turnMs = averageMs + __HANDOFF_MS__;
// A head whose record says released is between its two writes: served follows at once.
const releasing = meta !== null && meta.released && meta.ticket === head;
// A new head whose give-up mark this look did not read: read it at once (look.head lags).
const unread = !holding && look.head !== head;
const holderLeft = holding ? meta.locked_ms + averageMs - now : releasing || unread ? 0 : turnMs;
const expectedMs = holderLeft + (ahead - 1) * turnMs;
const wakeMs = ahead === 1 ? expectedMs + __WAKE_LATE_MS__ : expectedMs * __FAR_SLEEP_SHARE__;
const overdue = before && before.wake_ms <= __MIN_POLL_MS__ ? before.overdue + 1 : 0;
const sleepMs = wakeMs > __MIN_POLL_MS__
  ? Math.min(wakeMs, __MAX_SLEEP_MS__)
  : Math.min(__MIN_POLL_MS__ * 1.5 ** Math.max(0, overdue - 6), __MAX_POLL_MS__);
return { ...out, state: 'wait', expected_ms: expectedMs, wake_ms: wakeMs, overdue, sleep_seconds: Math.max(0.01, Math.round(sleepMs / 10) / 100) };
