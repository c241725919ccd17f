// The debounce's model check (`explore.mjs --debounce NAME`): the REAL nodes of a debounce chain
// (tests/model/graph.py dumps what primitives/debounce.py generates, wired as add-debounce
// wires it) run by the same mini n8n (n8n_subset.mjs) against the same simulated Redis, many
// events interleaved one atomic step at a time, with the lock explorer's stalls (of a whole
// process, or of Redis), failing Redis commands, nodes that run again and crashes.
//
// A schedule: events (each one execution of the wrapped workflow, whose trigger gives 1 or 2
// items {key, ev, part}) on one or two keys, arriving in bursts (gaps below and above Q); the
// body of a runner takes `hold` ms (sometimes longer than the stale limit, so that the
// documented take-over overlap happens). When every execution has ended, one *sweeper* event
// per key arrives, a stale limit later: a burst whose waiter died runs with the key's next
// event (docs/debounce.md), so the check of "never lost" is made once the schedule settled.
//
// Checks:
// - at every body: its items come from one key; each event's items are whole, together and in
//   order; the events are in ticket (arrival) order; no event is in a second body;
// - at every look: at most one live execution waits for a burst, unless one of them took it
//   over (the documented overlap: counted, not a violation);
// - at the end: every event whose execution did not die or fail was answered; every answered
//   event is in exactly one body; an event never answered (it died first) is in one at most;
//   without crashes and failing commands, every event's body began within M + Q + the longest
//   body + the stalls + slack of its arrival;
// - no execution fails (an expression error, a bad Redis call) but by an injected fault.
// A spec's `faults` ({caller, atNode, item, occurrence, kind: 'fail' | 'after'}) fail that
// step of that node (before its effect, or after it, its answer lost), as --redis-faults does
// at random.
// --faults-retried-only: failing commands and stalls inside an expression hit only nodes that
// n8n runs again (Retry On Fail), not the rendezvous INCRs, whose failure is a death.

import { Workflow, Execution } from './n8n_subset.mjs';
import { EPOCH, INT, PICK, Redis, exploreAll, mix, mulberry32, randomProcs, randomStalls, report } from './core.mjs';

// Steps where a stall or a crash matters most: between a rendezvous and what it decides.
const SITES = [
  ['Debounce Store Event', 1], ['Debounce Claim', 1], ['Debounce After', 1], ['Debounce Read Claim', 1],
  ['Debounce In?', 1], ['Debounce Answer', 1], ['Debounce Read Watch', 1], ['Debounce Verdict', 1], ['Debounce Take Over', 1], ['Debounce Beacon', 1],
  ['Debounce Read Seq', 1], ['Debounce Cut', 1], ['Debounce Cut Log', 1], ['Debounce Read Cuts', 1],
  ['Debounce Claim Events', 4], ['Debounce Read Claims', 4], ['Debounce Pass', 1], ['Debounce Read Events', 3],
  ['Debounce Read Walk', 2], ['Debounce Ran', 3], ['Debounce Burst', 1], ['Debounce Next', 1],
];
const KEYS = ['a', 'b'];

function site(rng) {
  const [node, items] = PICK(rng, SITES);
  return { atNode: node, item: Math.floor(rng() * items), occurrence: rng() < 0.7 ? 0 : 1 + Math.floor(rng() * 3) };
}

export function randomDebounceSpec(opts, d, seed, index) {
  const rng = mulberry32(mix(seed, index, 'debounce'));
  const n = INT(rng, opts.callers);
  const keyCount = INT(rng, opts.keys);
  const procCount = Math.min(n, INT(rng, opts.procs));
  const procs = randomProcs(rng, procCount, opts);
  const q = d.quiet_seconds * 1000;
  // Gaps: inside a burst (below Q), around Q, between bursts (above Q), or at once.
  const gap = () => PICK(rng, [
    () => 0, () => rng() * q * 0.7, () => rng() * q * 0.7, () => q * (0.85 + rng() * 0.3), () => q * (1.2 + rng() * 2),
  ])();
  let t = 0;
  const callers = Array.from({ length: n }, (_, i) => {
    if (i > 0) t += gap();
    return {
      proc: i < procCount ? i : Math.floor(rng() * procCount),
      key: KEYS[Math.floor(rng() * keyCount)],
      items: rng() < 0.2 ? 2 : 1,
      arrival: Math.round(t),
      hold: Math.round(opts.holdMs ? opts.holdMs[0] + rng() * (opts.holdMs[1] - opts.holdMs[0])
        : rng() < 0.85 ? 10 + rng() * 400 : 400 + rng() * 8000),
      rng: mix(seed, index, 'event', i),
    };
  });
  const stalls = randomStalls(rng, n, opts, site, 30_000);
  const crashes = Array.from({ length: INT(rng, opts.crashes) }, () => ({
    caller: Math.floor(rng() * n),
    ...(rng() < opts.siteStalls ? site(rng) : { atStep: Math.floor(rng() * opts.stallAtMax) }),
  }));
  return { debounce: opts.debounce, seed, index, procs, callers, stalls, crashes };
}

