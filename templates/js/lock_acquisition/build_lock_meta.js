// @n8n-evol-I:primitive — lock_acquisition: the ownership record, stamped at acquisition.
const ctx = $('Build Lock Context').first().json;
// The first INCR is the fence's: a number that grows with every holder of the scope.
const fence = Number($input.first().json[ctx.fence_key]);
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
  ttl_seconds: ctx.ttl_seconds,
};

// One SET node writes both, meta first: the ownership record, and this execution's entry in
// the index the cleanup handler reads (a hash, scope -> lock_id; HSET keeps other entries).
return [
  { json: { meta, set_key: ctx.meta_key, set_type: 'string', set_value: JSON.stringify(meta), set_ttl: ctx.ttl_seconds } },
  { json: { meta, set_key: ctx.index_key, set_type: 'hash', set_value: JSON.stringify({ [ctx.scope]: ctx.lock_id }), set_ttl: ctx.index_ttl_seconds } },
];
