#!/usr/bin/env node
// A model check of the lock protocol: the engine's REAL nodes (tests/model/graph.py dumps what
// engine.py generates) run by a mini n8n (n8n_subset.mjs) against a simulated Redis, with many
// callers interleaved one atomic step at a time, under stalls and crashes.
//
//   node tests/model/explore.mjs --graphs FILE [--lock NAME] [--schedules N]
//        (NAME: mutex, semaphore, mutex_short_wait, semaphore_short_wait, mutex_fail_fast)
//        [--seed S] [--callers 2-6] [--stalls 0-3] [--stall-sizes 3,6,20,rand,4:6]
//        [--crashes 0-0] [--procs 1-3] [--jitter-ms 30] [--drift 0.001]
//        [--systematic --victims 0,1 --stall-sizes 6,20] [--replay SPEC_JSON] [--trace]
//        [--shrink] [--budget-ms MS] [--stop-after N] [--max-idle-ms MS|auto]
//        [--site-stalls P] [--samples N] [--heal-after-ms MS] [--resume-delays 250,8000]
//   node tests/model/explore.mjs --graphs FILE --debounce NAME [--keys 1-2] [--kill]
//        [--faults-retried-only] (NAME: debounce, debounce_fast; the same options else, and
//        the debounce's schedules and checks: tests/model/debounce.mjs)
//
// What a schedule is (all of it in a JSON "spec", printed with every violation, so that
// `--replay` runs it again):
// - callers: each one execution of the wrapped workflow: the acquire group from its entry with
//   the item {scope}, then (at its `held` exit) a body of `hold` ms, then the release group
//   (`engine.release` on `$("Lock Decide").first().json`), then it ends.
// - processes: callers share an n8n process (its clock: an offset and a rate); a stall stops
//   the whole process (every caller on it) for `ms`, beginning when the named caller is about
//   to take its step number `atStep`; a "redis" stall stops every process (Redis not answering).
// - crashes: the named caller stops for good before its step `atStep` (its keys stay).
//   With --heal-after-ms, the cleanup handler (error_handler_lock_cleanup, which n8n's
//   recovery runs for a crashed execution of a workflow wrapped with --lock-on-error) runs for
//   it that long after, as one atomic step with the handler's rules: each ticket its execution
//   index lists is released when its record is still the caller's, marked gone when it has no
//   record (it died waiting); an execution that fails (its tries ran out) is healed likewise.
// - faults: a stall of at least --expr-timeout-ms (5 s: n8n 2.x's expression timeout) that
//   begins at a step evaluating an expression lands inside it with probability --inside
//   (0.5): that node fails; --redis-faults P fails a Redis item with probability P (before
//   it runs, or after, its answer lost). A failed node runs again as its Retry On Fail
//   settings say; an execution whose tries run out ends "failed" (its keys stay, as a crash).
// - parking (a lock whose graphs park: mutex_park, semaphore_park): a Wait "On Webhook Call"
//   parks the caller until a resume (Lock Wake's HTTP Request, answered as n8n answers it:
//   200 and the run starts after one of --resume-delays ms, a resumed run queueing for a slot;
//   409 when not parked, so a resume before the park or a second one resumes nothing; 404
//   when gone) or its limit (the backstop). A crashed parked caller is one that died parked.
// - steps: an expression node (Set, If, Split Out, Stop and Error) is one step; a Redis node is
//   one atomic step per item (SET with its EXPIRE as one); a Wait node sleeps on the caller's
//   clock; the body is one step too (a stall "at" it stalls the body). Each step is followed by
//   a random delay of 0..jitter ms. Redis keeps its own (global) clock for expiries.
//
// Checks, after every step:
// - safety: the callers in their body whose lease (the record their Lock Hold wrote: format 3
//   `holder:<t>`, format 2 `meta:<lane>`, with its TTL, until they mark it released) has not
//   expired are at most one per lane (ticket mod N) and at most N in all;
// - an execution never fails (an expression error, a wrong If type, a bad Redis call);
// at the end:
// - liveness: every caller that did not crash ended (released, or refused for its max wait;
//   a fail-fast lock: or refused as busy)
//   within max wait + hold + its process's stalls + a TTL and a grace per crash + slack;
// - with --max-idle-ms: no stretch longer than that in which no lease was alive, no process
//   was stopped, and a live caller waited (the line blocked by a dead waiter). 'auto' allows
//   a max sleep, and a grace and a max sleep per dead caller; with --heal-after-ms, a grace
//   and a sleep only per dead caller that had not listed its ticket in its execution index
//   yet, and the heal delay per dead caller (heals of a chain of deaths come one after the
//   other), since the listed ones are passed in one write.
// Prints a JSON summary; exits 1 on any violation.

