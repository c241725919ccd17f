<% import 'shared/records.js' as records %>
// @n8n-evol-I:primitive — error_handler_lock_cleanup: release the locks the failed execution still holds,
// and mark the tickets it still waited with gone.
// GET replaces each item, so pair its answers with the lock list by position. A lock is
// released as lock_release does it, in one SET node: its record (one per ticket) and the
// lane's copy marked released (a minute), then its lane advanced past its ticket, so that the
// next ticket in line holds at once.
const requests = $('Build Scope List').all();
<< records.reader() >>
const writes = [];
$input.all().forEach((answer, index) => {
  const request = requests[index].json;
  const meta = parse(answer.json.lock_meta);
  // Ours only if the record still holds the lane (not released) and names the failed
  // workflow and execution (execution ids repeat across n8n instances that share a Redis),
  // and the lock_id and ticket the index listed: a lock the execution released, and another
  // execution took since, is left alone.
  const isOwned = meta && typeof meta === 'object' && !meta.released
    && Number.isInteger(meta.ticket)
    && String(meta.execution_id) === request.failed_execution_id
    && (!request.failed_workflow_id || String(meta.workflow_id) === String(request.failed_workflow_id))
    && (request.expected_lock_id === null || String(meta.lock_id) === request.expected_lock_id)
    && (request.expected_ticket === null || meta.ticket === request.expected_ticket);
  // A ticket the index lists without a record was drawn and never entered with: the
  // execution died waiting in line (the engine lists a waiter before its first sleep). Its
  // `gone` mark, as a caller that gives up writes it, lets the caller behind pass it at once
  // instead of after a grace (decide.js: a run of marked tickets goes in one write). A
  // record of any kind (held, released, withdrawn) means the ticket entered: not this case.
  if (meta === null && request.expected_ticket !== null) {
    const ticket = request.expected_ticket;
    const hour = new Date().toISOString().slice(0, 13).replace(/[-T]/g, '');
    writes.push({ json: {
      // `owned`: the ticket is the execution's (Owned? sends it to the SET node).
      ...request, owned: true, gone: true, ticket,
      set_key: `<< keys.lock >>${request.scope}<< keys.gone >>${ticket}`,
      set_value: String(Date.now()), set_ttl: << gone_min_ttl >>,
      // Counted by Count Heals as a waiter that died in line, not as a healed lock.
      healed_key: `<< keys.stats >>${hour}:crashed:${request.scope}`,
    } });
    return;
  }
  if (!isOwned) return;
  const lock = { ...request, owned: true, lock_id: meta.lock_id, ticket: meta.ticket, locked_at: meta.locked_at };
  const released = << records.released('meta.ticket', 'meta.lock_id', 'new Date().toISOString()', ', healed: true') >>;
  // A scope of lockScopes that the index did not list was read in its lane's copy: the copy
  // names the ticket whose record to release.
  const holderKey = request.holder_key ?? `<< keys.lock >>${request.scope}<< keys.holder >>${meta.ticket}`;
  writes.push({ json: { ...lock, set_key: holderKey, set_value: released, set_ttl: << released_ttl >> } });
  writes.push({ json: { ...lock, set_key: request.meta_key, set_value: released, set_ttl: << released_ttl >> } });
  writes.push({ json: { ...lock, set_key: request.served_key, set_value: String(meta.ticket), set_ttl: 0 } });
});
if (writes.length === 0) {
  const first = requests[0].json;
  return [{ json: { failed_execution_id: first.failed_execution_id, owned: false, reason: 'no lock is still held or waited for by the failed execution' } }];
}
return writes;
