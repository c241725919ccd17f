// @n8n-evol-I:primitive — lock_release: check the request and name the keys.
const input = $input.first().json;
const scope = input.scope === null || input.scope === undefined ? '' : String(input.scope).trim();
if (!scope) throw new Error('lock_release: scope is required');
const key = `n8n-lock-${scope}`;

return [{
  json: {
    scope,
    key,
    meta_key: `${key}:meta`,
    lock_id: input.lock_id === null || input.lock_id === undefined ? '' : String(input.lock_id),
  },
}];