import { readFileSync } from 'node:fs';
import { Workflow, Execution } from './n8n_subset.mjs';
import { EPOCH, INT, PICK, Redis, exploreAll, mix, mulberry32, randomProcs, randomStalls, report } from './core.mjs';
import { debounceMain } from './debounce.mjs';

// ---------------------------------------------------------------------------------------------
// Options

function parseArgs(argv) {
  const opts = {
    graphs: null, lock: 'mutex', schedules: 200, seed: 1, callers: [2, 6], stalls: [0, 3],
    stallSizes: ['3', '6', '20', 'rand'], crashes: [0, 0], procs: [1, 3], jitterMs: 30,
    drift: 0.001, offsetMs: 2000, systematic: false, victims: [0, 1], maxStep: null,
    replay: null, trace: false, shrink: false, budgetMs: null, maxIdleMs: null,
    stallAtMax: 60, redisStalls: 0.1, holdMs: null, arrivals: null, traceLength: 40,
    samples: 3, siteStalls: 0.5, stopAfter: null, inside: 0.5, exprTimeoutMs: 5000, redisFaults: 0,
    healAfterMs: null, resumeDelays: [250], debounce: null, keys: [1, 2], kill: false, retriedOnly: false,
  };
  const range = (v) => {
    const [a, b] = String(v).split('-').map(Number);
    return [a, Number.isFinite(b) ? b : a];
  };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    const next = () => argv[++i];
    switch (arg) {
      case '--graphs': opts.graphs = next(); break;
      case '--lock': opts.lock = next(); break;
      case '--debounce': opts.debounce = next(); break;
      case '--keys': opts.keys = range(next()); break;
      case '--kill': opts.kill = true; break;
      case '--faults-retried-only': opts.retriedOnly = true; break;
      case '--schedules': opts.schedules = Number(next()); break;
      case '--seed': opts.seed = Number(next()); break;
      case '--callers': opts.callers = range(next()); break;
      case '--stalls': opts.stalls = range(next()); break;
      case '--stall-sizes': opts.stallSizes = next().split(','); break;
      case '--stall-at-max': opts.stallAtMax = Number(next()); break;
      case '--redis-stalls': opts.redisStalls = Number(next()); break;
      case '--crashes': opts.crashes = range(next()); break;
      case '--procs': opts.procs = range(next()); break;
      case '--jitter-ms': opts.jitterMs = Number(next()); break;
      case '--drift': opts.drift = Number(next()); break;
      case '--offset-ms': opts.offsetMs = Number(next()); break;
      case '--hold-ms': opts.holdMs = range(next()); break;
      case '--arrivals-ms': opts.arrivals = range(next()); break;
      case '--systematic': opts.systematic = true; break;
      case '--victims': opts.victims = next().split(',').map(Number); break;
      case '--max-step': opts.maxStep = Number(next()); break;
      case '--replay': opts.replay = JSON.parse(next()); break;
      case '--trace': opts.trace = true; break;
      case '--trace-length': opts.traceLength = Number(next()); break;
      case '--shrink': opts.shrink = true; break;
      case '--budget-ms': opts.budgetMs = Number(next()); break;
      case '--max-idle-ms': { const v = next(); opts.maxIdleMs = v === 'auto' ? v : Number(v); break; }
      case '--samples': opts.samples = Number(next()); break;
      case '--site-stalls': opts.siteStalls = Number(next()); break;
      case '--stop-after': opts.stopAfter = Number(next()); break;
      case '--inside': opts.inside = Number(next()); break;
      case '--expr-timeout-ms': opts.exprTimeoutMs = Number(next()); break;
      case '--redis-faults': opts.redisFaults = Number(next()); break;
      case '--resume-delays': opts.resumeDelays = next().split(',').map(Number); break;
      case '--heal-after-ms': opts.healAfterMs = Number(next()); break;
      default: throw new Error(`unknown option ${arg}`);
    }
  }
  if (!opts.graphs) throw new Error('--graphs FILE is required (python tests/model/graph.py -o FILE)');
  return opts;
}

// ---------------------------------------------------------------------------------------------
// Schedules

// The steps where a stall matters most: between a decision and its writes, between two writes
// of one node, between a write and the read that checks it. A site stall begins when the
// caller is about to take that step for the `occurrence`-th time (0 = the first).
const SITES = [
  ['Lock Take Ticket', 0, 1], ['Lock Route', 0, 1], ['Lock Read Line', 0, 9], ['Lock Decide', 0, 1],
  ['Lock Hold', 0, 4], ['Lock Verify', 0, 1], ['Lock Check Skipped', 0, 1], ['Lock Skip Head', 0, 2],
  ['Lock Withdrawn', 0, 1], ['Lock Release', 0, 5], ['Lock Release Verdict', 0, 1], ['Lock Count Give-Up', 0, 2],
];

