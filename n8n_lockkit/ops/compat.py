"""What the lock's older formats left in Redis: the one module that still reads it.

**Format 1** (the lock before engine v2) wrote, per scope:

- `n8n-lock-<scope>`: a counter (its holder's INCR); the bare scope, no suffix;
- `n8n-lock-<scope>:meta`: the holder's record (JSON with a `lock_id`), and `:fence`;
- `n8nlock:arrived:<scope>` and `n8nlock:left:<scope>`: INCR on joining the line and on leaving
  it, so arrived - left callers wait, looping inside the old lock_acquisition until the counter
  is free;
- stats that counted `acquired` itself, and every acquisition in a wait bucket.

**Format 2** (engine v2 before format 3) had format 3's ticket, lanes and `served`, but the
holder's record was the lane's `meta:<k>` itself (no `format` field), where format 3 writes the
ticket's own `holder:<t>` and keeps only a copy at `meta:<k>`. Its release marked that one
record released. Its callers read `meta:<k>` to see who holds a lane.

Neither wrote a key namespace (`keyPrefix` came with format 4): their keys exist only among the
keys without one.

**Nothing on the n8n side reads any of this.** The engine (format 4, `templates/js/`) decides on
format 3's keys alone, so a caller of format 1 or 2 that still holds or waits is invisible to
it. That is why operators still read the old keys: `n8nlock push` refuses to bring format 4
while such a caller holds or waits (ops/drain.py, from `format1_holders`, `format1_waiting`,
`format2_holders`, `format2_lines`); after the rollout they can only linger as leftovers, which
the operator commands still show and free: `locks` lists a format-2 holder and warns of held
format-1 locks, `release --force` and `reap` free a format-2 holder, `reap --idle` counts it as
held (the Lua below), `stats` sums format 1's hours as they were counted. Everything else in
`ops/` reads format 3's keys and asks this module where an older record may stand.

Example:
    >>> is_format2_holder({"lock_id": "57-a", "ticket": 1})
    True
    >>> is_format2_holder({"lock_id": "57-a", "ticket": 1, "format": 3})
    False
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import redis

from n8n_lockkit.primitives import formats, keys

FORMAT1 = formats.LEGACY_FORMAT
FORMAT2 = 2
SCAN_COUNT = 500

# Format 1's keys: suffixes after `n8n-lock-<scope>`, and the prefixes of its line counters.
META_SUFFIX = ":meta"
FENCE_SUFFIX = ":fence"
ARRIVED_PREFIX = "n8nlock:arrived:"
LEFT_PREFIX = "n8nlock:left:"
# keys.KeySchema.parse_key's kind of a name under the lock prefix that is no key of format 3:
# format 1's counter was the bare scope; its record and fence are told apart here.
COUNTER = "v1_counter"
_FORMAT1_KINDS = {META_SUFFIX: "v1_meta", FENCE_SUFFIX: "v1_fence"}
# Who read a lane's copy of its holder's record as the holder's own (operators are told why a
# stale copy matters).
COPY_READERS = "callers of format 2"


def _record(raw: bytes | str | None) -> dict[str, Any]:
    """A JSON object as stored, else {}."""
    try:
        value = json.loads(raw or "")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _count(value: bytes | str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def _is_counter(value: str | None) -> bool:
    """What format 1's counter holds: a decimal integer (absent counts too: it just went)."""
    return value is None or (value.lstrip("-").isdigit() and value.isascii())


# Format 1


def format1_key(parsed: tuple[str, str, int | None]) -> tuple[str, str] | None:
    """(scope, kind) of a key parse_key found no key of format 3 in: format 1's record
    (`v1_meta`), fence (`v1_fence`) or counter (`v1_counter`); None for a key of format 3."""
    name, kind, _ = parsed
    if kind != COUNTER:
        return None
    for suffix, old_kind in _FORMAT1_KINDS.items():
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], old_kind
    return name, COUNTER


def format1_held(
    client: redis.Redis, found: Sequence[tuple[str, str, str]]
) -> tuple[list[str], list[tuple[str, str]]]:
    """Of format 1's keys a scan found (key, scope, kind): the scopes whose record is still
    there, and the keys that are not n8nlock's (a bare name that is not a counter), with what
    they are."""
    if not found:
        return [], []
    pipe = client.pipeline(transaction=False)
    for key, _, _ in found:
        pipe.type(key)
        pipe.get(key)
    replies = pipe.execute(raise_on_error=False)
    held: set[str] = set()
    not_ours: list[tuple[str, str]] = []
    for index, (key, scope, kind) in enumerate(found):
        kind_found, value = replies[2 * index], replies[2 * index + 1]
        if kind == "v1_meta" and kind_found == "string" and _record(value).get("lock_id"):
            held.add(scope)
        elif kind == COUNTER and (kind_found != "string" or not _is_counter(value)):
            not_ours.append((key, f"a {kind_found}, not a key of n8nlock's"))
    return sorted(held), not_ours


