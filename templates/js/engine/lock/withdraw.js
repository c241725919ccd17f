<% import 'shared/records.js' as records %>
// A caller that finds its ticket skipped after writing its record holds nothing: it marks its
// own record left (no other caller's key is touched), and draws a new ticket at the back.
const held = << decision >>;
const now = Date.now();
return {
  set: [
    { key: `${held.base}<< keys.holder >>${held.ticket}`, type: 'string', value: << records.released('held.ticket', 'held.lock_id', 'new Date(now).toISOString()', ', withdrawn: true') >>, ttl: << released_ttl >> },
  ],
  incr: [{ key: `${held.base}<< keys.ticket >>`, expire: false, ttl: 1 }],
};