function site(rng) {
  const [node, , items] = PICK(rng, SITES);
  return { atNode: node, item: Math.floor(rng() * items), occurrence: rng() < 0.7 ? 0 : 1 + Math.floor(rng() * 3) };
}

function randomSpec(opts, lock, seed, index) {
  const rng = mulberry32(mix(seed, index, 'spec'));
  const ttlMs = lock.ttl_seconds * 1000;
  const n = INT(rng, opts.callers);
  const procCount = Math.min(n, INT(rng, opts.procs));
  const procs = randomProcs(rng, procCount, opts);
  const spread = opts.arrivals ?? PICK(rng, [[0, 0], [0, 300], [0, 2000], [0, 8000], [0, 20000]]);
  const callers = Array.from({ length: n }, (_, i) => ({
    proc: i < procCount ? i : Math.floor(rng() * procCount),
    arrival: Math.round(spread[0] + rng() * (spread[1] - spread[0])),
    hold: Math.round(opts.holdMs ? opts.holdMs[0] + rng() * (opts.holdMs[1] - opts.holdMs[0])
      : rng() < 0.8 ? 10 + rng() * 400 : 400 + rng() * 2600),
    rng: mix(seed, index, 'caller', i),
  }));
  const stalls = randomStalls(rng, n, opts, site, ttlMs);
  const crashes = Array.from({ length: INT(rng, opts.crashes) }, () => ({
    caller: Math.floor(rng() * n),
    atStep: Math.floor(rng() * opts.stallAtMax),
  }));
  return { lock: opts.lock, seed, index, procs, callers, stalls, crashes };
}

// ---------------------------------------------------------------------------------------------
// One schedule

const SCOPE = 'orders'; // every caller's
const SUMMARY_FIELDS = ['state', 'ticket', 'head', 'served', 'guess', 'fast', 'skip_read', 'check', 'elapsed_ms', 'sleep_seconds', 'quiet_since', 'reason', 'problem', 'released'];

function brief(value) {
  if (value && typeof value === 'object') {
    const out = {};
    for (const field of SUMMARY_FIELDS) if (value[field] !== undefined) out[field] = value[field];
    if (Array.isArray(value.set)) out.writes = value.set.map((s) => s.key.replace(/^n8n-lock-[^:]*:/, ''));
    if (Array.isArray(value.skip)) out.writes = value.skip.map((s) => `${s.key.replace(/^n8n-lock-[^:]*:/, '')}=${s.value}`);
    return out;
  }
  if (typeof value === 'string' && value.length > 100) return `${value.slice(0, 97)}...`;
  return value;
}

function shortKey(key) {
  return typeof key === 'string' ? key.replace(/^n8n-lock-[^:]*:/, '') : key;
}

