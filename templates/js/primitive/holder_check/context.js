// Check a release or renewal request and name what to read: the lane's copy of its holder's
// record (of every lane when the caller does not pass its ticket), the lock's own record (one
// per ticket) when the caller passes its ticket, then the average hold time.
const input = << input >>;
const text = (value) => (value === null || value === undefined ? '' : String(value).trim());
const scope = text(input.scope);
if (!scope) throw new Error('<< primitive >>: scope is required');
const lockId = text(input.lock_id);
if (<< lock_id_required >> && !lockId) {
  throw new Error('<< primitive >>: lock_id is required (the lock_id lock_acquisition returned)');
}
const whole = (name, value) => {
  if (!text(value)) return null;
  const number = Number(value);
  if (!Number.isFinite(number) || number < 1) {
    throw new Error(`<< primitive >>: ${name} must be a number >= 1, got ${JSON.stringify(value)}`);
  }
  return Math.ceil(number);
};
const ttl = whole('ttl_seconds', input.ttl_seconds);
const slots = whole('max_concurrent', input.max_concurrent) ?? 1;
const ticket = text(input.ticket) && Number.isInteger(Number(input.ticket)) ? Number(input.ticket) : null;
const base = `<< keys.lock >>${scope}`;
const lanes = ticket === null ? Array.from({ length: slots }, (_, lane) => lane) : [ticket % slots];
return {
  scope, base, slots, ticket, lanes,
  lock_id: lockId,
  ttl_seconds: ttl,
  read: [
    ...lanes.map((lane) => ({ key: `${base}<< keys.meta >>${lane}` })),
    ...(ticket === null ? [] : [{ key: `${base}<< keys.holder >>${ticket}` }]),
    { key: `${base}<< keys.hold >>` },
  ],
};
