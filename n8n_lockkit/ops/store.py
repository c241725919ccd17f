"""Reading engine v2's keys as consistent snapshots, and changing them only by compare-and-set.

A scope is a ticket, N lanes (each a `served` scalar and a `meta` record) and a few markers
(keys.py). Format 3 keeps the holder's record per ticket (`holder:<t>`, the lease the engine
decides on); the lane's `meta` record is then only a copy of it, which a caller skipped while it
stalled may have overwritten late. So the holder of lane k is read from the records of its
head (served + N) and of its last ticket out (`served`, which may have entered late and hold
still); a record of format 2 (no `format` field) lives only at `meta:<k>` and is the holder's
own. Its keys are found with SCAN, then read by one Lua script (atomic in Redis) with Redis's
own clock. Every write is a second script that first checks that what it changes is still what
was read: a lane that changed hands, or a scope that a caller arrived at, is left alone.
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

# Shared by the scripts below: whether a JSON value is set the way JavaScript reads it
# (cjson decodes null to cjson.null, which Lua takes for true), and a key of the scope.
_LUA_HELPERS = """
local function truthy(value)
  return value ~= nil and value ~= false and value ~= cjson.null and value ~= 0 and value ~= ''
end
local function decoded(raw)
  if not raw then return nil end
  local ok, record = pcall(cjson.decode, raw)
  if ok and type(record) == 'table' then return record end
  return nil
end
local function ticket_key(base, kind, ticket)
  return base .. ':' .. kind .. ':' .. string.format('%d', ticket)
end
"""

# KEYS: ticket, hold_ms, served:0..N-1, meta:0..N-1, then the holder:<t> keys the scan saw.
# ARGV: N, the scope's key base. Returns type, value (strings only) and PTTL of each key; then,
# per lane, the holder records of its head (served + N) and of its last ticket out (served),
# each as ticket (false: none), type, value, PTTL; then Redis's TIME. The lane's head is
# computed here from the `served` read here, so the three are one instant.
_SNAPSHOT = (
    _LUA_HELPERS
    + """
