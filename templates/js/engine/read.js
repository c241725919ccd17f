// What to read on this look at the line: one GET node reads every key in one connection.
const ctx = __CONTEXT__;
const before = __DECIDED__ ? __DECISION__ : null;
const ticket = before && before.state !== 'requeue'
  ? before.ticket
  : Number(__TICKET__.json[`${ctx.base}:ticket`]);
const lane = ticket % ctx.slots;
// The marker to look for: the lane's head as last seen, or on the first look my predecessor.
const head = before && before.ticket === ticket ? before.head : ticket - ctx.slots;
return {
  ticket, lane, head,
  before,
  read: [
    { key: `${ctx.base}:served:${lane}` },
    { key: `${ctx.base}:meta:${lane}` },
    { key: `${ctx.base}:gone:${head}` },
    { key: `${ctx.base}:hold_ms` },
    // The counter of the format before engine v2: its holder keeps the scope (README Upgrading).
    { key: ctx.base },
  ],
};
