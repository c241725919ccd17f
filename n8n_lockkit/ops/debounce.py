"""What `locks` and `stats` tell of add-debounce (docs/debounce.md), read from its own keys.

A debounce key value's keys start with `<prefix>n8nlock:debounce2:<workflow key>:<key>` (a
workflow key has no colon; a key may). The engine writes no counter for operators, so
everything here is derived from the keys it keeps for a day:

- `locks`: per key value, the open burst (from the watch's `s` to the last ticket, `:seq`):
  its events still waiting (a record `:ev:<t>` whose claim no runner took), whether its waiter
  looks (the watch written less than keys.DEBOUNCE_STALE_MS ago: alive; older: stale, and the
  key's next event takes the burst over), how old the burst is (its first waiting event) and
  how long the key has been quiet (its last one).
- `stats`: per key value, the events stored (`:ev:<n>` records; an event that drew a ticket
  again stores twice, which is rare) and the bursts cut (`:cuts:<s>`; a burst whose runner
  died before its body runs in the next burst's body) in the window, dated by their TTL, which
  every write sets to a day: so the window reaches back a day at most.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from n8n_lockkit.ops.store import LockStore
from n8n_lockkit.primitives import keys

# The runner claims at most --max-items (1,000) tickets; a burst cut while full may hold a few
# more. Beyond this many tickets back from the last, the open burst is not read.
MAX_TICKETS = 2000
WAITER_ALIVE = "alive"
WAITER_STALE = "stale"
WAITER_NONE = "none"  # no watch yet: the key's first waiter has not looked
# The suffixes of a key value's keys, read from the end of a name (the shortest that fits: a
# key value may itself hold colons).
_SUFFIX = re.compile(
    r"^(?P<base>.+)(?P<kind>:seq|:watch|:(?:ev|claims|after|cuts|ran|burst):\d+|:take:\d+:\d+)$"
)
_DAY_MS = keys.DEBOUNCE_TTL_SECONDS * 1000


@dataclass(frozen=True)
class KeyValue:
    """One debounce key value: the workflow key it belongs to and its key."""

    workflow_key: str
    key: str

    @property
    def label(self) -> str:
        return f"{self.workflow_key}:{self.key}"


@dataclass(frozen=True)
class WaitingEvent:
    ticket: int
    at_ms: int | None  # when it stored its items (None: unreadable)


@dataclass(frozen=True)
class OpenBurst:
    """A key value's open burst, read at one instant (scripts.DEBOUNCE_BURST)."""

    where: KeyValue
    begins_at: int  # its first ticket (the watch's s)
    last_ticket: int
    waiting: tuple[WaitingEvent, ...]
    watch: dict[str, Any] | None
    redis_now_ms: int

    @property
    def watched_ms_ago(self) -> int | None:
        at = _number((self.watch or {}).get("at"))
        return None if at is None else max(0, self.redis_now_ms - at)

    @property
    def waiter(self) -> str:
        ago = self.watched_ms_ago
        if ago is None:
            return WAITER_NONE
        return WAITER_ALIVE if ago <= keys.DEBOUNCE_STALE_MS else WAITER_STALE

    def _ages(self) -> list[int]:
        return [self.redis_now_ms - e.at_ms for e in self.waiting if e.at_ms is not None]

    @property
    def age_seconds(self) -> float | None:
        """Since the burst's first waiting event stored its items."""
        ages = self._ages()
        return max(0, max(ages)) / 1000 if ages else None

    @property
    def quiet_seconds(self) -> float | None:
        """Since the key's last waiting event stored its items."""
        ages = self._ages()
        return max(0, min(ages)) / 1000 if ages else None

    def as_dict(self) -> dict[str, Any]:
        ago = self.watched_ms_ago
        return {
            "workflow_key": self.where.workflow_key,
            "key": self.where.key,
            "waiting": len(self.waiting),
            "tickets": [e.ticket for e in self.waiting],
            "burst_begins_at": self.begins_at,
            "last_ticket": self.last_ticket,
            "waiter": self.waiter,
            "watched_seconds_ago": None if ago is None else round(ago / 1000, 3),
            "age_seconds": _rounded(self.age_seconds),
            "quiet_seconds": _rounded(self.quiet_seconds),
        }