local out = {}
local function read(key)
  local kind = redis.call('TYPE', key)['ok']
  local value = false
  if kind == 'string' then value = redis.call('GET', key) end
  out[#out + 1] = kind
  out[#out + 1] = value
  out[#out + 1] = redis.call('PTTL', key)
  return value
end
local values = {}
for i, key in ipairs(KEYS) do values[i] = read(key) end
local function holder(ticket)
  if ticket == nil or ticket < 1 then
    out[#out + 1] = false
    out[#out + 1] = 'none'
    out[#out + 1] = false
    out[#out + 1] = -2
    return
  end
  out[#out + 1] = ticket
  read(ticket_key(ARGV[2], 'holder', ticket))
end
local n = tonumber(ARGV[1])
for k = 0, n - 1 do
  local raw = values[3 + k]
  local served = nil
  if raw and string.match(raw, '^%-?%d+$') then served = tonumber(raw) end
  local first = k
  if k == 0 then first = n end
  holder((served or (first - n)) + n)
  holder(served)
end
local now = redis.call('TIME')
out[#out + 1] = now[1]
out[#out + 1] = now[2]
return out
"""
)

# Release a lane as release.js does, if its record is still the holder that was shown.
# KEYS: meta:<k>, served:<k>, the stats counter, holder:<t> (format 2: meta:<k> again).
# ARGV: lock_id, ticket, the released record, its TTL (s), the stats TTL (s), the format.
# `served` only moves forward: a lane never serves a ticket twice. Format 3: the ticket's own
# record decides; the lane's copy is marked released only when it is that ticket's (or
# absent), so that a later holder's copy is never overwritten.
_RELEASE_IF_HOLDER = (
    _LUA_HELPERS
    + """
local ticket = tonumber(ARGV[2])
local record_key = KEYS[1]
if ARGV[6] == '3' then record_key = KEYS[4] end
if redis.call('TYPE', record_key)['ok'] ~= 'string' then return 'gone' end
local record = decoded(redis.call('GET', record_key))
if record == nil then return 'unreadable' end
if record.lock_id ~= ARGV[1] or tonumber(record.ticket) ~= ticket then return 'other' end
if truthy(record.released) then
  if truthy(record.withdrawn) then return 'withdrawn' end
  return 'released'
end
local served = tonumber(redis.call('GET', KEYS[2]) or '')
if served == nil or served < ticket then redis.call('SET', KEYS[2], ARGV[2]) end
if ARGV[6] == '3' then
  local kind = redis.call('TYPE', KEYS[1])['ok']
  local mine = kind == 'none'
  if kind == 'string' then
    local copy = decoded(redis.call('GET', KEYS[1]))
    mine = copy ~= nil and copy.lock_id == ARGV[1] and tonumber(copy.ticket) == ticket
  end
  if mine then redis.call('SET', KEYS[1], ARGV[3], 'EX', ARGV[4]) end
end
redis.call('SET', record_key, ARGV[3], 'EX', ARGV[4])
redis.call('INCR', KEYS[3])
redis.call('EXPIRE', KEYS[3], ARGV[5])
return 'done'
"""
)

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

# Forget an idle scope: delete its ticket, hold average, fast-path value and lanes' `served`.
# The fast-path value goes with the ticket: left behind, it would name a last ticket out that
# the restarted tickets reach while an earlier one still holds.
# KEYS: ticket, hold_ms, served:0..N-1, meta:0..N-1, then the gone:<t> marks the scan saw.
# ARGV: N, the ticket the scan read, the quiet time (ms) since the last release, the scope's
# key base, how many tickets around the scan's read to look for marks at, then the tickets of
# the holder:<t> records the scan saw.
#
# Idle: no lane is held, no ticket is in line, and no `gone` mark is left. Lane k
# serves the tickets t = k (mod N), from its first one (k, or N for lane 0) on; `served` is the
# last that left (absent: none yet, i.e. first - N). A ticket that gave up (gone:<t>) has left
# too. So the tickets still in line in lane k are those in (served_k, T], and lane k is empty
# exactly when T - served_k < N. The ticket T is read here, in the same script: an arrival
# INCRs it before anything else, so an arrival at any moment before this script makes its lane
# non-empty, and one after it starts the scope afresh at ticket 1.
#
# Held (format 3): the record of a lane's head or of its last ticket out (which may have
# entered late) is there and not released, or the record of the ticket the lane's copy names
# is, or any holder:<t> record the scan saw; format 2: the lane's record is not released (an
# unreadable one counts as held).
#
# A `gone` mark keeps the scope: a caller skipped while it stalled (format 3) reads its mark
# when it writes its record late, and withdraws. Deleting the mark, or restarting the tickets
# so that another caller draws its number, would let it hold beside the next round's holder;
# marks live at least keys.GONE_MIN_TTL_SECONDS, and the scope is forgotten once they expired.
_FORGET_IF_IDLE = (
    _LUA_HELPERS
    + """
local n = tonumber(ARGV[1])
local base = ARGV[4]
local raw = redis.call('GET', KEYS[1])
local t = tonumber(raw or '')
if t == nil then return {0, 'no ticket'} end
local function active(ticket)
  if ticket == nil or ticket < 1 then return false end
  local key = ticket_key(base, 'holder', ticket)
  if redis.call('TYPE', key)['ok'] ~= 'string' then return false end
  local record = decoded(redis.call('GET', key))
  return record ~= nil and not truthy(record.released) and record.ticket == ticket
end
local gone = {}
for i = 3 + 2 * n, #KEYS do gone[KEYS[i]] = true end
for k = 0, n - 1 do
  local held = {0, 'lane ' .. k .. ' is held'}
  local first = k
  if k == 0 then first = n end
  local served = tonumber(redis.call('GET', KEYS[3 + k]) or '')
  if served == nil then served = first - n end
  if active(served + n) or active(served) then return held end
  local meta = redis.call('GET', KEYS[3 + n + k])
  if meta then
    local record = decoded(meta)
    if record == nil then return held end
    if not truthy(record.released) then
      if record.format == nil or record.format == cjson.null then return held end
      if type(record.ticket) == 'number' and active(record.ticket) then return held end
    end
  end
  while gone[ticket_key(base, 'gone', served + n)] do served = served + n end
  if t - served >= n then
    return {0, 'ticket ' .. string.format('%d', served + n) .. ' is in line in lane ' .. k}
  end
end
for i = 6, #ARGV do
  local ticket = tonumber(ARGV[i])
  if active(ticket) then
    return {0, 'the record of ticket ' .. string.format('%d', ticket) .. ' still holds'}
  end
end
local function mark(ticket)
  return {0, 'ticket ' .. string.format('%d', ticket) .. ' gave up or was skipped: kept until '
    .. 'its mark expires (a caller skipped while it stalled may still wake)'}
end
for i = 3 + 2 * n, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return mark(tonumber(string.match(KEYS[i], '(%d+)$')))
  end
end
local hold = redis.call('PTTL', KEYS[2])
if hold > 0 and hold > tonumber(ARGV[3]) then return {0, 'released too recently'} end
local read = tonumber(ARGV[2])
local window = tonumber(ARGV[5])
if t - read > window then return {0, 'busy since it was read'} end
-- Marks the scan could not see (written while it ran, or for tickets drawn after it).
for i = math.max(1, read - window + 1), t do
  if redis.call('EXISTS', ticket_key(base, 'gone', i)) == 1 then return mark(i) end
end
for k = 0, n - 1 do redis.call('DEL', KEYS[3 + k]) end
redis.call('DEL', KEYS[1], KEYS[2], base .. ':fast')
return {1, raw}
"""
)
# How many tickets before the scan's read, and after it, the forget script looks for `gone`
# marks at; a scope whose ticket moved on by more than this since the scan is not taken for idle.
FORGET_MARKER_WINDOW = 1000


@dataclass(frozen=True)
class ForeignKey:
    """A key under n8nlock's prefix that n8nlock did not write (never read further, never
    changed)."""

    key: str
    kind: str


@dataclass(frozen=True)
class TicketRecord:
    """`holder:<ticket>`: one ticket's own record (format 3), its lease, as Redis held it."""

    scope: str
    ticket: int
    raw: str | None
    pttl_ms: int  # -2 absent, -1 no TTL
    record: dict[str, Any] | None = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "record", parse_meta(self.raw))

    @property
    def key(self) -> str:
        return keys.holder_key(self.scope, self.ticket)

    @property
    def active(self) -> bool:
        """The ticket holds, as the engine decides it: its record is there, names it, and is
        not released (a withdrawn record is a released one)."""
        record = self.record
        return (
            record is not None
            and not record.get("released")
            and _int(record.get("ticket")) == self.ticket
        )


@dataclass(frozen=True)
class Lane:
    """One lane of a scope, as Redis held it at once: its `served` scalar, the record at its
    lane key `meta:<k>`, and the records (format 3) of its head and of its last ticket out.

    `meta` is the holder's record: format 3's `holder:<t>` of the head, else of the last ticket
    out (it entered late after a skip, or a release is under way; the head waits for it until
    its record says released), else the lane's record when it is of format 2 (no `format`
    field). The lane's copy of a format-3 record (`copy`) holds nothing by itself: a caller
    skipped while it stalled may have written it late. Without a holder, `meta` is the lane's
    record (released, stale or None)."""

    scope: str
    lane: int
    slots: int
    served: int | None
    meta_raw: str | None
    meta_pttl_ms: int  # -2 absent, -1 no TTL
    redis_now_ms: int
    head_record: TicketRecord | None = None  # holder:<head>
    last_record: TicketRecord | None = None  # holder:<served>, when the lane served a ticket
    copy: dict[str, Any] | None = field(init=False, compare=False)
    holder: TicketRecord | None = field(init=False, compare=False)
    meta: dict[str, Any] | None = field(init=False, compare=False)

    def __post_init__(self) -> None:
        copy = parse_meta(self.meta_raw)
        holder = next(
            (r for r in (self.head_record, self.last_record) if r is not None and r.active), None
        )
        object.__setattr__(self, "copy", copy)
        object.__setattr__(self, "holder", holder)
        object.__setattr__(self, "meta", holder.record if holder is not None else copy)

    @property
    def key(self) -> str:
        """The lane's key `meta:<k>` (format 2: the holder's record; format 3: its copy)."""
        return keys.lane_meta_key(self.scope, self.lane)

    @property
    def served_key(self) -> str:
        return keys.served_key(self.scope, self.lane)

    @property
    def format(self) -> int | None:
        """3: the holder's record is its ticket's own; 2: it is the lane's; None: not held."""
        if self.holder is not None:
            return 3
        return 2 if self.held else None

    @property
    def record_key(self) -> str:
        """Where the holder's record is (the lane's key when nothing holds)."""
        return self.holder.key if self.holder is not None else self.key

    @property
    def record_pttl_ms(self) -> int:
        return self.holder.pttl_ms if self.holder is not None else self.meta_pttl_ms

    @property
    def held(self) -> bool:
        """A ticket's own record that holds (format 3), or a format-2 record not released."""
        if self.holder is not None:
            return True
        copy = self.copy
        return copy is not None and copy.get("format") is None and not copy.get("released")

    @property
    def ticket(self) -> int | None:
        return _int((self.meta or {}).get("ticket"))

    @property
    def head(self) -> int:
        """The ticket that holds, or is next to hold, this lane."""
        return keys.head_of(self.served, self.lane, self.slots)

    @property
    def ttl_seconds(self) -> float | None:
        pttl = self.record_pttl_ms
        return pttl / 1000 if pttl >= 0 else None

    @property
    def age_seconds(self) -> float | None:
        meta = self.meta or {}
        locked = meta.get("locked_ms")
        if not isinstance(locked, int | float) or isinstance(locked, bool):
            locked = timestamp_ms(meta.get("locked_at"))
        return None if locked is None else (self.redis_now_ms - locked) / 1000

    @property
    def copy_names_holder(self) -> bool:
        """The lane's copy names the format-3 holder's lock_id and ticket (held or released):
        a release marks it; a copy of another ticket it leaves alone."""
        if self.holder is None or self.copy is None:
            return False
        meta = self.meta or {}
        return _int(self.copy.get("ticket")) == self.ticket and self.copy.get(
            "lock_id"
        ) == meta.get("lock_id")

    @property
    def copy_is_stale(self) -> bool:
        """A format-3 holder whose lane copy is missing or another lock's (callers of format 2,
        and lock_release calls without a ticket, read the copy). A released copy of the holder
        itself is no stale one: its release is under way (release.js marks the record, then
        the copy, then advances the lane)."""
        return self.holder is not None and not self.copy_names_holder

    @property
    def problems(self) -> list[str]:
        found = []
        if self.meta_raw is not None and self.copy is None:
            found.append("unreadable meta")
        for record in (self.head_record, self.last_record):
            if record is not None and record.raw is not None and record.record is None:
                found.append(f"unreadable record of ticket {record.ticket}")
        if (self.holder is not None or self.meta_raw is not None) and self.record_pttl_ms == -1:
            found.append("no TTL")
        if self.held and self.ticket != self.head:
            if self.holder is None:
                # Format 2's waiters only see a record whose ticket is the lane's head.
                found.append(f"ticket {self.ticket} is not the lane's head {self.head}")
            else:
                found.append(
                    f"ticket {self.ticket} still holds after its lane moved on (its release is "
                    f"under way, or it entered late after a skip): ticket {self.head} waits for it"
                )
        if self.copy_is_stale and self.meta_raw is None:
            found.append(f"no copy of the holder's record at {self.key}")
        elif self.copy_is_stale and self.copy is not None:
            found.append(f"stale copy at {self.key} ({describe_copy(self.copy)})")
        return found


def describe_copy(copy: dict[str, Any] | None) -> str:
    """What a lane's copy of its holder's record names, for the operator."""
    if copy is None:
        return "an unreadable record"
    ticket = _int(copy.get("ticket"))
    named = f"ticket {ticket}" if ticket is not None else f"lock {copy.get('lock_id')}"
    return f"{named}, released" if copy.get("released") else named


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class ScopeState:
    """A scope's ticket and lanes, read at one instant."""

    scope: str
    ticket: int | None
    lanes: tuple[Lane, ...]
    gone: tuple[int, ...]  # tickets whose give-up marker the scan saw
    hold_pttl_ms: int
    redis_now_ms: int
    holders: tuple[int, ...] = ()  # tickets whose holder:<t> record the scan saw

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
        """Callers in line that do not hold a lane: tickets in line, minus the holders in line
        (not the last ticket out of a lane, whose record still holds: its ticket has left the
        line, and the head waits for it), minus the tickets that gave up (a `gone` marker) and
        are still in line until the caller behind skips them. A caller that died while waiting
        counts until the caller behind it skips its ticket (keys.SKIP_GRACE_SECONDS after it
        became the head)."""
        if self.ticket is None:
            return 0
        holding = sum(1 for lane in self.held if lane.ticket is None or lane.ticket >= lane.head)
        gone_in_line = sum(
            1
            for ticket in self.gone
            if ticket <= self.ticket and ticket >= self.lanes[ticket % self.slots].head
        )
        return max(0, self.in_line - holding - gone_in_line)


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
    holders: set[int] = field(default_factory=set)
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
        seen = _Found(set(range(state.slots)), set(state.gone), set(state.holders), True)
        return self._read(state.scope, seen)

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
            # A holder:<t> or gone:<t> key is numbered by ticket, not by lane.
            if kind in ("served", "meta") and number is not None:
                entry.lanes.add(number)
            elif kind == "gone" and number is not None:
                entry.gone.add(number)
            elif kind == "holder" and number is not None:
                entry.holders.add(number)
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
        holders = tuple(sorted(seen.holders))
        while True:
            found = self._snapshot_scope(scope, slots, tuple(sorted(seen.gone)), holders)
            if isinstance(found, ForeignKey):
                return found
            state, named = found
            if named <= slots or named > MAX_SLOTS:
                return state
            slots = named  # a record names more lanes than the scan saw

    def _snapshot_scope(
        self, scope: str, slots: int, gone: tuple[int, ...], holders: tuple[int, ...]
    ) -> tuple[ScopeState, int] | ForeignKey:
        """The scope read at one instant with `slots` lanes, and the most lanes any of its
        records names."""
        names = [keys.ticket_key(scope), keys.hold_key(scope)]
        names += [keys.served_key(scope, lane) for lane in range(slots)]
        names += [keys.lane_meta_key(scope, lane) for lane in range(slots)]
        names += [keys.holder_key(scope, ticket) for ticket in holders]
        reply = self._snapshot(keys=names, args=[slots, f"{keys.LOCK_PREFIX}{scope}"])
        count = 3 * len(names)
        kinds, values, pttls = reply[0:count:3], reply[1:count:3], reply[2:count:3]
        # Per lane: the records of its head and of its last ticket out (ticket, type, value, PTTL).
        per_lane = [reply[count + 4 * i : count + 4 * i + 4] for i in range(2 * slots)]
        read = list(zip(names, kinds, values, strict=True))
        read += [
            (keys.holder_key(scope, int(ticket)), kind, value)
            for ticket, kind, value, _ in per_lane
            if ticket is not None
        ]
        for name, kind, value in read:
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

        def record(lane: int, which: int) -> TicketRecord | None:
            number, _, value, pttl = per_lane[2 * lane + which]
            return None if number is None else TicketRecord(scope, int(number), value, int(pttl))

        lanes = tuple(
            Lane(
                scope=scope,
                lane=lane,
                slots=slots,
                served=served[lane],
                meta_raw=values[2 + slots + lane],
                meta_pttl_ms=int(pttls[2 + slots + lane]),
                redis_now_ms=now,
                head_record=record(lane, 0),
                last_record=record(lane, 1),
            )
            for lane in range(slots)
        )
        records = [parse_meta(value) for value in values[2 + slots :]]
        records += [parse_meta(value) for _, _, value, _ in per_lane]
        named = max(
            (s for r in records if (s := _int((r or {}).get("slots"))) is not None), default=0
        )
        state = ScopeState(scope, ticket, lanes, gone, int(pttls[1]), now, holders)
        return state, named

    def release_if_holder(self, lane: Lane, metric: str) -> str:
        """Release `lane` as its holder would, if its record still names the holder shown;
        count `metric`. Format 3: `served` advanced (never back), the ticket's own record and
        the lane's copy (only when it is that ticket's, or absent) marked released. Returns
        done, or why nothing changed: released (by its holder), withdrawn (a caller skipped
        while it stalled withdrew), gone (the record expired), other (another holder now),
        unreadable."""
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
            3 if lane.holder is not None else 2,
        ]
        stats = keys.stats_key(current_hour(now), metric, lane.scope)
        names = [lane.key, lane.served_key, stats, lane.record_key]
        return str(self._release(keys=names, args=arguments))

    def delete_if_unchanged(self, lane: Lane, metric: str) -> bool:
        """Delete a record without TTL only if it is still what `lane` saw; count `metric`."""
        assert lane.meta_raw is not None
        stats = keys.stats_key(current_hour(lane.redis_now_ms), metric, lane.scope)
        arguments: list[str | int] = [lane.meta_raw, keys.STATS_TTL_SECONDS]
        return bool(self._delete(keys=[lane.key, stats], args=arguments))

    def forget_if_idle(self, state: ScopeState, quiet_seconds: float) -> tuple[bool, str]:
        """Delete an idle scope's scalars (see _FORGET_IF_IDLE). Its records are left to their
        TTLs: a lane's released record, and the holder:<t> records, none of which holds then
        (released or withdrawn ones, for a minute). Returns (deleted, the ticket it had, or why
        not)."""
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
            *state.holders,
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
