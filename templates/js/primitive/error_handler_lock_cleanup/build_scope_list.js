// @n8n-evol-I:primitive — error_handler_lock_cleanup: one item per lock the failed execution may hold.
// The execution's index names every scope it locked, dynamic ones included, with the lock's
// ticket and slots (so its lane). `n8nlock push` writes the env's lockScopes here too: those
// are looked up in lane 0, for locks taken before the index existed.
const LOCK_SCOPES = {{@:env:lockScopes}};
const failed = $('Prepare Cleanup').first().json;
const index = $input.first().json.lock_index;
const listed = index && typeof index === 'object' ? index : {};
const registered = Array.isArray(LOCK_SCOPES)
  ? LOCK_SCOPES.filter((scope) => typeof scope === 'string' && scope.trim())
  : [];
const hour = new Date().toISOString().slice(0, 13).replace(/[-T]/g, '');

function entryOf(value) {
  // scope -> JSON {lock_id, ticket, slots, format}: the lock's record is the ticket's.
  try {
    const entry = JSON.parse(value);
    if (entry && typeof entry === 'object' && Number.isInteger(entry.ticket)) {
      const slots = Number.isInteger(entry.slots) && entry.slots > 0 ? entry.slots : 1;
      return { lock_id: String(entry.lock_id), ticket: entry.ticket, lane: entry.ticket % slots };
    }
  } catch (error) {
    // not an entry this engine wrote
  }
  return null;
}

const locks = new Map(Object.entries(listed).map(([scope, value]) => [scope, entryOf(value)]).filter(([, entry]) => entry !== null));
for (const scope of registered) {
  if (!locks.has(scope)) locks.set(scope, { lock_id: null, ticket: null, lane: 0 });
}
if (locks.size === 0) {
  const reason = 'the failed execution held no lock (none indexed, no lockScopes registered)';
  console.log(`n8nlock cleanup: ${reason}`);
  return [{ json: { ...failed, cleanup_terminal: true, reason } }];
}

return [...locks].map(([scope, entry]) => ({
  json: {
    ...failed,
    scope,
    lane: entry.lane,
    meta_key: `<< keys.lock >>${scope}<< keys.meta >>${entry.lane}`,
    // The ticket's record when the index listed it, else the lane's copy (lockScopes).
    record_key: entry.ticket !== null ? `<< keys.lock >>${scope}<< keys.holder >>${entry.ticket}` : `<< keys.lock >>${scope}<< keys.meta >>${entry.lane}`,
    holder_key: entry.ticket !== null ? `<< keys.lock >>${scope}<< keys.holder >>${entry.ticket}` : null,
    served_key: `<< keys.lock >>${scope}<< keys.served >>${entry.lane}`,
    expected_lock_id: entry.lock_id,
    expected_ticket: entry.ticket,
    healed_key: `<< keys.stats >>${hour}:healed:${scope}`,
    cleanup_terminal: false,
  },
}));
