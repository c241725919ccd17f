// What the lock's explorer (explore.mjs) and the debounce's (debounce.mjs) share: seeded
// randomness, the simulated Redis, the virtual epoch and the stall sizes.
// ---------------------------------------------------------------------------------------------
// Randomness: one stream per caller (its jitter and Math.random), so that dropping a caller
// while shrinking a schedule leaves the others' timings alone.

export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function mix(...parts) {
  let h = 2166136261;
  for (const part of parts) {
    for (const ch of String(part)) {
      h ^= ch.charCodeAt(0);
      h = Math.imul(h, 16777619);
    }
    h ^= 0x2c;
    h = Math.imul(h, 16777619);
  }
  return h >>> 0;
}

// ---------------------------------------------------------------------------------------------
// Redis: strings and hashes with TTLs on its own clock.

export class Redis {
  constructor(clock) {
    this.clock = clock;
    this.data = new Map();
  }

  entry(key) {
    const e = this.data.get(key);
    if (e && e.expiresAt !== null && e.expiresAt <= this.clock()) {
      this.data.delete(key);
      return undefined;
    }
    return e;
  }

  expire(key, ttl) {
    const e = this.entry(key);
    if (!e) return;
    if (!(ttl > 0)) this.data.delete(key);
    else e.expiresAt = this.clock() + ttl * 1000;
  }

  get(key) {
    const e = this.entry(key);
    if (!e) return null;
    if (e.type !== 'string') throw new Error(`WRONGTYPE GET ${key}`);
    return e.value;
  }

  set(key, value, ttl) {
    this.data.set(key, { type: 'string', value: String(value), expiresAt: null }); // SET drops a TTL
    if (ttl !== null && ttl !== undefined) this.expire(key, ttl);
  }

  incr(key, ttl) {
    const e = this.entry(key);
    let n = 0;
    if (e) {
      if (e.type !== 'string' || !/^-?\d+$/.test(e.value)) throw new Error(`ERR value is not an integer or out of range (${key})`);
      n = Number(e.value);
    }
    n += 1;
    if (e) e.value = String(n);
    else this.data.set(key, { type: 'string', value: String(n), expiresAt: null });
    if (ttl) this.expire(key, ttl);
    return n;
  }

  // RPUSH (n8n's Push with Tail on): a list has no TTL until something EXPIREs it.
  rpush(key, value) {
    let e = this.entry(key);
    if (e && e.type !== 'list') throw new Error(`WRONGTYPE RPUSH ${key}`);
    if (!e) {
      e = { type: 'list', value: [], expiresAt: null };
      this.data.set(key, e);
    }
    e.value.push(String(value));
    return e.value.length;
  }

  // LRANGE key 0 -1 (n8n's Get with key type list): [] for no key.
  lrange(key) {
    const e = this.entry(key);
    if (!e) return [];
    if (e.type !== 'list') throw new Error(`WRONGTYPE LRANGE ${key}`);
    return [...e.value];
  }

  // LSET (n8n's Set with key type list writes each element by index): no key is an error.
  lset(key, index, value) {
    const e = this.entry(key);
    if (!e) throw new Error(`ERR no such key (${key})`);
    if (e.type !== 'list') throw new Error(`WRONGTYPE LSET ${key}`);
    if (index >= e.value.length) throw new Error(`ERR index out of range (${key})`);
    e.value[index] = String(value);
  }

  hset(key, fields, ttl) {
    let e = this.entry(key);
    if (e && e.type !== 'hash') throw new Error(`WRONGTYPE HSET ${key}`);
    if (!e) {
      e = { type: 'hash', value: {}, expiresAt: null };
      this.data.set(key, e);
    }
    for (const [k, v] of Object.entries(fields)) e.value[k] = String(v);
    if (ttl !== null && ttl !== undefined) this.expire(key, ttl);
  }
}


export const EPOCH = Date.UTC(2027, 0, 4, 9, 0, 0);
export const PICK = (rng, list) => list[Math.floor(rng() * list.length)];
export const INT = (rng, [a, b]) => a + Math.floor(rng() * (b - a + 1));

export function stallMs(rng, sizes, ttlMs) {
  const size = PICK(rng, sizes);
  if (size === 'rand') return Math.round(200 + rng() * (ttlMs - 200));
  if (size.includes(':')) {
    const [a, b] = size.split(':').map(Number);
    return Math.round((a + rng() * (b - a)) * 1000);
  }
  return Number(size) * 1000;
}


// A schedule's n8n processes: a clock offset (±--offset-ms) and rate (1 ± --drift) each.
export function randomProcs(rng, count, opts) {
  return Array.from({ length: count }, () => ({
    offset: Math.round((rng() * 2 - 1) * opts.offsetMs),
    rate: 1 + (rng() * 2 - 1) * opts.drift,
  }));
}

