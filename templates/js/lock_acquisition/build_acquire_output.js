// @n8n-evol-I:primitive — lock_acquisition: what the caller gets back.
const ctx = $('Build Lock Context').first().json;
const meta = $input.first().json.meta;

return [{
  json: {
    acquired: true,
    count: 1,
    scope: ctx.scope,
    lock_id: ctx.lock_id,
    key: ctx.key,
    meta_key: ctx.meta_key,
    workflow_id: ctx.workflow_id,
    workflow_name: ctx.workflow_name,
    execution_id: ctx.execution_id,
    locked_at: meta.locked_at,
    expires_at: meta.expires_at,
    fence: meta.fence,
  },
}];
