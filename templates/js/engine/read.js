// What to read on this look at the line: one GET node reads every key in one connection.
const ctx = __CONTEXT__;
const before = __DECIDED__ ? __DECISION__ : null;
const ticket = before && before.state !== 'requeue'
  ? before.ticket
  : Number(__TICKET__.json[`${ctx.base}:ticket`]);
const lane = ticket % ctx.slots;
// The fast path (keys.py): a fresh ticket right after the last ticket out is the head, and
// enters without this read. Only a fresh ticket counts, and only a value a release or a
// holder wrote (a holder writes the ticket before its own, so no arrival matches it).
const drawn = (name) => (before ? undefined : __DRAWN__.map((item) => item.json[`${ctx.base}:${name}`]).find((v) => v !== undefined));
const fastValue = Number(drawn('fast') ?? 0);
const lastOut = Math.floor(fastValue / __FAST_SCALE__);
const fast = ctx.slots === 1 && lastOut >= 1 && ticket === lastOut + 1;
// A waiter sleeps before its first read when the same INCR node told it enough: the tickets
// ahead (to the last out), the hold average, and when the next ticket entered, if it did (its
// Lock Hold adds a mark and its entry time to the fast-path value). Each INCR since a write
// added 1, at most once per ticket ahead: taking that many off errs early, and an early wake
// costs a look where a late one costs the lock.
const now = Date.now();
const ahead = ticket - lastOut - 1;
const averageRaw = Number(drawn('hold_ms') ?? 0) - (ahead + 1);
const averageMs = averageRaw >= 20 ? averageRaw : null;
const rest = fastValue - lastOut * __FAST_SCALE__;
const entered = rest >= __HELD_MARK__;
const wrap = __HELD_WRAP_MS__;
const enteredMod = (((rest - __HELD_MARK__ - ahead) % wrap) + wrap) % wrap;
const enteredMs = now - ((((now - enteredMod) % wrap) + wrap) % wrap);
let sleepFirstMs = null;
if (!fast && ctx.wait && ctx.slots === 1 && lastOut >= 1 && averageMs !== null && ahead >= 1) {
  const turnMs = averageMs + __HANDOFF_MS__;
  if (entered) {
    const expectedMs = Math.max(0, enteredMs + averageMs - now) + (ahead - 1) * turnMs;
    const wakeMs = expectedMs * (ahead === 1 ? 1 : __FAR_SLEEP_SHARE__) + __WAKE_LATE_MS__;
    if (wakeMs > __MIN_POLL_MS__) sleepFirstMs = Math.min(wakeMs, __MAX_SLEEP_MS__);
  } else if (ahead >= 2) {
    // The next ticket has not entered yet: the turns between it and me cannot end sooner.
    sleepFirstMs = Math.min((ahead - 1) * turnMs * __FAR_SLEEP_SHARE__, __MAX_SLEEP_MS__);
  }
}
// The marker to look for: the lane's head as last seen, or on the first look my predecessor.
const head = before && before.ticket === ticket ? before.head : ticket - ctx.slots;
return {
  ticket, lane, head, fast,
  skip_read: fast || sleepFirstMs !== null,
  last_out: lastOut, ahead, sleep_first_ms: sleepFirstMs,
  before,
  read: [
    { key: `${ctx.base}:served:${lane}` },
    { key: `${ctx.base}:meta:${lane}` },
    { key: `${ctx.base}:gone:${head}` },
    { key: `${ctx.base}:hold_ms` },
    // The counter of the format before engine v2: its holder keeps the scope (README Upgrading).
    { key: ctx.base },
  ],
};