export function runSchedule(spec, graphs, opts) {
  const lock = graphs[spec.lock];
  const slots = lock.slots;
  const ttlMs = lock.ttl_seconds * 1000;
  const graceMs = lock.skip_grace_ms;
  const workflow = new Workflow([lock.acquire, lock.release]);
  let T = 0;
  const redis = new Redis(() => T);
  const trace = [];
  const fullTrace = opts.trace ? [] : null;
  const procs = spec.procs.map((p) => ({ ...p, stalledUntil: 0 }));
  const stats = {
    steps: 0, released: 0, refused: 0, crashed: 0, maxBodies: 0, maxBodiesAnyLease: 0,
    leaseExpiredInBody: 0, withdrawals: 0, requeues: 0, skips: 0, checks: 0, fast: 0,
    maxIdleMs: 0, maxWaitMs: 0, endMs: 0, enteredExpired: 0, failed: 0, retries: 0,
    insideFaults: 0, redisFaults: 0, healed: 0, passed: 0, unlisted: 0,
    parks: 0, resumes: 0, refusedResumes: 0, lostResumes: 0, backstops: 0,
  };
  const log = (entry) => {
    const row = { t: Math.round(T * 10) / 10, ...entry };
    trace.push(row);
    if (trace.length > opts.traceLength) trace.shift();
    if (fullTrace) fullTrace.push(row);
  };
  const callers = spec.callers.map((c, index) => {
    const rng = mulberry32(c.rng);
    const proc = procs[c.proc];
    const caller = {
      index, id: `c${index}`, spec: c, proc, procIndex: c.proc, rng, state: 'new', steps: 0,
      readyAt: c.arrival, leases: [], ticket: null, endedAt: null, message: null, arrived: false,
      stalledMs: 0, pending: null, sites: new Map(), failNext: null,
    };
    caller.now = () => Math.floor(EPOCH + proc.offset + T * proc.rate); // Date.now() is whole ms
    caller.exec = new Execution(workflow, {
      executionId: String(1000 + index),
      now: caller.now,
      random: rng,
      redis,
      observe: (event) => observe(caller, event),
      resume: (id, body) => resumeCaller(caller, id, body),
      fault: (name) => {
        const kind = caller.failNext;
        caller.failNext = null;
        if (kind) return kind;
        if (opts.redisFaults > 0 && workflow.node(name).type === 'n8n-nodes-base.redis' && caller.rng() < opts.redisFaults) {
          stats.redisFaults += 1;
          return caller.rng() < 0.5 ? 'fail' : 'after';
        }
        return null;
      },
    });
    return caller;
  });
  const violations = [];
  const violate = (kind, detail, who) => {
    violations.push({ kind, detail, at_ms: Math.round(T), caller: who?.id, step: stats.steps, trace: [...trace] });
  };

  function observe(caller, event) {
    const entry = { c: caller.id, p: `p${caller.procIndex}`, clock: Math.round(caller.now() - EPOCH), node: event.node, op: event.op };
    if (event.key !== undefined) entry.key = shortKey(event.key);
    if (event.value !== undefined) entry.value = brief(event.value);
    if (event.ttl) entry.ttl = event.ttl;
    log(entry);
    if (event.op === 'INCR' && /:ticket$/.test(event.key)) caller.ticket = event.value;
    if (event.op === 'expr' && event.value) {
      const v = event.value;
      if (event.node.startsWith('Lock Decide')) {
        if (v.state === 'requeue') stats.requeues += 1;
        if (v.state === 'skip') stats.skips += 1;
      }
      if (event.node.startsWith('Lock Withdraw') && !event.node.includes('Items')) stats.withdrawals += 1;
      if (event.node.startsWith('Lock Decide') && v.state === 'enter' && v.fast) stats.fast += 1;
    }
    if (event.op === 'GET' && event.node.startsWith('Lock Check Skipped')) stats.checks += 1;
    if (event.op === 'retry') stats.retries += 1;
    if (event.op === 'SET' && typeof event.value === 'string' && event.value.startsWith('{')) {
      let record = null;
      try { record = JSON.parse(event.value); } catch { record = null; }
      if (record && typeof record === 'object') {
        // The lease is the caller's own record: `holder:<t>` (format 3; its copy `meta:<lane>`
        // only until the holder key is written), or `meta:<lane>` (format 2). It is tracked
        // here, not read back, so that another caller overwriting a shared key cannot hide it.
        const open = caller.leases.find((l) => l.key === event.key && !l.releasedAt);
        const own = record.lock_id !== undefined && record.ticket !== undefined;
        if (record.released) {
          if (open) open.releasedAt = T;
        } else if (own) {
          const lease = {
            key: event.key, ticket: record.ticket, lane: record.ticket % slots, since: T,
            expiresAt: event.ttl ? T + event.ttl * 1000 : Infinity, releasedAt: null,
          };
          const same = caller.leases.find((l) => l.ticket === record.ticket && !l.releasedAt);
          if (!same) caller.leases.push(lease);
          else if (same.key === event.key) Object.assign(same, { since: T, expiresAt: lease.expiresAt }); // written again (a retry)
          else if (event.key.includes(':holder:') && same.key.includes(':meta:')) Object.assign(same, lease);
        }
      }
    }
  }

  const leaseAlive = (lease) => lease && !lease.releasedAt && T < lease.expiresAt;
  const lastLease = (c) => c.leases[c.leases.length - 1];

  function checkSafety() {
    const inBody = callers.filter((c) => c.state === 'body');
    const live = inBody.filter((c) => leaseAlive(lastLease(c)));
    stats.maxBodiesAnyLease = Math.max(stats.maxBodiesAnyLease, inBody.length);
    stats.maxBodies = Math.max(stats.maxBodies, live.length);
    const lanes = new Map();
    for (const c of live) {
      const lane = lastLease(c).lane;
      lanes.set(lane, [...(lanes.get(lane) ?? []), c]);
    }
    for (const [lane, here] of lanes) {
      if (here.length > 1) {
        const who = here.map((c) => `${c.id} (ticket ${lastLease(c).ticket}, lease ${shortKey(lastLease(c).key)} since ${Math.round(lastLease(c).since)} ms)`);
        violate('two holders in one lane', `lane ${lane}: ${who.join(' and ')} are in their bodies at once, both leases alive`);
        return false;
      }
    }
    if (live.length > slots) {
      violate('more holders than lanes', `${live.length} bodies with live leases, N = ${slots}: ${live.map((c) => c.id).join(', ')}`);
      return false;
    }
    return true;
  }

  // The line is blocked for nothing: no live lease, no process stopped, and a live caller waits.
  let idleSince = null;
  function trackIdle() {
    const anyLease = callers.some((c) => c.leases.some(leaseAlive));
    const stopped = procs.some((p) => T < p.stalledUntil);
    const waiting = callers.some((c) => c.arrived && c.state === 'acquire');
    const idle = waiting && !anyLease && !stopped;
    if (idle && idleSince === null) idleSince = T;
    if (!idle && idleSince !== null) {
      stats.maxIdleMs = Math.max(stats.maxIdleMs, T - idleSince);
      idleSince = null;
    }
  }

  // The cleanup handler for a dead caller (--heal-after-ms): filter_owned_scopes.js's rules.
  const K = lock.keys;
  const heals = [];
  const indexKey = (c) => `${K.index}${workflow.id}:${1000 + c.index}`;
  const listedTicket = (c) => {
    const entry = redis.entry(indexKey(c));
    const raw = entry && entry.type === 'hash' ? entry.value[SCOPE] : undefined;
    return raw === undefined ? null : JSON.parse(raw).ticket;
  };
  function died(c) {
    if (opts.healAfterMs === null) return;
    // A caller that had not listed its present ticket is passed after a grace, not healed.
    if (c.state !== 'body' && listedTicket(c) !== c.ticket && !c.leases.some(leaseAlive)) stats.unlisted += 1;
    heals.push({ at: T + opts.healAfterMs, c });
  }
  function heal(c) {
    const entry = redis.entry(indexKey(c));
    if (!entry || entry.type !== 'hash') return;
    const nowMs = c.now();
    for (const [scope, raw] of Object.entries(entry.value)) {
      const { ticket, lock_id: lockId } = JSON.parse(raw);
      const base = `${K.lock}${scope}`;
      const holderKey = `${base}${K.holder}${ticket}`;
      const text = redis.get(holderKey);
      const record = text === null ? null : JSON.parse(text);
      if (record === null) {
        redis.set(`${base}${K.gone}${ticket}`, String(nowMs), K.gone_ttl);
        stats.passed += 1;
        log({ c: c.id, p: 'cleanup', op: 'SET', key: shortKey(`${base}${K.gone}${ticket}`), value: 'gone (died waiting)' });
      } else if (!record.released && record.ticket === ticket && String(record.execution_id) === String(1000 + c.index) && record.lock_id === lockId) {
        const released = JSON.stringify({ released: true, ticket, lock_id: lockId, released_at: new Date(nowMs).toISOString(), healed: true });
        const lane = ticket % slots;
        redis.set(holderKey, released, K.released_ttl);
        redis.set(`${base}${K.meta}${lane}`, released, K.released_ttl);
        redis.set(`${base}${K.served}${lane}`, String(ticket), null);
        for (const lease of c.leases) if (lease.ticket === ticket && !lease.releasedAt) lease.releasedAt = T;
        stats.healed += 1;
        log({ c: c.id, p: 'cleanup', op: 'SET', key: shortKey(holderKey), value: 'released (healed)' });
      }
    }
  }

  // A resume POSTed to a parked execution (Lock Wake), as n8n's /webhook-waiting answers it:
  // 200 and the run starts again after a delay (a resume is a new run, which may queue for a
  // concurrency slot: --resume-delays), 409 when the execution is not parked (still on its way,
  // or resumed already: two resumes never resume it twice), 404 when it is gone.
  function resumeCaller(from, id, body) {
    const target = callers[Number(id) - 1000];
    if (!target || ['crashed', 'failed', 'released', 'refused', 'error'].includes(target.state)) {
      stats.lostResumes += 1;
      return 404;
    }
    if (!target.pending || target.pending.kind !== 'park' || target.resumeWith) {
      stats.refusedResumes += 1;
      return 409;
    }
    const delays = opts.resumeDelays;
    const delay = delays[Math.floor(from.rng() * delays.length)];
    target.resumeWith = body;
    target.readyAt = Math.max(T + delay, target.proc.stalledUntil);
    stats.resumes += 1;
    log({ c: target.id, p: `p${target.procIndex}`, op: 'resumed', value: `by ${from.id}, runs in ${delay} ms` });
    return 200;
  }

  const jitter = (c) => c.rng() * opts.jitterMs;
  const schedule = (c, request) => {
    let at = T + jitter(c);
    if (request && (request.kind === 'wait' || request.kind === 'park')) at += request.ms / c.proc.rate;
    if (request && request.kind === 'park') stats.parks += 1;
    c.readyAt = Math.max(at, c.proc.stalledUntil);
  };

  function finish(c, outcome, message) {
    c.state = outcome;
    c.endedAt = T;
    c.message = message ?? null;
    log({ c: c.id, p: `p${c.procIndex}`, op: outcome, value: brief(message ?? '') });
  }

  function handleReturn(c, result) {
    if (result.exit === 'held') {
      const lease = lastLease(c);
      if (!lease || lease.releasedAt) {
        violate('entered without a record', `${c.id} reached the body with no record of its own (${JSON.stringify(lease ?? null)})`, c);
      } else if (!leaseAlive(lease)) {
        // Stalled past its lease between writing the record and its body: as a lease lock,
        // this is a holder whose lease ran out (the fence tells it apart), not two holders.
        stats.enteredExpired += 1;
      }
      c.state = 'body';
      c.heldItems = result.items;
      c.readyAt = Math.max(T + c.spec.hold, c.proc.stalledUntil);
      log({ c: c.id, p: `p${c.procIndex}`, op: 'body', value: `ticket ${lastLease(c)?.ticket}, ${c.spec.hold} ms` });
      return;
    }
    if (result.exit === 'done') return finish(c, 'released');
    if (result.end === 'refused') {
      const expected = lock.wait === false ? /\(fail-fast\)/ : /timed out after/;
      if (!expected.test(result.message)) violate('refused for another reason than its max wait', result.message, c);
      return finish(c, 'refused', result.message);
    }
    if (result.end === 'error') {
      if (/model fault/.test(result.message)) {
        // An injected fault outlived the node's tries: the execution fails and leaves its keys
        // (as a crash; the cleanup handler of --lock-on-error is not modelled).
        stats.failed += 1;
        return finish(c, 'failed', result.message);
      }
      violate('execution failed', `${c.id} at ${result.node}: ${result.message}`, c);
      return finish(c, 'error', result.message);
    }
    violate('branch ended without an exit', `${c.id}: ${JSON.stringify(result)}`, c);
    return finish(c, 'error');
  }

  function advance(c) {
    if (c.state === 'new') {
      c.state = 'acquire';
      c.arrived = true;
      c.gen = c.exec.run(lock.acquire, [{ json: { scope: SCOPE } }]);
      log({ c: c.id, p: `p${c.procIndex}`, op: 'arrive' });
    } else if (c.state === 'body') {
      const lease = lastLease(c);
      if (!leaseAlive(lease)) stats.leaseExpiredInBody += 1;
      c.state = 'release';
      c.gen = c.exec.run(lock.release, c.heldItems);
      log({ c: c.id, p: `p${c.procIndex}`, op: 'leave body' });
    }
    const parked = c.pending && c.pending.kind === 'park';
    if (parked && !c.resumeWith) stats.backstops += 1; // its limit ran out first
    const r = c.gen.next(parked ? c.resumeWith ?? null : undefined);
    c.resumeWith = null;
    if (r.done) {
      c.pending = null;
      handleReturn(c, r.value);
      return;
    }
    c.pending = r.value;
    schedule(c, r.value);
  }

  const pending = new Set(callers);
  const stallsLeft = spec.stalls.map((s) => ({ ...s }));
  const crashesLeft = spec.crashes.map((s) => ({ ...s }));
  const totalStall = spec.stalls.reduce((a, s) => a + s.ms, 0);
  const lastArrival = Math.max(...spec.callers.map((c) => c.arrival));
  const horizon = lastArrival + lock.max_wait_seconds * 1000 + spec.callers.reduce((a, c) => a + c.hold, 0)
    + totalStall + spec.crashes.length * (ttlMs + graceMs + 5000) + 60_000
    + (opts.redisFaults > 0 || opts.inside > 0 ? spec.callers.length * (ttlMs + graceMs + 5000) : 0);

  let safe = true;
  while (pending.size && safe) {
    let c = null;
    for (const x of pending) if (!c || x.readyAt < c.readyAt) c = x;
    const due = heals.reduce((a, h) => (h.at <= c.readyAt && (!a || h.at < a.at) ? h : a), null);
    if (due) {
      heals.splice(heals.indexOf(due), 1);
      T = Math.max(T, due.at);
      heal(due.c);
      trackIdle();
      continue;
    }
    T = Math.max(T, c.readyAt);
    if (T > horizon) {
      violate('no end', `virtual time passed ${Math.round(horizon)} ms with ${[...pending].map((x) => `${x.id} (${x.state})`).join(', ')} still running`);
      break;
    }
    const crash = crashesLeft.find((s) => !s.done && s.caller === c.index && s.atStep <= c.steps);
    if (crash) {
      crash.done = true;
      c.crashedIn = c.state;
      died(c);
      finish(c, 'crashed');
      stats.crashed += 1;
      pending.delete(c);
      trackIdle();
      continue;
    }
    const here = c.pending && c.pending.kind === 'step' ? `${c.pending.node}#${c.pending.item ?? 0}` : null;
    const seen = here === null ? 0 : c.sites.get(here) ?? 0;
    const stall = stallsLeft.find((s) => !s.done && s.caller === c.index && (s.atNode === undefined
      ? s.atStep === c.steps
      : here !== null && here === `${s.atNode}#${s.item ?? 0}` && seen === (s.occurrence ?? 0)));
    if (stall) {
      stall.done = true;
      const until = T + stall.ms;
      const stopped = stall.whole === 'redis' ? procs : [c.proc];
      for (const p of stopped) p.stalledUntil = Math.max(p.stalledUntil, until);
      for (const x of callers) {
        if (stopped.includes(x.proc)) {
          x.readyAt = Math.max(x.readyAt, until);
          x.stalledMs += stall.ms;
        }
      }
      // n8n 2.x stops an expression after N8N_EXPRESSION_ENGINE_TIMEOUT (5 s) of wall time: a
      // stall this long that lands inside the expression this step evaluates fails its node.
      const evaluates = c.pending && c.pending.kind === 'step' && c.pending.what !== 'split';
      if (evaluates && stall.ms >= opts.exprTimeoutMs && c.rng() < opts.inside) {
        c.failNext = 'fail';
        stats.insideFaults += 1;
      }
      const where = (here === null ? c.state : `before ${here}`) + (c.failNext ? ', inside its expression: the node fails' : '');
      log({ c: c.id, p: stall.whole === 'redis' ? 'all' : `p${c.procIndex}`, op: 'STALL', value: `${stall.ms} ms at step ${c.steps} (${where})` });
      trackIdle();
      continue;
    }
    if (here !== null) c.sites.set(here, seen + 1);
    advance(c);
    c.steps += 1;
    stats.steps += 1;
    if (c.state === 'failed') died(c);
    if (['released', 'refused', 'error', 'failed'].includes(c.state)) pending.delete(c);
    if (c.state === 'error') safe = false;
    safe = checkSafety() && safe;
    trackIdle();
  }
  if (idleSince !== null) stats.maxIdleMs = Math.max(stats.maxIdleMs, T - idleSince);
  stats.endMs = T;

  if (safe && !violations.length) {
    for (const c of callers) {
      if (c.state === 'released') stats.released += 1;
      if (c.state === 'refused') stats.refused += 1;
      if (c.state === 'crashed' || c.state === 'failed') continue;
      stats.maxWaitMs = Math.max(stats.maxWaitMs, (c.endedAt ?? T) - c.spec.arrival - c.spec.hold);
      const bound = lock.max_wait_seconds * 1000 + c.spec.hold + c.stalledMs + (lock.parks ? lock.park_limit_ms ?? 0 : 0)
        + (spec.crashes.length + stats.failed) * (ttlMs + graceMs + 5000) + 15_000;
      if (c.endedAt === null) {
        violate('did not end', `${c.id} is still ${c.state}`, c);
      } else if (c.endedAt - c.spec.arrival > bound) {
        violate('ended too late', `${c.id} took ${Math.round(c.endedAt - c.spec.arrival)} ms, bound ${Math.round(bound)} ms`, c);
      }
    }
    // 'auto': a waiter looks at least every max sleep; a dead head (a crashed waiter, or a
    // crashed holder once its lease ran out) is skipped at the first look a grace after the
    // look that found it quiet; so each crash may cost grace + max sleep, plus one max sleep
    // and a second of steps.
    // Healed (--heal-after-ms): a dead caller's heal may come that long after the one before
    // it (a chain of deaths), and the next look a max sleep after the last.
    const dead = opts.healAfterMs === null ? stats.crashed + stats.failed : stats.unlisted;
    const healing = opts.healAfterMs === null ? 0 : (stats.crashed + stats.failed) * opts.healAfterMs;
    // Parked: a waiter whose waker died is woken by a watcher (its parked grace) or its
    // backstop, and every resume may queue for the longest --resume-delays.
    const parkedMs = lock.parks ? Math.max(...opts.resumeDelays) : 0;
    const perDead = graceMs + lock.max_sleep_ms + (lock.parks ? lock.park_limit_ms ?? 0 : 0);
    const limit = opts.maxIdleMs === 'auto'
      ? lock.max_sleep_ms + parkedMs + healing + dead * perDead + 1000
      : opts.maxIdleMs;
    if (limit !== null && stats.maxIdleMs > limit) {
      violate('line blocked', `for ${Math.round(stats.maxIdleMs)} ms no lease was alive and no process stopped while a live caller waited (limit ${limit} ms, ${stats.crashed} crashed)`);
    }
  }
  return { violations, stats, fullTrace, steps: Object.fromEntries(callers.map((c) => [c.id, c.steps])) };
}

