// @n8n-evol-I:primitive — error_handler_lock_cleanup: one item per healed lock or passed ticket, for its counter.
// The SET node wrote two or three keys per lock (its lane first); count each lock once. A
// waiting ticket it marked gone is one key, counted as `crashed`.
return $input.all()
  .filter((item) => item.json.set_key === item.json.served_key || item.json.gone === true)
  .map((item) => ({ json: { scope: item.json.scope, lock_id: item.json.lock_id ?? item.json.expected_lock_id, ticket: item.json.ticket, healed_key: item.json.healed_key, owned: item.json.gone !== true, gone: item.json.gone === true, failed_execution_id: item.json.failed_execution_id } }));
