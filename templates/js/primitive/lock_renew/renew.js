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
if (check.outcome === 'expired') return refuse('expired', { expires_at: check.old.expires_at });
if (check.outcome === 'held-old') {
  // The caller's lock of the format before engine v2 (taken before an upgrade's push): renew
  // it the old way, the record and the counter with the new TTL.
  const oldTtl = ctx.ttl_seconds ?? (Number(check.old.ttl_seconds) || << default_ttl >>);
  const oldExpires = new Date(now + oldTtl * 1000).toISOString();
  return {
    renewed: true, ...answer, expires_at: oldExpires, ttl_seconds: oldTtl,
    set: [
      { key: `${ctx.base}<< keys.v1_meta >>`, type: 'string', value: JSON.stringify({ ...check.old, expires_at: oldExpires }), ttl: oldTtl },
      { key: ctx.base, type: 'string', value: '1', ttl: oldTtl },
    ],
  };
}
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
const entry = JSON.stringify({ lock_id: record.lock_id, ticket: record.ticket, slots: record.slots, ...(record.format === undefined ? {} : { format: record.format }) });
return {
  renewed: true, ...answer, expires_at: renewed.expires_at, ttl_seconds: ttl,
  // One SET node writes them all: the record with its new TTL (format 3: the ticket's record
  // first, then the lane's copy), and the cleanup index entry.
  set: [
    ...(record.format === undefined ? [] : [{ key: `${ctx.base}<< keys.holder >>${record.ticket}`, type: 'string', value: JSON.stringify(renewed), ttl }]),
    { key: `${ctx.base}<< keys.meta >>${lane}`, type: 'string', value: JSON.stringify(renewed), ttl },
    { key: `<< keys.index >>${record.workflow_id}:${record.execution_id}`, type: 'hash', value: JSON.stringify({ [ctx.scope]: entry }), ttl: ttl + 3600 },
  ],
};
