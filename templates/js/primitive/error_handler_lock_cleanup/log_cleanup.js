// @n8n-evol-I:primitive — error_handler_lock_cleanup: one summary item for the execution log.
// Count Heals answers with its counters; the healed locks are what List Healed passed on.
const source = $('Count Heals').isExecuted ? $('List Healed').all() : $input.all();
const items = source.map((item) => item.json);
const owned = items.filter((item) => item.owned === true);
const gone = items.filter((item) => item.gone === true);
const done = [
  ...(owned.length > 0 ? [`released ${owned.length} lock(s) of the failed execution`] : []),
  ...(gone.length > 0 ? [`marked ${gone.length} ticket(s) it waited with gone (scope ${gone.map((item) => item.scope).join(', ')})`] : []),
];
const reason = done.length > 0 ? done.join('; ') : items[0]?.reason ?? 'nothing to clean';
console.log(`n8nlock cleanup: ${reason}`);

return [{
  json: {
    cleaned: owned.length > 0,
    cleaned_count: owned.length,
    scopes: owned.map((item) => item.scope),
    passed: gone.map((item) => ({ scope: item.scope, ticket: item.ticket })),
    reason,
    failed_execution_id: items[0]?.failed_execution_id ?? null,
  },
}];
