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
