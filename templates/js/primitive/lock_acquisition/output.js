// What the caller of lock_acquisition gets back: the lock it holds, and the keys it lives in.
// Pass ticket and slots on to lock_release and lock_renew: they then read one lane only.
const ctx = << context >>;
const held = << decision >>;
return {
  acquired: true,
  lock_id: held.lock_id,
  scope: held.scope,
  ticket: held.ticket,
  fence: held.fence,
  slots: held.slots,
  lane: held.lane,
  ticket_key: `${ctx.base}<< keys.ticket >>`,
  holder_key: `${ctx.base}<< keys.holder >>${held.ticket}`,
  meta_key: `${ctx.base}<< keys.meta >>${held.lane}`,
  served_key: `${ctx.base}<< keys.served >>${held.lane}`,
  index_key: ctx.index_key,
  locked_at: held.locked_at,
  expires_at: held.expires_at,
  ttl_seconds: held.ttl_seconds,
  execution_id: held.execution_id,
  workflow_id: held.workflow_id,
  workflow_name: held.workflow_name,
  waited_ms: held.locked_ms - ctx.started_ms,
};
