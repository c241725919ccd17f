"""Reading n8nlock's lock keys as one consistent snapshot, and deleting them only if unchanged.

A snapshot is taken by one Lua script (atomic in Redis): both keys' types, values and TTLs, and
Redis's own clock. A delete is a second script that first checks that the keys are still what
a snapshot saw, so a lock that changed hands in between is never touched.
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

# Types a key of ours can have: absent, or a string (the counter, the JSON record).
_OURS = ("none", "string")
# Two reads of a key that was never re-created agree on its expiry to the millisecond; a key
# deleted and created again by a new holder gets a new one.
EXPIRY_TOLERANCE_MS = 100
_SCAN_COUNT = 500
# What the client decodes bytes that are not UTF-8 to (redis_access sets errors="replace"):
# n8nlock writes only UTF-8, so such a name or value is someone else's.
_UNDECODABLE = "\ufffd"

_SNAPSHOT = """
local counter_type = redis.call('TYPE', KEYS[1])['ok']
local meta_type = redis.call('TYPE', KEYS[2])['ok']
local counter = false
local meta = false
if counter_type == 'string' then counter = redis.call('GET', KEYS[1]) end
if meta_type == 'string' then meta = redis.call('GET', KEYS[2]) end
local now = redis.call('TIME')
return {counter_type, meta_type, counter, meta,
        redis.call('PTTL', KEYS[1]), redis.call('PTTL', KEYS[2]), now[1], now[2]}
"""

# KEYS: counter, meta, the stats counter to INCR. ARGV: the counter and the meta as the
# snapshot saw them ('' = absent), the counter's expiry then (ms, Redis clock; -1 = no TTL),
# the tolerance (ms), the stats TTL (s). Returns 1 when it deleted, 0 when anything differed.
_DELETE_IF_UNCHANGED = """
local function same(key, expected)
  local kind = redis.call('TYPE', key)['ok']
  if expected == '' then return kind == 'none' end
  return kind == 'string' and redis.call('GET', key) == expected
end
if not (same(KEYS[1], ARGV[1]) and same(KEYS[2], ARGV[2])) then return 0 end
if ARGV[1] ~= '' then
  local pttl = redis.call('PTTL', KEYS[1])
  local expected = tonumber(ARGV[3])
  if pttl == -1 or expected == -1 then
    if pttl ~= expected then return 0 end
  else
    local now = redis.call('TIME')
    local expiry = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + pttl
    if math.abs(expiry - expected) > tonumber(ARGV[4]) then return 0 end
  end
end
redis.call('DEL', KEYS[2], KEYS[1])
redis.call('INCR', KEYS[3])
redis.call('EXPIRE', KEYS[3], ARGV[5])
return 1
"""


@dataclass(frozen=True)
class ForeignKey:
    """A key under n8nlock's prefix that n8nlock did not write (never read further, never
    deleted)."""

    key: str
    kind: str


@dataclass(frozen=True)
class LockState:
    """One scope's counter and record, as Redis held them at one instant."""

    scope: str
    counter: str | None
    meta_raw: str | None
    counter_pttl_ms: int  # -2 absent, -1 no TTL
    meta_pttl_ms: int
    redis_now_ms: int
    meta: dict[str, Any] | None = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "meta", _parse_meta(self.meta_raw))

    @property
    def key(self) -> str:
        return keys.lock_key(self.scope)

    @property
    def meta_key(self) -> str:
        return keys.meta_key(self.scope)

    @property
    def held(self) -> bool:
        return self.counter is not None

    @property
    def counter_expiry_ms(self) -> int:
        """When the counter expires (Redis clock, ms), or -1 when it never does."""
        return self.redis_now_ms + self.counter_pttl_ms if self.counter_pttl_ms >= 0 else -1

    @property
    def ttl_seconds(self) -> float | None:
        return self.counter_pttl_ms / 1000 if self.counter_pttl_ms >= 0 else None

    @property
    def has_no_ttl(self) -> bool:
        return (self.held and self.counter_pttl_ms == -1) or (
            self.meta_raw is not None and self.meta_pttl_ms == -1
        )

    @property
    def problems(self) -> list[str]:
        found = []
        if self.held and self.meta_raw is None:
            found.append("no meta")
        elif self.meta_raw is not None and self.meta is None:
            found.append("unreadable meta")
        if self.has_no_ttl:
            found.append("no TTL")
        return found

    @property
    def age_seconds(self) -> float | None:
        locked_at = _timestamp_ms((self.meta or {}).get("locked_at"))
        return None if locked_at is None else (self.redis_now_ms - locked_at) / 1000

    @property
    def keys_present(self) -> list[str]:
        """What a delete removes: the record first, then the counter (as lock_release does)."""
        present = [self.meta_key] if self.meta_raw is not None else []
        return present + ([self.key] if self.held else [])

    def same_as(self, other: LockState) -> bool:
        """The same keys: equal values, and the counter's expiry unchanged (not re-created)."""
        if (self.counter, self.meta_raw) != (other.counter, other.meta_raw):
            return False
        if not self.held:
            return True
        mine, theirs = self.counter_expiry_ms, other.counter_expiry_ms
        if -1 in (mine, theirs):
            return mine == theirs
        return abs(mine - theirs) <= EXPIRY_TOLERANCE_MS