@dataclass(frozen=True)
class KeyStats:
    """A key value's events stored and bursts cut in the window."""

    where: KeyValue
    events: int = 0
    bursts: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "workflow_key": self.where.workflow_key,
            "key": self.where.key,
            "events": self.events,
            "bursts": self.bursts,
        }


def parse(schema: keys.KeySchema, name: str) -> tuple[KeyValue, str] | None:
    """(key value, kind) of a debounce key, kind `seq`, `watch`, `ev`, `claims`, `after`,
    `cuts`, `ran`, `burst` or `take`; None for another name."""
    if not name.startswith(schema.debounce):
        return None
    found = _SUFFIX.match(name[len(schema.debounce) :])
    if found is None:
        return None
    workflow_key, colon, key = found["base"].partition(":")
    if not colon or not key or not workflow_key:
        return None
    return KeyValue(workflow_key, key), found["kind"][1:].split(":")[0]


def _scan(
    store: LockStore, glob: str | None, ending: str = ""
) -> dict[KeyValue, dict[str, list[str]]]:
    """Every debounce key under the env's prefix (only those ending so, when given), by key
    value and kind (the key values whose `<workflow key>:<key>` matches `glob`)."""
    found: dict[KeyValue, dict[str, list[str]]] = {}
    for name in store.scan_keys(f"{store.schema.debounce}*{ending}"):
        parsed = parse(store.schema, name)
        if parsed is None or not fnmatchcase(parsed[0].label, glob or "*"):
            continue
        found.setdefault(parsed[0], {}).setdefault(parsed[1], []).append(name)
    return found


def open_bursts(store: LockStore, glob: str | None) -> list[OpenBurst]:
    """The key values with events waiting in their open burst, by workflow key and key."""
    bursts = []
    with_seq = _scan(store, glob, store.schema.seq)
    for where in sorted(with_seq, key=lambda kv: (kv.workflow_key, kv.key)):
        burst = read_burst(store, where)
        if burst is not None and burst.waiting:
            bursts.append(burst)
    return bursts


def read_burst(store: LockStore, where: KeyValue) -> OpenBurst | None:
    """`where`'s open burst (None when it has no sequence)."""
    base = store.schema.debounce_base(where.workflow_key, where.key)
    reply = store.debounce_burst(base, MAX_TICKETS)
    seq, watch, first, seconds, micros = reply[:5]
    if seq is None or not str(seq).isdigit():
        return None
    rest = reply[5:]
    waiting = tuple(
        WaitingEvent(int(rest[i]), None if rest[i + 2] is None else int(rest[i + 2]))
        for i in range(0, len(rest), 3)
    )
    return OpenBurst(
        where=where,
        begins_at=int(first),
        last_ticket=int(seq),
        waiting=waiting,
        watch=_json(watch),
        redis_now_ms=int(seconds) * 1000 + int(micros) // 1000,
    )


def collect(store: LockStore, glob: str | None, hours: int, now_ms: int) -> list[KeyStats]:
    """Per key value, the events stored and the bursts cut in the last `hours` hours (a day
    at most: the keys live a day from their write)."""
    window_ms = min(hours * 3_600_000, _DAY_MS)
    found = _scan(store, glob)
    result = []
    for where in sorted(found, key=lambda kv: (kv.workflow_key, kv.key)):
        kinds = found[where]
        events = _written_within(store, kinds.get("ev", []), window_ms)
        bursts = _written_within(store, kinds.get("cuts", []), window_ms)
        if events or bursts:
            result.append(KeyStats(where, events, bursts))
    return result


def window_hours(hours: int) -> int:
    """The hours the debounce figures cover of the `hours` asked for."""
    return min(hours, keys.DEBOUNCE_TTL_SECONDS // 3600)


def _written_within(store: LockStore, names: list[str], window_ms: int) -> int:
    """How many of `names` were last written less than `window_ms` ago: each write sets a
    day's TTL, so its remaining TTL dates it."""
    return sum(1 for pttl in store.pttls(names) if pttl > 0 and _DAY_MS - pttl < window_ms)


def _json(raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _number(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