// A schedule's stalls (--stalls of them): of a random caller's process, or of Redis (every
// process: --redis-stalls), before a random step or at a `site(rng)` (--site-stalls), of
// --stall-sizes (`rand`: up to `maxMs`).
export function randomStalls(rng, n, opts, site, maxMs) {
  return Array.from({ length: INT(rng, opts.stalls) }, () => ({
    caller: Math.floor(rng() * n),
    ...(rng() < opts.siteStalls ? site(rng) : { atStep: Math.floor(rng() * opts.stallAtMax) }),
    ms: stallMs(rng, opts.stallSizes, maxMs),
    whole: rng() < opts.redisStalls ? 'redis' : 'process',
  }));
}

// ---------------------------------------------------------------------------------------------
// Shrinking a failing schedule: drop callers, stalls and crashes, and make stalls and holds
// smaller, while the same kind of violation remains.

export function withoutCaller(spec, i) {
  const renumber = (list) => list.filter((s) => s.caller !== i).map((s) => ({ ...s, caller: s.caller > i ? s.caller - 1 : s.caller }));
  return { ...spec, callers: spec.callers.filter((_, j) => j !== i), stalls: renumber(spec.stalls), crashes: renumber(spec.crashes) };
}

// `run(spec, graphs, opts)` runs one schedule (the lock's or the debounce's).
export function shrink(spec, kind, graphs, opts, run) {
  const fails = (s) => s.callers.length > 0 && run(s, graphs, opts).violations.some((v) => v.kind === kind);
  let best = spec;
  let improved = true;
  while (improved) {
    improved = false;
    const candidates = [];
    for (let i = 0; i < best.callers.length; i += 1) candidates.push(withoutCaller(best, i));
    for (let i = 0; i < best.stalls.length; i += 1) candidates.push({ ...best, stalls: best.stalls.filter((_, j) => j !== i) });
    for (let i = 0; i < best.crashes.length; i += 1) candidates.push({ ...best, crashes: best.crashes.filter((_, j) => j !== i) });
    for (let i = 0; i < best.stalls.length; i += 1) {
      for (const ms of [3000, 6000]) {
        if (ms < best.stalls[i].ms) candidates.push({ ...best, stalls: best.stalls.map((s, j) => (j === i ? { ...s, ms } : s)) });
      }
    }
    const emptyProcs = best.procs.map((_, p) => p).filter((p) => !best.callers.some((c) => c.proc === p));
    if (emptyProcs.length) {
      const keep = best.procs.map((_, p) => p).filter((p) => !emptyProcs.includes(p));
      candidates.push({ ...best, procs: keep.map((p) => best.procs[p]), callers: best.callers.map((c) => ({ ...c, proc: keep.indexOf(c.proc) })) });
    }
    for (const candidate of candidates) {
      if (fails(candidate)) {
        best = candidate;
        improved = true;
        break;
      }
    }
  }
  return best;
}

// Run `specs` (`run(spec, graphs, opts)` runs one schedule, the lock's or the debounce's) within
// --budget-ms and --stop-after; `each(result, spec)` sees every result. Returns how many ran and
// broke, the kinds of their first violations, --samples of them, and the shortest (shrunk with
// --shrink; `story(trace)`, when given, adds the rows of its trace that tell what happened).
export function exploreAll(specs, graphs, opts, started, run, each, story = null) {
  const out = { run: 0, failing: 0, byKind: {}, samples: [], shortest: null };
  const size = (r) => [r.spec.callers.length, r.spec.stalls.length + r.spec.crashes.length, r.step];
  const smaller = (a, b) => { const x = size(a); const y = size(b); return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]; };
  for (const spec of specs) {
    if (opts.budgetMs !== null && Date.now() - started > opts.budgetMs) break;
    if (opts.stopAfter !== null && out.failing >= opts.stopAfter) break;
    out.run += 1;
    const result = run(spec, graphs, opts);
    each(result, spec);
    if (!result.violations.length) continue;
    out.failing += 1;
    const v = result.violations[0];
    out.byKind[v.kind] = (out.byKind[v.kind] ?? 0) + 1;
    const report = { ...v, spec };
    if (out.samples.length < opts.samples) out.samples.push(report);
    if (!out.shortest || smaller(report, out.shortest) < 0) out.shortest = report;
  }
  if (out.shortest && opts.shrink) {
    const { kind } = out.shortest;
    const small = shrink(out.shortest.spec, kind, graphs, opts, run);
    const again = run(small, graphs, { ...opts, trace: true });
    const v = again.violations.find((x) => x.kind === kind) ?? again.violations[0];
    out.shortest = {
      ...v, spec: small, shrunk: true, ...(story ? { story: story(again.fullTrace) } : {}),
      trace: again.fullTrace.slice(-Math.max(opts.traceLength, 60)), whole_trace_steps: again.fullTrace.length,
    };
  }
  return out;
}

// Print a summary (JSON) with what `exploreAll` found and the replay's trace; exit 1 when a
// schedule broke the protocol.
export function report(summary, found, started, fullTrace) {
  const out = {
    ...summary,
    violations_total: found.failing,
    violations_by_kind: found.byKind,
    violations: found.samples,
    shortest: found.shortest,
    wall_ms: Date.now() - started,
  };
  if (fullTrace) out.trace = fullTrace;
  process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
  process.exitCode = found.failing ? 1 : 0;
}