// The rows of a trace that tell what happened: arrivals, stalls, tickets, decisions other than
// waiting, every write, the late-entry check, bodies and ends.
function story(trace) {
  return trace.filter((r) => ['arrive', 'STALL', 'body', 'leave body', 'released', 'refused', 'crashed', 'SET'].includes(r.op)
    || (r.op === 'INCR' && /:ticket$|^ticket$/.test(r.key ?? ''))
    || (r.node?.startsWith('Lock Decide') && r.value?.state !== 'wait')
    || r.node?.startsWith('Lock Verify') || r.node?.startsWith('Lock Check Skipped'));
}

// ---------------------------------------------------------------------------------------------
// Main

function systematicSpecs(opts, lock, graphs) {
  // For each seed's schedule (no random stalls), and each victim caller: stall it at each of
  // its steps, for each stall size (whole process).
  const specs = [];
  const sizes = opts.stallSizes.map((s) => Number(s) * 1000);
  for (let index = 0; index < opts.schedules; index += 1) {
    const base = { ...randomSpec({ ...opts, stalls: [0, 0], crashes: [0, 0] }, lock, opts.seed, index) };
    const dry = runSchedule(base, graphs, { ...opts, trace: false });
    for (const victim of opts.victims) {
      if (victim >= base.callers.length) continue;
      const steps = Math.min(dry.steps[`c${victim}`] ?? 0, opts.maxStep ?? Infinity);
      for (let k = 0; k <= steps; k += 1) {
        for (const ms of sizes) specs.push({ ...base, stalls: [{ caller: victim, atStep: k, ms, whole: 'process' }] });
      }
    }
  }
  return specs;
}

