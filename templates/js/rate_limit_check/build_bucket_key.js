// @n8n-evol-I:primitive — rate_limit_check: the fixed-window bucket this call counts in.
const input = $input.first().json;
const scope = input.scope === null || input.scope === undefined ? '' : String(input.scope).trim();
if (!scope) throw new Error('rate_limit_check: scope is required');

function atLeastOne(name, value) {
  const number = Number(value);
  if (value === null || value === undefined || value === '' || !Number.isFinite(number) || number < 1) {
    throw new Error(`rate_limit_check: ${name} must be a number >= 1, got ${JSON.stringify(value)}`);
  }
  return Math.floor(number);
}

const limit = atLeastOne('limit', input.limit);
const windowSeconds = atLeastOne('windowSeconds', input.windowSeconds);
const bucket = Math.floor(Date.now() / (windowSeconds * 1000));

return [{ json: { scope, limit, windowSeconds, key: `n8n-ratelimit-${scope}-${bucket}` } }];