function brief(value) {
  if (value && typeof value === 'object') {
    const out = {};
    for (const f of ['state', 'position', 's', 'c', 'cut', 'reason', 'next', 'tickets', 'take_key']) if (value[f] !== undefined) out[f] = value[f];
    if (Array.isArray(value.items)) out.items = value.items.map((i) => `${i.ev}.${i.part}`);
    return out;
  }
  if (typeof value === 'string' && value.length > 100) return `${value.slice(0, 97)}...`;
  return value;
}

const shortKey = (key) => (typeof key === 'string' ? key.replace(/^n8nlock:debounce2?:model:/, '') : key);

export function runDebounceSchedule(spec, graphs, opts) {
  const d = graphs[spec.debounce];
  const workflow = new Workflow([d.chain]);
  const afterBody = { entry: d.after_body, exits: d.chain.exits };
  let T = 0;
  const redis = new Redis(() => T);
  const trace = [];
  const fullTrace = opts.trace ? [] : null;
  const procs = spec.procs.map((p) => ({ ...p, stalledUntil: 0 }));
  const stats = {
    steps: 0, done: 0, crashed: 0, failed: 0, events: 0, answered: 0, bodies: 0, redraws: 0,
    takeAttempts: 0, takeovers: 0, overlaps: 0, cuts: 0, lostCuts: 0, retries: 0, redisFaults: 0,
    insideFaults: 0, sweeperBodies: 0, maxLatencyMs: 0, maxAwake: 0, recovered: 0, endMs: 0,
  };
  const log = (entry) => {
    const row = { t: Math.round(T * 10) / 10, ...entry };
    trace.push(row);
    if (trace.length > opts.traceLength) trace.shift();
    if (fullTrace) fullTrace.push(row);
  };
  const violations = [];
  const violate = (kind, detail, who) => {
    violations.push({ kind, detail, at_ms: Math.round(T), caller: who?.id, step: stats.steps, deaths: [...deaths], trace: [...trace] });
  };
  const deaths = []; // `<node>#<item>` (or the state) where each execution died, in order
  const waiters = new Map(); // `${key}|${s}` -> Set of callers waiting for that burst
  const callers = [];

  function makeCaller(c, index, sweeper) {
    const rng = mulberry32(c.rng);
    const proc = procs[c.proc];
    const caller = {
      index, id: sweeper ? `sweep-${c.key}` : `c${index}`, spec: c, proc, procIndex: c.proc, rng,
      state: 'new', steps: 0, readyAt: c.arrival, ticket: null, answered: null, bodies: 0,
      firstBodyAt: null, endedAt: null, pending: null, sites: new Map(), failNext: null,
      stalledMs: 0, via: null, waitingFor: null, lastNext: null, sweeper,
    };
    caller.now = () => Math.floor(EPOCH + proc.offset + T * proc.rate);
    caller.exec = new Execution(workflow, {
      executionId: String(1000 + index),
      now: caller.now,
      random: rng,
      redis,
      observe: (event) => observe(caller, event),
      resume: () => 404,
      fault: (name) => {
        const kind = caller.failNext;
        caller.failNext = null;
        if (kind) return kind;
        const planned = (spec.faults ?? []).find((f) => !f.done && f.caller === caller.index && f.atNode === name && (caller.sites.get(`${name}#${f.item ?? 0}`) ?? 0) === (f.occurrence ?? 0) + 1);
        if (planned) {
          planned.done = true;
          stats.redisFaults += 1;
          return planned.kind;
        }
        if (opts.retriedOnly && workflow.node(name).retryOnFail !== true) return null;
        if (!sweeper && opts.redisFaults > 0 && workflow.node(name).type === 'n8n-nodes-base.redis' && caller.rng() < opts.redisFaults) {
          stats.redisFaults += 1;
          return caller.rng() < 0.5 ? 'fail' : 'after';
        }
        return null;
      },
    });
    stats.events += 1;
    callers.push(caller);
    return caller;
  }

  const live = (c) => !['crashed', 'failed', 'done', 'error'].includes(c.state);

  function leaveWaiting(c) {
    if (c.waitingFor) waiters.get(c.waitingFor)?.delete(c);
    c.waitingFor = null;
  }

  function enterWaiting(c, s, via) {
    leaveWaiting(c);
    const id = `${c.spec.key}|${s}`;
    if (!waiters.has(id)) waiters.set(id, new Set());
    const set = waiters.get(id);
    set.add(c);
    c.waitingFor = id;
    c.waitVia = via;
    const awake = [...set].filter(live);
    stats.maxAwake = Math.max(stats.maxAwake, awake.length);
    if (awake.length > 1) {
      if (awake.some((x) => x.waitVia === 'take')) stats.overlaps += 1;
      else violate('two waiters for one burst', `burst ${id}: ${awake.map((x) => `${x.id} (${x.waitVia})`).join(' and ')} wait for it, none took it over`, c);
    }
  }

  function observe(c, event) {
    const entry = { c: c.id, p: `p${c.procIndex}`, clock: Math.round(c.now() - EPOCH), node: event.node, op: event.op };
    if (event.key !== undefined) entry.key = shortKey(event.key);
    if (event.value !== undefined) entry.value = brief(event.value);
    log(entry);
    const v = event.value;
    if (event.op === 'retry') stats.retries += 1;
    if (event.op === 'INCR' && event.node === 'Debounce Take Ticket') c.ticket = v;
    if (event.op === 'INCR' && event.node === 'Debounce Cut') {
      stats.cuts += 1;
      leaveWaiting(c);
    }
    if (event.op === 'expr' && v) {
      if (event.node === 'Debounce Verdict') {
        if (v.state === 'redraw') stats.redraws += 1; // engines before Debounce In?
        if (v.state === 'take') stats.takeAttempts += 1;
        c.via = v.state;
      }
      if (event.node === 'Debounce Answer') {
        if (c.answered !== null) violate('answered twice', `${c.id} answered ${c.answered} and ${v.position}`, c);
        c.answered = v.position;
        stats.answered += 1;
        if (v.position !== c.ticket || v.key !== c.spec.key) violate('wrong answer', `${c.id} (ticket ${c.ticket}, key ${c.spec.key}) answered ${JSON.stringify(v)}`, c);
      }
      if (event.node === 'Debounce Take' && v.mine === false) stats.lostCuts += 1;
      if (event.node === 'Debounce Watch') enterWaiting(c, v.s, c.via);
      if (event.node === 'Debounce Next') c.lastNext = v;
      if (event.node === 'Debounce Taken' && v.inherited?.length) stats.recovered += 1;
    }
    if (event.op === 'if' && event.node === 'Debounce In?' && v === false) stats.redraws += 1;
    if (event.op === 'if' && event.node === 'Debounce Took?' && v === true) {
      stats.takeovers += 1;
      c.via = 'take';
    }
    // A taker that found its burst cut already waits on as a taker (Debounce Taken's `took`).
    if (event.op === 'if' && event.node === 'Debounce Again?' && v === true) enterWaiting(c, c.lastNext.s, c.lastNext.took ? 'take' : 'next');
  }

  function finish(c, outcome, message) {
    c.state = outcome;
    c.endedAt = T;
    leaveWaiting(c);
    log({ c: c.id, p: `p${c.procIndex}`, op: outcome, value: brief(message ?? '') });
  }

  function body(c, items) {
    stats.bodies += 1;
    if (c.sweeper) stats.sweeperBodies += 1;
    const evs = [];
    const keysSeen = new Set(items.map((i) => i.key));
    if (keysSeen.size !== 1 || !keysSeen.has(c.spec.key)) violate('body mixes keys', `${c.id} (key ${c.spec.key}) ran items of keys ${[...keysSeen].join(', ')}`, c);
    for (const item of items) {
      const last = evs[evs.length - 1];
      if (!last || last.ev !== item.ev) evs.push({ ev: item.ev, parts: [item.part] });
      else last.parts.push(item.part);
    }
    const seen = new Set();
    for (const { ev, parts } of evs) {
      const e = callers[ev];
      if (seen.has(ev)) violate('an event split in a body', `${c.id}: the items of ${e.id} are not together: ${items.map((i) => `${i.ev}.${i.part}`).join(' ')}`, c);
      seen.add(ev);
      const want = Array.from({ length: e.spec.items }, (_, k) => k);
      if (JSON.stringify(parts) !== JSON.stringify(want)) violate('an event\'s items out of order', `${c.id}: ${e.id} gave parts ${parts}`, c);
      e.bodies += 1;
      if (e.bodies > 1) violate('event run twice', `${e.id} (ticket ${e.ticket}, answered ${e.answered}) is in a second body, run by ${c.id}`, c);
      if (e.firstBodyAt === null) e.firstBodyAt = T;
      stats.maxLatencyMs = Math.max(stats.maxLatencyMs, T - e.spec.arrival);
    }
    const tickets = evs.map(({ ev }) => callers[ev].ticket);
    if (tickets.some((t, k) => k > 0 && !(t > tickets[k - 1]))) violate('body out of ticket order', `${c.id}: events ${evs.map(({ ev }) => callers[ev].id).join(', ')} with tickets ${tickets.join(', ')}`, c);
    log({ c: c.id, p: `p${c.procIndex}`, op: 'body', value: `${evs.map(({ ev }) => `${callers[ev].id}#${callers[ev].ticket}`).join(' ')} (${c.spec.hold} ms)` });
  }

  function handleReturn(c, result) {
    if (result.exit === 'burst') {
      const items = result.items[0]?.json?.items ?? [];
      if (!items.length) {
        // Debounce Body Items (Split Out) gives no item: n8n runs neither the body nor
        // Debounce Next, and the execution ends.
        log({ c: c.id, p: `p${c.procIndex}`, op: 'empty burst' });
        return finish(c, 'done');
      }
      body(c, items);
      c.state = 'body';
      c.bodyItems = items.map((json) => ({ json }));
      c.readyAt = Math.max(T + c.spec.hold, c.proc.stalledUntil);
      return undefined;
    }
    if (result.end === 'stopped') return finish(c, 'done');
    if (result.end === 'error' && /model fault/.test(result.message)) {
      stats.failed += 1;
      deaths.push(`${result.node} failed`);
      return finish(c, 'failed', result.message);
    }
    violate('execution failed', `${c.id} at ${result.node}: ${result.message ?? JSON.stringify(result)}`, c);
    return finish(c, 'error', result.message);
  }

  const jitter = (c) => c.rng() * opts.jitterMs;
  function advance(c) {
    if (c.state === 'new') {
      c.state = 'run';
      const items = Array.from({ length: c.spec.items }, (_, part) => ({ json: { key: c.spec.key, ev: c.index, part } }));
      c.gen = c.exec.run(d.chain, items);
      log({ c: c.id, p: `p${c.procIndex}`, op: 'arrive', value: c.spec.key });
    } else if (c.state === 'body') {
      c.state = 'run';
      c.gen = c.exec.run(afterBody, c.bodyItems);
      log({ c: c.id, p: `p${c.procIndex}`, op: 'leave body' });
    }
    const r = c.gen.next();
    if (r.done) {
      c.pending = null;
      handleReturn(c, r.value);
      return;
    }
    c.pending = r.value;
    let at = T + jitter(c);
    if (r.value.kind === 'wait') at += r.value.ms / c.proc.rate;
    c.readyAt = Math.max(at, c.proc.stalledUntil);
  }

  spec.callers.forEach((c, i) => makeCaller(c, i, false));
  const pending = new Set(callers);
  const stallsLeft = spec.stalls.map((s) => ({ ...s }));
  const crashesLeft = spec.crashes.map((s) => ({ ...s }));
  spec = { ...spec, faults: (spec.faults ?? []).map((f) => ({ ...f })) };
  const totalStall = spec.stalls.reduce((a, s) => a + s.ms, 0);
  const maxHold = Math.max(...spec.callers.map((c) => c.hold));
  const lastArrival = Math.max(...spec.callers.map((c) => c.arrival));
  const horizon = lastArrival + totalStall + spec.callers.reduce((a, c) => a + c.hold, 0)
    + (d.max_wait_seconds + d.quiet_seconds) * 1000 * (spec.callers.length + 2) + d.stale_ms * 4 + 60_000;
  let swept = false;

  const at = (c) => {
    const here = c.pending && c.pending.kind === 'step' ? `${c.pending.node}#${c.pending.item ?? 0}` : null;
    return { here, seen: here === null ? 0 : c.sites.get(here) ?? 0 };
  };
  const matches = (s, c, here, seen) => (s.atNode === undefined ? s.atStep <= c.steps
    : here !== null && here === `${s.atNode}#${s.item ?? 0}` && seen === (s.occurrence ?? 0));

  let ok = true;
  for (;;) {
    if (!pending.size) {
      if (swept) break;
      swept = true; // every execution ended: the keys' next events come, a stale limit later
      // (and the processes' clocks apart: a watch's `at` is its writer's clock)
      const offsets = spec.procs.map((p) => p.offset);
      const skew = Math.max(...offsets) - Math.min(...offsets);
      const keys = [...new Set(spec.callers.map((c) => c.key))].sort();
      keys.forEach((key, k) => {
        const s = { proc: 0, key, items: 1, arrival: Math.round(T + d.stale_ms + skew + 1000 + 300 * k), hold: 10, rng: mix(spec.seed, spec.index, 'sweep', key) };
        pending.add(makeCaller(s, callers.length, true));
      });
      continue;
    }
    let c = null;
    for (const x of pending) if (!c || x.readyAt < c.readyAt) c = x;
    T = Math.max(T, c.readyAt);
    if (T > horizon) {
      violate('no end', `virtual time passed ${Math.round(horizon)} ms with ${[...pending].map((x) => `${x.id} (${x.state})`).join(', ')} still running`);
      break;
    }
    const { here, seen } = at(c);
    const crash = c.sweeper ? null : crashesLeft.find((s) => !s.done && s.caller === c.index && matches(s, c, here, seen));
    if (crash) {
      crash.done = true;
      deaths.push(here ?? c.state);
      finish(c, 'crashed', here === null ? c.state : `before ${here}`);
      stats.crashed += 1;
      pending.delete(c);
      continue;
    }
    const stall = c.sweeper ? null : stallsLeft.find((s) => !s.done && s.caller === c.index && (s.atNode === undefined ? s.atStep === c.steps : matches(s, c, here, seen)));
    if (stall) {
      stall.done = true;
      const until = T + stall.ms;
      const stopped = stall.whole === 'redis' ? procs : [c.proc];
      for (const p of stopped) p.stalledUntil = Math.max(p.stalledUntil, until);
      for (const x of callers) {
        if (stopped.includes(x.proc) && pending.has(x)) {
          x.readyAt = Math.max(x.readyAt, until);
          x.stalledMs += stall.ms;
        }
      }
      const evaluates = c.pending && c.pending.kind === 'step' && c.pending.what !== 'split';
      const retried = evaluates && workflow.node(c.pending.node).retryOnFail === true;
      if (evaluates && (retried || !opts.retriedOnly) && stall.ms >= opts.exprTimeoutMs && c.rng() < opts.inside) {
        c.failNext = 'fail';
        stats.insideFaults += 1;
      }
      log({ c: c.id, p: stall.whole === 'redis' ? 'all' : `p${c.procIndex}`, op: 'STALL', value: `${stall.ms} ms at step ${c.steps} (${here ?? c.state})${c.failNext ? ', inside its expression: the node fails' : ''}` });
      continue;
    }
    if (here !== null) c.sites.set(here, seen + 1);
    advance(c);
    c.steps += 1;
    stats.steps += 1;
    if (!live(c)) pending.delete(c);
    if (c.state === 'error') { ok = false; break; }
  }
  stats.endMs = T;

  if (ok && !violations.some((v) => v.kind === 'no end')) {
    const calm = spec.crashes.length === 0 && stats.failed === 0 && stats.redisFaults === 0 && stats.insideFaults === 0;
    const bound = (d.max_wait_seconds + d.quiet_seconds) * 1000 + maxHold + totalStall + 3000;
    for (const e of callers) {
      if (e.state === 'done' || e.state === 'body') stats.done += 1;
      const died = e.state === 'crashed' || e.state === 'failed';
      if (!died && e.answered === null) violate('not answered', `${e.id} ended ${e.state} without an answer`, e);
      else if (e.answered !== null && e.bodies === 0) {
        violate('event lost', `${e.id} (key ${e.spec.key}, ticket ${e.ticket}, ${e.state}) was answered buffered and is in no body, the schedule settled`, e);
      } else if (calm && e.firstBodyAt !== null && !e.sweeper && e.firstBodyAt - e.spec.arrival > bound) {
        violate('body too late', `${e.id}'s body began ${Math.round(e.firstBodyAt - e.spec.arrival)} ms after it arrived, bound ${bound} ms`, e);
      }
    }
  }
  return { violations, stats, fullTrace, steps: Object.fromEntries(callers.map((c) => [c.id, c.steps])) };
}

function systematicSpecs(opts, d, graphs) {
  // Each base schedule (no random stalls or crashes); for each victim: a stall of each size
  // before each of its steps, and (--kill) a crash before each of its steps.
  const specs = [];
  const sizes = opts.stallSizes.filter((s) => s !== '').map((s) => Number(s) * 1000);
  for (let index = 0; index < opts.schedules; index += 1) {
    const base = randomDebounceSpec({ ...opts, stalls: [0, 0], crashes: [0, 0] }, d, opts.seed, index);
    const dry = runDebounceSchedule(base, graphs, { ...opts, trace: false });
    for (const victim of opts.victims) {
      if (victim >= base.callers.length) continue;
      const steps = Math.min(dry.steps[`c${victim}`] ?? 0, opts.maxStep ?? Infinity);
      for (let k = 0; k <= steps; k += 1) {
        for (const ms of sizes) specs.push({ ...base, stalls: [{ caller: victim, atStep: k, ms, whole: 'process' }] });
        if (opts.kill) specs.push({ ...base, crashes: [{ caller: victim, atStep: k }] });
      }
    }
  }
  return specs;
}

export function debounceMain(opts, graphs, started) {
  const d = graphs[opts.debounce];
  if (!d || d.kind !== 'debounce') throw new Error(`no debounce ${opts.debounce} in ${opts.graphs}`);
  let specs;
  if (opts.replay) { specs = [opts.replay]; opts.trace = true; }
  else if (opts.systematic) specs = systematicSpecs(opts, d, graphs);
  else specs = Array.from({ length: opts.schedules }, (_, i) => randomDebounceSpec(opts, d, opts.seed, i));
  const totals = {};
  let maxAwake = 0;
  let maxLatency = 0;
  let fullTrace = null;
  let replayed = null;
  const found = exploreAll(specs, graphs, opts, started, runDebounceSchedule, (result) => {
    for (const [k, v] of Object.entries(result.stats)) if (!['maxAwake', 'maxLatencyMs'].includes(k)) totals[k] = (totals[k] ?? 0) + v;
    maxAwake = Math.max(maxAwake, result.stats.maxAwake);
    maxLatency = Math.max(maxLatency, result.stats.maxLatencyMs);
    if (opts.replay) {
      fullTrace = result.fullTrace;
      replayed = result.violations.map(({ kind, detail, caller, deaths }) => ({ kind, detail, caller, deaths }));
    }
  });
  const { run } = found;
  const summary = {
    engine: { file: d.engine_file },
    debounce: opts.debounce,
    quiet_seconds: d.quiet_seconds,
    max_wait_seconds: d.max_wait_seconds,
    max_items: d.max_items,
    mode: opts.replay ? 'replay' : opts.systematic ? 'systematic' : 'random',
    seed: opts.seed,
    schedules_planned: specs.length,
    schedules_run: run,
    steps: totals.steps ?? 0,
    virtual_seconds: Math.round((totals.endMs ?? 0) / 1000),
    // merge() of the lock's test sums or maxes these
    max_bodies_at_once: maxAwake,
    max_idle_gap_ms: 0,
    max_wait_ms: Math.round(maxLatency),
    outcomes: { done: totals.done ?? 0, crashed: totals.crashed ?? 0, failed: totals.failed ?? 0 },
    events: {
      events: totals.events ?? 0, answered: totals.answered ?? 0, bodies: totals.bodies ?? 0,
      sweeper_bodies: totals.sweeperBodies ?? 0, redraws: totals.redraws ?? 0,
      take_attempts: totals.takeAttempts ?? 0, takeovers: totals.takeovers ?? 0,
      takeover_overlaps: totals.overlaps ?? 0, cuts: totals.cuts ?? 0, cuts_lost: totals.lostCuts ?? 0,
      recovered_bursts: totals.recovered ?? 0, node_retries: totals.retries ?? 0,
      redis_faults: totals.redisFaults ?? 0, stalls_inside_an_expression: totals.insideFaults ?? 0,
    },
  };
  if (replayed) summary.replay_violations = replayed; // every one, not only the first
  report(summary, found, started, fullTrace);
}
