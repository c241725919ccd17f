// Check the lock request and name its keys. Runs as a Set node expression (no task runner).
// n8n swallows an error thrown inside an expression (the node then fails with "Cannot convert
// undefined or null to object"), so a bad input is answered as { problem } for Lock Input
// Valid? to stop the execution with it.
try {
<< input >>
const text = (value) => (value === null || value === undefined ? '' : String(value).trim());
const whole = (name, value, fallback) => {
  if (value === null || value === undefined || value === '') return fallback;
  const number = Number(value);
  if (!Number.isFinite(number) || number < 1) {
    throw new Error(`n8nlock lock: ${name} must be a number >= 1, got ${JSON.stringify(value)}`);
  }
  return Math.ceil(number);
};
const scope = text(input.scope);
if (!scope) throw new Error('n8nlock lock: scope is empty (an empty scope would lock nothing); check the scope you passed');
const ttl = whole('ttl_seconds', input.ttl_seconds, << default_ttl >>);
const maxWait = whole('max_wait_seconds', input.max_wait_seconds, << default_max_wait >>);
const slots = whole('max_concurrent', input.slots, 1);
const wait = !(input.wait === false || input.wait === 'false');
// The overlap policy: what a caller does when the scope is busy. `wait` (the default) and
// `error` (wait_till_lock_released=false, --fail-fast) as before; `skip` ends at once with a
// skipped answer; `buffer-one` waits when nobody else waits in its lane, else skips.
const policies = ['wait', 'error', 'skip', 'buffer-one'];
const policy = text(input.on_busy) || (wait ? 'wait' : 'error');
if (!policies.includes(policy)) {
  throw new Error(`n8nlock lock: on_busy must be one of ${policies.join(', ')}, got ${JSON.stringify(input.on_busy)}`);
}
const waits = policy === 'wait' || policy === 'buffer-one';
// A duplicate guard (add-dedupe): the lock's scope is the key's, and a success leaves a mark
// for the window (`n8nlock:done:<scope>`, written by the release) that turns later callers
// away as duplicates.
const dedupeWindow = input.dedupe_window === null || input.dedupe_window === undefined || input.dedupe_window === ''
  ? null : whole('dedupe window_seconds', input.dedupe_window, null);
const dedupe = dedupeWindow === null ? null : {
  key: text(input.dedupe_key), window_seconds: dedupeWindow, done_key: `<< keys.done >>${scope}`,
};
const executionId = text(input.execution_id) || String($execution.id);
const workflowId = text(input.workflow_id) || 'unknown';
const now = Date.now();
const hour = new Date(now).toISOString().slice(0, 13).replace(/[-T]/g, '');
const base = `<< keys.lock >>${scope}`;
return {
  problem: null,
  scope, base, slots, wait: waits, on_busy: policy, dedupe,
  ttl_seconds: ttl,
  max_wait_seconds: maxWait,
  execution_id: executionId,
  workflow_id: workflowId,
  workflow_name: text(input.workflow_name) || 'unknown',
<% if park %>
  // Where a parked waiter is resumed (Lock Enqueue lists it, the waiter ahead POSTs to it).
  resume_url: text(input.resume_url),
<% endif %>
  lock_id: text(input.lock_id) || `${executionId}-${now.toString(36)}-${Math.random().toString(36).slice(2, 10)}`,
  // Also the anchor of the safe-entry window (verify.js): earlier than the ticket's INCR.
  started_ms: now,
  deadline_ms: now + maxWait * 1000,
  stats_prefix: `<< keys.stats >>${hour}:`,
  index_key: `<< keys.index >>${workflowId}:${executionId}`,
  // A skip mark must outlive any stall of the skipped caller shorter than its lease.
  gone_ttl: Math.max(ttl, << gone_min_ttl >>),
  // One INCR node: a count, for a mutex the fast-path value that tells whether the ticket is
  // next (keys.py), and the ticket (a scalar, never expires: it is also the fence), last: a
  // node that fails part-way and runs again (engine.RETRY) then draws one ticket, not two. A
  // mutex caller that may wait also reads the hold average this way (+1 ms per arrival until
  // the next release sets it again), so that one far back in line sleeps before its first read.
  incr: [
    { key: `<< keys.stats >>${hour}:arrived:${scope}`, expire: true, ttl: << stats_ttl >> },
    ...(slots === 1 ? [{ key: `${base}<< keys.fast >>`, expire: false, ttl: 1 }] : []),
    ...(slots === 1 && policy === 'wait' ? [{ key: `${base}<< keys.hold >>`, expire: false, ttl: 1 }] : []),
    { key: `${base}<< keys.ticket >>`, expire: false, ttl: 1 },
  ],
};
} catch (error) {
  return { problem: String(error && error.message ? error.message : error) };
}