function main() {
  const started = Date.now();
  const opts = parseArgs(process.argv.slice(2));
  const graphs = JSON.parse(readFileSync(opts.graphs, 'utf8'));
  if (opts.debounce) {
    debounceMain(opts, graphs, started);
    return;
  }
  const lock = graphs[opts.lock];
  if (!lock) throw new Error(`no lock ${opts.lock} in ${opts.graphs}`);
  let specs;
  if (opts.replay) { specs = [opts.replay]; opts.trace = true; }
  else if (opts.systematic) specs = systematicSpecs(opts, lock, graphs);
  else specs = Array.from({ length: opts.schedules }, (_, i) => randomSpec(opts, lock, opts.seed, i));

  const totals = {
    steps: 0, released: 0, refused: 0, crashed: 0, withdrawals: 0, requeues: 0, skips: 0,
    checks: 0, fast: 0, leaseExpiredInBody: 0, enteredExpired: 0, virtualMs: 0, failed: 0,
    retries: 0, insideFaults: 0, redisFaults: 0, healed: 0, passed: 0, unlisted: 0,
    parks: 0, resumes: 0, refusedResumes: 0, lostResumes: 0, backstops: 0,
  };
  let maxBodies = 0;
  let maxBodiesAnyLease = 0;
  let maxIdleMs = 0;
  let maxIdleSpec = null;
  let maxWaitMs = 0;
  let fullTrace = null;
  const found = exploreAll(specs, graphs, opts, started, runSchedule, (result, spec) => {
    const s = result.stats;
    for (const key of Object.keys(totals)) if (key !== 'virtualMs') totals[key] += s[key];
    totals.virtualMs += s.endMs;
    maxBodies = Math.max(maxBodies, s.maxBodies);
    maxBodiesAnyLease = Math.max(maxBodiesAnyLease, s.maxBodiesAnyLease);
    if (s.maxIdleMs > maxIdleMs) maxIdleSpec = spec;
    maxIdleMs = Math.max(maxIdleMs, s.maxIdleMs);
    maxWaitMs = Math.max(maxWaitMs, s.maxWaitMs);
    if (opts.replay) fullTrace = result.fullTrace;
  }, story);
  const { run } = found;
  const summary = {
    engine: { format: lock.format, file: lock.engine_file },
    lock: opts.lock,
    slots: lock.slots,
    ttl_seconds: lock.ttl_seconds,
    max_wait_seconds: lock.max_wait_seconds,
    mode: opts.replay ? 'replay' : opts.systematic ? 'systematic' : 'random',
    seed: opts.seed,
    schedules_planned: specs.length,
    schedules_run: run,
    steps: totals.steps,
    virtual_seconds: Math.round(totals.virtualMs / 1000),
    max_bodies_at_once: maxBodies,
    max_bodies_at_once_incl_expired_leases: maxBodiesAnyLease,
    max_idle_gap_ms: Math.round(maxIdleMs),
    max_idle_gap_spec: maxIdleSpec,
    max_wait_ms: Math.round(maxWaitMs),
    outcomes: { released: totals.released, refused: totals.refused, crashed: totals.crashed, failed: totals.failed },
    events: {
      fast_path: totals.fast, skips: totals.skips, requeues: totals.requeues,
      gone_checks: totals.checks, withdrawals: totals.withdrawals,
      leases_expired_in_body: totals.leaseExpiredInBody,
      entered_after_lease_expired: totals.enteredExpired,
      stalls_inside_an_expression: totals.insideFaults, redis_faults: totals.redisFaults,
      node_retries: totals.retries,
      healed_holders: totals.healed, passed_dead_waiters: totals.passed,
      dead_waiters_unlisted: totals.unlisted,
      parks: totals.parks,
      resumes: totals.resumes,
      resumes_refused: totals.refusedResumes,
      resumes_of_the_gone: totals.lostResumes,
      backstops: totals.backstops,
    },
  };
  report(summary, found, started, fullTrace);
}

main();
