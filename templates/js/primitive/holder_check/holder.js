<% import 'shared/records.js' as records %>
// Whose lock is it? 'held': the lock_id's record holds its lane; 'released': its record says
// released (a second release); 'foreign': another lock holds the lane(s) read; 'absent': none.
const ctx = << context >>;
const values = << read >>.map((item) => item.json.value);
const holdRaw = values.pop();
const ownRaw = ctx.ticket === null ? undefined : values.pop();
<< records.reader() >>
const copies = values
  .map((raw, index) => { const record = parse(raw); return record === null ? null : { ...record, lane: ctx.lanes[index] }; })
  .filter((record) => record !== null);
// The ticket's own record decides (a lane's copy may be older). Without a ticket, the lane's
// copy names it; of several with the lock_id (a caller skipped while it stalled left one in
// another lane) the latest ticket is the lock.
const own = ownRaw === undefined ? null : parse(ownRaw);
const ownRecord = own !== null && own.ticket === ctx.ticket ? { ...own, lane: ctx.lanes[0] } : null;
const mine = ctx.ticket === null
  ? copies.filter((r) => r.lock_id === ctx.lock_id).sort((a, b) => (b.ticket ?? 0) - (a.ticket ?? 0))[0]
  : ownRecord !== null && ownRecord.lock_id === ctx.lock_id ? ownRecord : undefined;
const records = ownRecord !== null ? [ownRecord, ...copies] : copies;
const other = records.find((r) => !r.released && r !== mine && !(mine && r.lock_id === mine.lock_id));
let outcome = 'absent';
if (mine) outcome = mine.released ? 'released' : 'held';
else if (other) outcome = 'foreign';
const holder = other ?? {};
return {
  outcome,
  scope: ctx.scope,
  lock_id: ctx.lock_id,
  held: outcome === 'held' ? { ...mine, hold_average_ms: holdRaw ? Number(holdRaw) : null, wait_stats: [] } : null,
  holder: {
    lock_id: holder.lock_id ?? 'unknown',
    workflow_id: holder.workflow_id ?? 'unknown',
    workflow_name: holder.workflow_name ?? 'unknown',
    execution_id: holder.execution_id ?? 'unknown',
    locked_at: holder.locked_at ?? 'unknown',
  },
};
