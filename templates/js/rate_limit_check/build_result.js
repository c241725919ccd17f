// @n8n-evol-I:primitive — rate_limit_check: allowed while the bucket's count is within the limit.
const request = $('Build Bucket Key').first().json;
const count = Number(Object.values($input.first().json)[0]);

return [{ json: { allowed: count <= request.limit, scope: request.scope, count, limit: request.limit } }];
