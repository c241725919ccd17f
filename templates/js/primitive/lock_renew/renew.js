<% import 'shared/records.js' as records %>
// Extend the lock only while its record still names the caller's lock_id, and not inside the
// release margin: this close to expiry a successor may hold the lane by the time the SET lands.
const ctx = << context >>;
const check = << check >>;
const answer = { scope: ctx.scope, lock_id: ctx.lock_id };
const refuse = (reason, extra) => ({ renewed: false, reason, ...answer, ...extra, set: [] });
if (check.outcome === 'absent' || check.outcome === 'released') return refuse('released', {});
if (check.outcome === 'foreign') {
  return refuse('not-owner', { holder_lock_id: check.holder.lock_id, holder_execution_id: check.holder.execution_id });
}
const now = Date.now();
const { lane, hold_average_ms: average, wait_stats: stats, ...record } = check.held;
if (now >= record.expires_ms - << release_margin_ms >>) return refuse('expired', { expires_at: record.expires_at });
const ttl = ctx.ttl_seconds ?? (Number(record.ttl_seconds) || << default_ttl >>);
const expiresMs = now + ttl * 1000;
const renewed = {
  ...record,
  ttl_seconds: ttl,
  expires_at: new Date(expiresMs).toISOString(),
  expires_ms: expiresMs,
  renewed_at: new Date(now).toISOString(),
};
const entry = << records.index_entry('record.lock_id', 'record.ticket', 'record.slots') >>;
return {
  renewed: true, ...answer, expires_at: renewed.expires_at, ttl_seconds: ttl,
  // One SET node writes them all: the record with its new TTL (the ticket's record first, then
  // the lane's copy), and the cleanup index entry.
  set: [
    { key: `${ctx.base}<< keys.holder >>${record.ticket}`, type: 'string', value: JSON.stringify(renewed), ttl },
    { key: `${ctx.base}<< keys.meta >>${lane}`, type: 'string', value: JSON.stringify(renewed), ttl },
    { key: `<< keys.index >>${record.workflow_id}:${record.execution_id}`, type: 'hash', value: JSON.stringify({ [ctx.scope]: entry }), ttl: ttl + 3600 },
  ],
};