def _parse_meta(raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        meta = json.loads(raw)
    except ValueError:
        return None
    return meta if isinstance(meta, dict) and meta.get("lock_id") else None


def _timestamp_ms(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return int(stamp.timestamp() * 1000)


def _is_count(value: str | None) -> bool:
    return value is None or value.lstrip("-").isdigit()


@dataclass(frozen=True)
class Scan:
    """What a scope glob found: n8nlock's locks, and keys under its prefix it did not write."""

    states: list[LockState]
    foreign: list[ForeignKey]


def current_hour(redis_now_ms: int) -> str:
    """The hour bucket the primitives write now (UTC, yyyymmddhh, like `toISOString`)."""
    return datetime.fromtimestamp(redis_now_ms / 1000, tz=timezone.utc).strftime("%Y%m%d%H")


class LockStore:
    """n8nlock's keys in one Redis: read only what it wrote, delete only what is unchanged."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        self._snapshot = client.register_script(_SNAPSHOT)
        self._delete = client.register_script(_DELETE_IF_UNCHANGED)

    def now_ms(self) -> int:
        """Redis's clock: the primitives' TTLs run on it, and the hour buckets follow n8n's,
        which NTP keeps close."""
        seconds, micros = self._client.time()
        return int(seconds) * 1000 + int(micros) // 1000

    def scan_keys(self, pattern: str) -> Iterator[str]:
        """SCAN, never KEYS: it does not block Redis on a large keyspace."""
        for key in self._client.scan_iter(match=pattern, count=_SCAN_COUNT):
            yield str(key)

    def read(self, scope: str) -> LockState | ForeignKey:
        """One scope's snapshot, or the key that shows n8nlock did not write it."""
        reply = self._snapshot(keys=[keys.lock_key(scope), keys.meta_key(scope)])
        counter_type, meta_type, counter, meta, counter_pttl, meta_pttl, seconds, micros = reply
        if counter_type not in _OURS or not _is_count(counter):
            return ForeignKey(keys.lock_key(scope), f"a {counter_type}, not a lock counter")
        if meta_type not in _OURS:
            return ForeignKey(keys.meta_key(scope), f"a {meta_type}, not a lock record")
        if _UNDECODABLE in (meta or ""):
            return ForeignKey(keys.meta_key(scope), "not UTF-8 text, not a lock record")
        return LockState(
            scope=scope,
            counter=counter or None,
            meta_raw=meta or None,
            counter_pttl_ms=int(counter_pttl),
            meta_pttl_ms=int(meta_pttl),
            redis_now_ms=int(seconds) * 1000 + int(micros) // 1000,
        )

    def scan(self, glob: str) -> Scan:
        """Every scope matching `glob` that has a counter or a record, read one by one."""
        scopes: set[str] = set()
        foreign: list[ForeignKey] = []
        for key in self.scan_keys(f"{keys.LOCK_PREFIX}{glob}"):
            if _UNDECODABLE in key:
                foreign.append(ForeignKey(key, "a name that is not UTF-8"))
                continue
            name = key.removeprefix(keys.LOCK_PREFIX)
            if name.endswith(keys.FENCE_SUFFIX):
                continue
            scope = name.removesuffix(keys.META_SUFFIX)
            if fnmatchcase(scope, glob):
                scopes.add(scope)
        states: list[LockState] = []
        for scope in sorted(scopes):
            found = self.read(scope)
            if isinstance(found, ForeignKey):
                foreign.append(found)
            else:
                states.append(found)
        return Scan(states, foreign)

    def delete_if_unchanged(self, state: LockState, metric: str) -> bool:
        """Delete the record and the counter only if both are still what `state` saw; count
        `metric` for the scope in the same atomic step."""
        stats = keys.stats_key(current_hour(state.redis_now_ms), metric, state.scope)
        arguments: list[str | int] = [
            state.counter or "",
            state.meta_raw or "",
            state.counter_expiry_ms,
            EXPIRY_TOLERANCE_MS,
            keys.STATS_TTL_SECONDS,
        ]
        return bool(self._delete(keys=[state.key, state.meta_key, stats], args=arguments))

    def values(self, names: list[str]) -> list[str | None]:
        """MGET in slices (a key of another type answers None)."""
        found: list[str | None] = []
        for start in range(0, len(names), _SCAN_COUNT):
            chunk = self._client.mget(names[start : start + _SCAN_COUNT])
            found.extend(None if value is None else str(value) for value in chunk)
        return found