def format1_holders(client: redis.Redis) -> list[tuple[str, dict[str, Any]]]:
    """(scope, record) of every format-1 holder (`n8n-lock-<scope>:meta`; format 3's lane
    records end in a number and never match), found with SCAN, never KEYS."""
    names = sorted(client.scan_iter(match=f"{keys.LOCK_PREFIX}*{META_SUFFIX}", count=SCAN_COUNT))
    records = client.mget(names) if names else []
    return [
        (name.removeprefix(keys.LOCK_PREFIX).removesuffix(META_SUFFIX), _record(raw))
        for name, raw in zip(names, records, strict=True)
    ]


def format1_waiting(client: redis.Redis) -> dict[str, int]:
    """Scope -> format-1 callers waiting for it (arrived - left), by scope."""
    scopes = [
        key.removeprefix(ARRIVED_PREFIX)
        for key in client.scan_iter(match=f"{ARRIVED_PREFIX}*", count=SCAN_COUNT)
    ]
    waiting: dict[str, int] = {}
    if scopes:
        arrived = client.mget([f"{ARRIVED_PREFIX}{scope}" for scope in scopes])
        left = client.mget([f"{LEFT_PREFIX}{scope}" for scope in scopes])
        for scope, came, went in zip(scopes, arrived, left, strict=True):
            if _count(came) > _count(went):
                waiting[scope] = _count(came) - _count(went)
    return dict(sorted(waiting.items()))


def format1_warning(scopes: list[str]) -> str:
    """What `n8nlock locks` says of format-1 locks still held."""
    shown = ", ".join(scopes[:5]) + (f" and {len(scopes) - 5} more" if len(scopes) > 5 else "")
    return (
        f"{len(scopes)} lock(s) of the format before engine v2 still held ({shown}): engine "
        f"v2 waits for them, but an older n8nlock's lock does not see engine v2's; `n8nlock "
        f"upgrade`, then push (docs/upgrading.md) (keys {keys.LOCK_PREFIX}<scope>"
        f"{META_SUFFIX})"
    )


def format1_hours(hours: Mapping[str, Mapping[str, int]]) -> set[str]:
    """The hours (yyyymmddhh) of a scope's counters that format 1 counted: those before its
    first `arrived` (engine v2 counts every arrival), all of them without one. Their
    `acquired` and wait buckets are summed as they are; later hours derive them."""
    first_v2 = min((hour for hour, counts in hours.items() if "arrived" in counts), default=None)
    return {hour for hour in hours if first_v2 is None or hour < first_v2}


# Format 2


def is_format2_holder(record: Mapping[str, Any] | None) -> bool:
    """A lane's record (`meta:<k>`) that holds by itself: format 2's holder's own (no `format`
    field, not released). Format 3's copy of its `holder:<t>` says its format and holds
    nothing by itself."""
    return record is not None and record.get("format") is None and not record.get("released")


def format2_off_head(ticket: int | None, head: int) -> str:
    """The problem of a format-2 holder whose ticket is not its lane's head: format 2's
    waiters only see a record whose ticket is the lane's head."""
    return f"ticket {ticket} is not the lane's head {head}"


# The Lua of is_format2_holder, for the scripts that decide in Redis (ops/scripts.py splices it
# in after its helpers: it uses `truthy`).
LUA_IS_FORMAT2_HOLDER = """
local function is_format2_holder(record)
  return (record.format == nil or record.format == cjson.null) and not truthy(record.released)
end
"""


class _OwnRecord(Protocol):
    @property
    def raw(self) -> str | None: ...


class LaneView(Protocol):
    """What the drain reads of a lane (snapshot.Lane, which asks this module: so a protocol)."""

    @property
    def format(self) -> int | None: ...

    @property
    def meta(self) -> dict[str, Any] | None: ...

    @property
    def copy(self) -> dict[str, Any] | None: ...

    @property
    def last_record(self) -> _OwnRecord | None: ...


class ScopeView(Protocol):
    """What the drain reads of a scope (snapshot.ScopeState)."""

    @property
    def scope(self) -> str: ...

    @property
    def lanes(self) -> Sequence[LaneView]: ...

    @property
    def waiting(self) -> int: ...


def format2_holders(states: Iterable[ScopeView]) -> list[tuple[str, dict[str, Any]]]:
    """(scope, record) of every lane a format-2 holder holds."""
    return [
        (state.scope, lane.meta or {})
        for state in states
        for lane in state.lanes
        if lane.format == FORMAT2
    ]


def _format2_was_here(lane: LaneView) -> bool:
    """The lane's record is format 2's: a holder's, or a released one that no format-3 record
    of its ticket (`holder:<t>`) stands beside (format 3's release marks both)."""
    if lane.format == FORMAT2:
        return True
    copy = lane.copy
    if copy is None or "format" in copy or not copy.get("released"):
        return False
    return lane.last_record is None or lane.last_record.raw is None


def format2_lines(states: Iterable[ScopeView]) -> dict[str, int]:
    """Scope -> callers in line, of the scopes where they may be format 2's (a lane format 2
    holds or left)."""
    return {
        state.scope: state.waiting
        for state in states
        if state.waiting and any(_format2_was_here(lane) for lane in state.lanes)
    }
