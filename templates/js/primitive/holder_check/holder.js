// Whose lock is it? 'held': the lock_id's record holds its lane; 'released': its record says
// released (a second release); 'foreign': another lock holds the lane(s) read; 'absent': none;
// 'held-old' and 'expired': the caller's lock of the old format (below).
const ctx = << context >>;
const values = << read >>.map((item) => item.json.value);
const holdRaw = values.pop();
const oldRaw = values.pop();
const ownRaw = ctx.ticket === null ? undefined : values.pop();
const parse = (raw) => {
  if (raw === null || raw === undefined || raw === '') return null;
  try {
    const record = typeof raw === 'string' ? JSON.parse(raw) : raw;
    if (record && typeof record === 'object') return record;
  } catch (error) {
    // an unreadable record is someone's: report it, change nothing
  }
  return { lock_id: String(raw), workflow_name: 'unknown (unreadable record)' };
};
const copies = values
  .map((raw, index) => { const record = parse(raw); return record === null ? null : { ...record, lane: ctx.lanes[index] }; })
  .filter((record) => record !== null);
// Format 3: the ticket's own record decides (a lane's copy may be older). Without a ticket,
// the lane's copy names it; of several with the lock_id (a caller skipped while it stalled
// left one in another lane) the latest ticket is the lock.
const own = ownRaw === undefined ? null : parse(ownRaw);
const ownRecord = own !== null && own.ticket === ctx.ticket ? { ...own, lane: ctx.lanes[0] } : null;
const format2 = (r) => r.format === undefined;
const candidates = copies
  .filter((r) => r.lock_id === ctx.lock_id && (ctx.ticket === null || (r.ticket === ctx.ticket && format2(r))))
  .sort((a, b) => (b.ticket ?? 0) - (a.ticket ?? 0));
let mine = candidates[0];
if (ctx.ticket !== null && ownRecord !== null) mine = ownRecord.lock_id === ctx.lock_id ? ownRecord : undefined;
const records = ownRecord !== null ? [ownRecord, ...copies] : copies;
const other = records.find((r) => !r.released && r !== mine && !(mine && r.lock_id === mine.lock_id));
// A lock of the format before engine v2 that is the caller's (its record at `:meta`):
// 'held-old', released the old way (delete the counter and the record) unless it is about
// to expire, when its TTL ends it (a delete then could hit a successor's).
const old = parse(oldRaw);
const oldMine = !mine && ctx.ticket === null && old !== null && old.lock_id === ctx.lock_id;
const oldExpiring = oldMine && Date.now() >= Date.parse(old.expires_at) - << release_margin_ms >>;
let outcome = 'absent';
if (mine) outcome = mine.released ? 'released' : 'held';
else if (oldMine) outcome = oldExpiring ? 'expired' : 'held-old';
else if (other) outcome = 'foreign';
const holder = other ?? {};
return {
  outcome,
  scope: ctx.scope,
  lock_id: ctx.lock_id,
  old: oldMine ? old : null,
  delete: outcome === 'held-old' ? [{ key: ctx.base }, { key: `${ctx.base}<< keys.v1_meta >>` }] : [],
  held: outcome === 'held' ? { ...mine, hold_average_ms: holdRaw ? Number(holdRaw) : null, wait_stats: [] } : null,
  holder: {
    lock_id: holder.lock_id ?? 'unknown',
    workflow_id: holder.workflow_id ?? 'unknown',
    workflow_name: holder.workflow_name ?? 'unknown',
    execution_id: holder.execution_id ?? 'unknown',
    locked_at: holder.locked_at ?? 'unknown',
  },
};
