"""Reading engine v2's keys as consistent snapshots, and changing them only by compare-and-set.

A scope is a ticket, N lanes (each a `served` scalar and a `meta` record) and a few markers
(keys.py). Its keys are found with SCAN, then read by one Lua script (atomic in Redis) with
Redis's own clock. Every write is a second script that first checks that what it changes is
still what was read: a lane that changed hands, or a scope that a caller arrived at, is left
alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from fnmatch import fnmatchcase
from typing import Any

import redis

from n8n_lockkit.primitives import keys

_SCAN_COUNT = 500
# What the client decodes bytes that are not UTF-8 to (redis_access sets errors="replace"):
# n8nlock writes only UTF-8, so such a name or value is someone else's.
_UNDECODABLE = "\ufffd"
# A scope whose lanes were never all seen is read again with this many lanes at most.
MAX_SLOTS = 1024

# KEYS: any keys. Returns type, value (strings only) and PTTL of each, then Redis's TIME.
_SNAPSHOT = """
local out = {}
for _, key in ipairs(KEYS) do
  local kind = redis.call('TYPE', key)['ok']
  local value = false
  if kind == 'string' then value = redis.call('GET', key) end
  out[#out + 1] = kind
  out[#out + 1] = value
  out[#out + 1] = redis.call('PTTL', key)
end
local now = redis.call('TIME')
out[#out + 1] = now[1]
out[#out + 1] = now[2]
return out
"""

# Release a lane as release.js does, if its record is still the holder that was shown.
# KEYS: meta:<k>, served:<k>, the stats counter. ARGV: lock_id, ticket, the released record,
# its TTL (s), the stats TTL (s). `served` only moves forward: a lane never serves a ticket twice.
_RELEASE_IF_HOLDER = """
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then return 'gone' end
local ok, meta = pcall(cjson.decode, redis.call('GET', KEYS[1]))
if not ok or type(meta) ~= 'table' then return 'unreadable' end
if meta.lock_id ~= ARGV[1] or tonumber(meta.ticket) ~= tonumber(ARGV[2]) then
  return 'other'
end
if meta.released then return 'released' end
redis.call('SET', KEYS[1], ARGV[3], 'EX', ARGV[4])
local served = tonumber(redis.call('GET', KEYS[2]) or '')
if served == nil or served < tonumber(ARGV[2]) then redis.call('SET', KEYS[2], ARGV[2]) end
redis.call('INCR', KEYS[3])
redis.call('EXPIRE', KEYS[3], ARGV[5])
return 'done'
"""

# Delete a record that has no TTL if it is still the value that was read. KEYS: meta, stats
# counter. ARGV: the value, the stats TTL. Returns 1 when it deleted.
_DELETE_IF_UNCHANGED = """
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then return 0 end
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('PTTL', KEYS[1]) ~= -1 then return 0 end
redis.call('DEL', KEYS[1])
redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return 1
"""

# Forget an idle scope: delete its ticket, hold average, fast-path value, lanes' `served` and
# give-up markers. The fast-path value goes with the ticket: left behind, it would name a last
# ticket out that the restarted tickets reach while an earlier one still holds.
# KEYS: ticket, hold_ms, served:0..N-1, meta:0..N-1, then the gone:<t> markers the scan saw.
# ARGV: N, the ticket the scan read, the quiet time (ms) since the last release, the scope's
# key base, how many tickets after the scan read to clear markers for.
#
# Idle: no lane is held, and no ticket is in line. Lane k serves the tickets t = k (mod N),
# from its first one (k, or N for lane 0) on; `served` is the last that left (absent: none
# yet, i.e. first - N). A ticket that gave up (gone:<t>) has left too. So the tickets still in
# line in lane k are those in (served_k, T], and lane k is empty exactly when
# T - served_k < N. The ticket T is read here, in the same script: an arrival INCRs it before
# anything else, so an arrival at any moment before this script makes its lane non-empty, and
# one after it starts the scope afresh at ticket 1.
_FORGET_IF_IDLE = """
local n = tonumber(ARGV[1])
local raw = redis.call('GET', KEYS[1])
local t = tonumber(raw or '')
if t == nil then return {0, 'no ticket'} end
local gone = {}
for i = 3 + 2 * n, #KEYS do gone[KEYS[i]] = true end
for k = 0, n - 1 do
  local meta = redis.call('GET', KEYS[3 + n + k])
  if meta then
    local ok, record = pcall(cjson.decode, meta)
    if not ok or type(record) ~= 'table' or not record.released then
      return {0, 'lane ' .. k .. ' is held'}
    end
  end
  local served = tonumber(redis.call('GET', KEYS[3 + k]) or '')
  if served == nil then
    if k == 0 then served = 0 else served = k - n end
  end
  while gone[ARGV[4] .. ':gone:' .. string.format('%d', served + n)] do served = served + n end
  if t - served >= n then
    return {0, 'ticket ' .. string.format('%d', served + n) .. ' is in line in lane ' .. k}
  end
end
local hold = redis.call('PTTL', KEYS[2])
if hold > 0 and hold > tonumber(ARGV[3]) then return {0, 'released too recently'} end
if t - tonumber(ARGV[2]) > tonumber(ARGV[5]) then return {0, 'busy since it was read'} end
-- Markers of tickets drawn after the scan (which it could not see) go too: a marker left
-- behind would make a caller of the next round skip a live holder with the same ticket.
for i = tonumber(ARGV[2]) + 1, math.min(t, tonumber(ARGV[2]) + tonumber(ARGV[5])) do
  redis.call('DEL', ARGV[4] .. ':gone:' .. string.format('%d', i))
end
for i = 3 + 2 * n, #KEYS do redis.call('DEL', KEYS[i]) end
for k = 0, n - 1 do redis.call('DEL', KEYS[3 + k]) end
redis.call('DEL', KEYS[1], KEYS[2], ARGV[4] .. ':fast')
return {1, raw}
"""
# A scope whose ticket moved on by more than this since the scan is not taken for idle.
FORGET_MARKER_WINDOW = 1000


@dataclass(frozen=True)
class ForeignKey:
    """A key under n8nlock's prefix that n8nlock did not write (never read further, never
    changed)."""

    key: str
    kind: str


@dataclass(frozen=True)
class Lane:
    """One lane of a scope: its `served` scalar and its record, as Redis held them at once."""

    scope: str
    lane: int
    slots: int
    served: int | None
    meta_raw: str | None
    meta_pttl_ms: int  # -2 absent, -1 no TTL
    redis_now_ms: int
    meta: dict[str, Any] | None = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "meta", parse_meta(self.meta_raw))

    @property
    def key(self) -> str:
        return keys.lane_meta_key(self.scope, self.lane)

    @property
    def served_key(self) -> str:
        return keys.served_key(self.scope, self.lane)

    @property
    def held(self) -> bool:
        """A holder's record (a release overwrites it with a `released` one)."""
        return self.meta is not None and not self.meta.get("released")

    @property
    def ticket(self) -> int | None:
        value = (self.meta or {}).get("ticket")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def head(self) -> int:
        """The ticket that holds, or is next to hold, this lane."""
        return keys.head_of(self.served, self.lane, self.slots)

    @property
    def ttl_seconds(self) -> float | None:
        return self.meta_pttl_ms / 1000 if self.meta_pttl_ms >= 0 else None

    @property
    def age_seconds(self) -> float | None:
        meta = self.meta or {}
        locked = meta.get("locked_ms")
        if not isinstance(locked, int | float) or isinstance(locked, bool):
            locked = timestamp_ms(meta.get("locked_at"))
        return None if locked is None else (self.redis_now_ms - locked) / 1000

    @property
    def problems(self) -> list[str]:
        found = []
        if self.meta_raw is not None and self.meta is None:
            found.append("unreadable meta")
        if self.meta_raw is not None and self.meta_pttl_ms == -1:
            found.append("no TTL")
        if self.held and self.ticket != self.head:
            # The engine's waiters only see a record whose ticket is the lane's head.
            found.append(f"ticket {self.ticket} is not the lane's head {self.head}")
        return found


@dataclass(frozen=True)
class ScopeState:
    """A scope's ticket and lanes, read at one instant."""

    scope: str
    ticket: int | None
    lanes: tuple[Lane, ...]
    gone: tuple[int, ...]  # tickets whose give-up marker the scan saw
    hold_pttl_ms: int
    redis_now_ms: int

    @property
    def slots(self) -> int:
        return len(self.lanes)

    @property
    def held(self) -> list[Lane]:
        return [lane for lane in self.lanes if lane.held]

    @property
    def in_line(self) -> int:
        """Tickets drawn and not yet served: lane k serves t = k (mod N), so the tickets in
        its line are those in (served_k, T], floor((T - served_k) / N) of them (a lane never
        served counts from first - N, like head_of)."""
        if self.ticket is None:
            return 0
        total = 0
        for lane in self.lanes:
            served = lane.head - self.slots
            total += max(0, (self.ticket - served) // self.slots)
        return total

    @property
    def waiting(self) -> int:
        """Callers in line that do not hold a lane: tickets in line, minus the holders, minus
        the tickets that gave up (a `gone` marker) and are still in line until the caller
        behind skips them. A caller that died while waiting counts until the caller behind it
        skips its ticket (keys.SKIP_GRACE_SECONDS after it became the head)."""
        if self.ticket is None:
            return 0
        gone_in_line = sum(
            1
            for ticket in self.gone
            if ticket <= self.ticket and ticket >= self.lanes[ticket % self.slots].head
        )
        return max(0, self.in_line - len(self.held) - gone_in_line)


@dataclass(frozen=True)
class Scan:
    """What a scope glob found: engine v2's scopes, keys under its prefix it did not write,
    and the scopes a format-1 lock (before engine v2) is still held on."""

    states: list[ScopeState]
    foreign: list[ForeignKey]
    v1_held: list[str] = field(default_factory=list)


def parse_meta(raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        meta = json.loads(raw)
    except ValueError:
        return None
    return meta if isinstance(meta, dict) and meta.get("lock_id") else None


def timestamp_ms(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return int(stamp.timestamp() * 1000)


def iso_ms(epoch_ms: int) -> str:
    """A time as JavaScript's toISOString writes it."""
    stamp = datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def current_hour(redis_now_ms: int) -> str:
    """The hour bucket the primitives write now (UTC, yyyymmddhh, like `toISOString`)."""
    return datetime.fromtimestamp(redis_now_ms / 1000, tz=timezone.utc).strftime("%Y%m%d%H")


def _count(value: str | None) -> int | None:
    """A scalar n8nlock wrote: a decimal integer; None when absent. Raises ValueError."""
    if value is None:
        return None
    if not value.lstrip("-").isdigit() or not value.isascii():
        raise ValueError(value)
    return int(value)


@dataclass
class _Found:
    """One scope's keys, as the scan saw them."""

    lanes: set[int] = field(default_factory=set)
    gone: set[int] = field(default_factory=set)
    v2: bool = False


class LockStore:
    """n8nlock's keys in one Redis: read only what it wrote, change only what is unchanged."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        self._snapshot = client.register_script(_SNAPSHOT)
        self._release = client.register_script(_RELEASE_IF_HOLDER)
        self._delete = client.register_script(_DELETE_IF_UNCHANGED)
        self._forget = client.register_script(_FORGET_IF_IDLE)

    def now_ms(self) -> int:
        """Redis's clock: the primitives' TTLs run on it, and the hour buckets follow n8n's,
        which NTP keeps close."""
        seconds, micros = self._client.time()
        return int(seconds) * 1000 + int(micros) // 1000

    def scan_keys(self, pattern: str) -> Iterator[str]:
        """SCAN, never KEYS: it does not block Redis on a large keyspace."""
        for key in self._client.scan_iter(match=pattern, count=_SCAN_COUNT):
            yield str(key)

    def scan(self, glob: str) -> Scan:
        """Every scope matching `glob` that has a key of engine v2, read one by one."""
        return self._collect(f"{keys.LOCK_PREFIX}{glob}*", lambda scope: fnmatchcase(scope, glob))

    def read(self, scope: str) -> ScopeState | ForeignKey | None:
        """Exactly `scope` (None when it has no key of engine v2)."""
        scan = self._collect(keys.scan_pattern(scope), lambda found: found == scope)
        if scan.foreign:
            return scan.foreign[0]
        return scan.states[0] if scan.states else None

    def refresh(self, state: ScopeState) -> ScopeState | ForeignKey:
        """`state`'s keys read again, without another SCAN (the same lanes and markers)."""
        return self._read(state.scope, _Found(set(range(state.slots)), set(state.gone), True))

    def _collect(self, pattern: str, wanted: Any) -> Scan:
        found: dict[str, _Found] = {}
        foreign: list[ForeignKey] = []
        v1: list[tuple[str, str, str]] = []
        for key in self.scan_keys(pattern):
            if _UNDECODABLE in key:
                foreign.append(ForeignKey(key, "a name that is not UTF-8"))
                continue
            parsed = keys.parse_key(key)
            if parsed is None or not wanted(parsed[0]):
                continue
            scope, kind, number = parsed
            if kind.startswith("v1_"):
                v1.append((key, scope, kind))
                continue
            entry = found.setdefault(scope, _Found())
            entry.v2 = True
            if kind in ("served", "meta") and number is not None:
                entry.lanes.add(number)
            elif kind == "gone" and number is not None:
                entry.gone.add(number)
        v1_held = self._v1_held(v1, foreign)
        states: list[ScopeState] = []
        for scope in sorted(found):
            state = self._read(scope, found[scope])
            if isinstance(state, ForeignKey):
                foreign.append(state)
            else:
                states.append(state)
        return Scan(states, foreign, v1_held)

    def _v1_held(self, v1: list[tuple[str, str, str]], foreign: list[ForeignKey]) -> list[str]:
        """Format-1 scopes whose record is still there; a bare name that is not a counter is
        someone else's key."""
        if not v1:
            return []
        pipe = self._client.pipeline(transaction=False)
        for key, _, _ in v1:
            pipe.type(key)
            pipe.get(key)
        replies = pipe.execute(raise_on_error=False)
        held: set[str] = set()
        for index, (key, scope, kind) in enumerate(v1):
            kind_found, value = replies[2 * index], replies[2 * index + 1]
            if kind == "v1_meta" and kind_found == "string" and parse_meta(value) is not None:
                held.add(scope)
            elif kind == "v1_counter" and (kind_found != "string" or not _is_count(value)):
                foreign.append(ForeignKey(key, f"a {kind_found}, not a key of n8nlock's"))
        return sorted(held)

    def _read(self, scope: str, seen: _Found) -> ScopeState | ForeignKey:
        slots = max(seen.lanes, default=0) + 1
        while True:
            state = self._snapshot_scope(scope, slots, tuple(sorted(seen.gone)))
            if isinstance(state, ForeignKey):
                return state
            named = max(
                (s for lane in state.lanes if isinstance(s := (lane.meta or {}).get("slots"), int)),
                default=0,
            )
            if named <= slots or named > MAX_SLOTS:
                return state
            slots = named  # a held record names more lanes than the scan saw

    def _snapshot_scope(
        self, scope: str, slots: int, gone: tuple[int, ...]
    ) -> ScopeState | ForeignKey:
        names = [keys.ticket_key(scope), keys.hold_key(scope)]
        names += [keys.served_key(scope, lane) for lane in range(slots)]
        names += [keys.lane_meta_key(scope, lane) for lane in range(slots)]
        reply = self._snapshot(keys=names)
        kinds, values, pttls = reply[0:-2:3], reply[1:-2:3], reply[2:-2:3]
        for name, kind, value in zip(names, kinds, values, strict=True):
            if kind not in ("none", "string"):
                return ForeignKey(name, f"a {kind}, not a key of n8nlock's")
            if _UNDECODABLE in (value or ""):
                return ForeignKey(name, "not UTF-8 text, not a key of n8nlock's")
        try:
            ticket = _count(values[0])
            _count(values[1])
            served = [_count(value) for value in values[2 : 2 + slots]]
        except ValueError:
            bad = next(n for n, v in zip(names, values, strict=True) if not _is_count(v))
            return ForeignKey(bad, "a string that is not a count, not a key of n8nlock's")
        now = int(reply[-2]) * 1000 + int(reply[-1]) // 1000
        lanes = tuple(
            Lane(
                scope=scope,
                lane=lane,
                slots=slots,
                served=served[lane],
                meta_raw=values[2 + slots + lane],
                meta_pttl_ms=int(pttls[2 + slots + lane]),
                redis_now_ms=now,
            )
            for lane in range(slots)
        )
        return ScopeState(scope, ticket, lanes, gone, int(pttls[1]), now)

    def release_if_holder(self, lane: Lane, metric: str) -> str:
        """Release `lane` as its holder would, if its record still names the holder shown;
        count `metric`. Returns done, or why nothing changed: released (by its holder), gone
        (the record expired), other (another holder now), unreadable."""
        assert lane.held and lane.meta is not None and lane.ticket is not None
        now = self.now_ms()
        record = {
            "released": True,
            "ticket": lane.ticket,
            "lock_id": lane.meta["lock_id"],
            "released_at": iso_ms(now),
        }
        arguments: list[str | int] = [
            str(lane.meta["lock_id"]),
            lane.ticket,
            json.dumps(record, separators=(",", ":")),
            keys.RELEASED_META_TTL_SECONDS,
            keys.STATS_TTL_SECONDS,
        ]
        stats = keys.stats_key(current_hour(now), metric, lane.scope)
        return str(self._release(keys=[lane.key, lane.served_key, stats], args=arguments))

    def delete_if_unchanged(self, lane: Lane, metric: str) -> bool:
        """Delete a record without TTL only if it is still what `lane` saw; count `metric`."""
        assert lane.meta_raw is not None
        stats = keys.stats_key(current_hour(lane.redis_now_ms), metric, lane.scope)
        arguments: list[str | int] = [lane.meta_raw, keys.STATS_TTL_SECONDS]
        return bool(self._delete(keys=[lane.key, stats], args=arguments))

    def forget_if_idle(self, state: ScopeState, quiet_seconds: float) -> tuple[bool, str]:
        """Delete an idle scope's scalars (see _FORGET_IF_IDLE). Returns (deleted, the ticket
        it had, or why not)."""
        scope, slots = state.scope, state.slots
        names = [keys.ticket_key(scope), keys.hold_key(scope)]
        names += [keys.served_key(scope, lane) for lane in range(slots)]
        names += [keys.lane_meta_key(scope, lane) for lane in range(slots)]
        names += [keys.gone_key(scope, ticket) for ticket in state.gone]
        quiet_ms = max(0, keys.HOLD_TTL_SECONDS * 1000 - int(quiet_seconds * 1000))
        arguments: list[str | int] = [
            slots,
            state.ticket or 0,
            quiet_ms,
            f"{keys.LOCK_PREFIX}{scope}",
            FORGET_MARKER_WINDOW,
        ]
        deleted, detail = self._forget(keys=names, args=arguments)
        return bool(deleted), str(detail)

    def values(self, names: list[str]) -> list[str | None]:
        """MGET in slices (a key of another type answers None)."""
        found: list[str | None] = []
        for start in range(0, len(names), _SCAN_COUNT):
            chunk = self._client.mget(names[start : start + _SCAN_COUNT])
            found.extend(None if value is None else str(value) for value in chunk)
        return found


def _is_count(value: str | None) -> bool:
    try:
        _count(value)
    except ValueError:
        return False
    return True
