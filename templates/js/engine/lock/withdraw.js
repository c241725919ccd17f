// A caller that finds its ticket skipped after writing its record holds nothing: it marks its
// own record left (no other caller's key is touched), and draws a new ticket at the back.
const held = << decision >>;
const now = Date.now();
return {
  set: [
    { key: `${held.base}<< keys.holder >>${held.ticket}`, type: 'string', value: JSON.stringify({ released: true, withdrawn: true, ticket: held.ticket, lock_id: held.lock_id, released_at: new Date(now).toISOString() }), ttl: << released_ttl >> },
  ],
  incr: [{ key: `${held.base}<< keys.ticket >>`, expire: false, ttl: 1 }],
};
