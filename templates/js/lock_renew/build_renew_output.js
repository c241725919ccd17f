// @n8n-evol-I:primitive — lock_renew: what the caller gets back.
const verdict = $input.first().json;
const { set_key, set_type, set_value, set_ttl, ...answer } = verdict;
return [{ json: answer }];
