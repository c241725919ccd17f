// @n8n-evol-I:primitive — lock_acquisition: the ownership record, stamped at acquisition.
const ctx = $('Build Lock Context').first().json;
// INCR on the fence key (which never expires) gives a number that grows with every holder.
const fence = Number(Object.values($input.first().json)[0]);
const now = Date.now();
const meta = {
  lock_id: ctx.lock_id,
  scope: ctx.scope,
  workflow_id: ctx.workflow_id,
  workflow_name: ctx.workflow_name,
  execution_id: ctx.execution_id,
  fence,
  locked_at: new Date(now).toISOString(),
  expires_at: new Date(now + ctx.ttl_seconds * 1000).toISOString(),
};

return [{ json: { meta, meta_json: JSON.stringify(meta) } }];
