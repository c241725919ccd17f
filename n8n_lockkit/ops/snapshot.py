"""A scope of engine v2 as Redis held it at one instant: its ticket, lanes and records.

A scope is a ticket, N lanes (each a `served` scalar and a `meta` record) and a few markers
(keys.py). Format 3 keeps the holder's record per ticket (`holder:<t>`, the lease the engine
decides on); the lane's `meta` record is then only a copy of it, which a caller skipped while it
stalled may have overwritten late. So the holder of lane k is read from the records of its
head (served + N) and of its last ticket out (`served`, which may have entered late and hold
still). Where the lane's record may be an older format's holder's own, compat.py says so.
LockStore (store.py) reads these; this module only says what they mean.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from n8n_lockkit.ops import compat
from n8n_lockkit.primitives import keys


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
    schema: keys.KeySchema = keys.SCHEMA
    record: dict[str, Any] | None = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "record", parse_meta(self.raw))

    @property
    def key(self) -> str:
        return self.schema.holder_key(self.scope, self.ticket)

    @property
    def active(self) -> bool:
        """The ticket holds, as the engine decides it: its record is there, names it, and is
        not released (a withdrawn record is a released one)."""
        record = self.record
        return (
            record is not None
            and not record.get("released")
            and as_int(record.get("ticket")) == self.ticket
        )


@dataclass(frozen=True)
class Lane:
    """One lane of a scope, as Redis held it at once: its `served` scalar, the record at its
    lane key `meta:<k>`, and the records (format 3) of its head and of its last ticket out.

    `meta` is the holder's record: format 3's `holder:<t>` of the head, else of the last ticket
    out (it entered late after a skip, or a release is under way; the head waits for it until
    its record says released), else the lane's record when that holds by itself (an older
    format's: compat.is_format2_holder). The lane's copy of a format-3 record (`copy`) holds
    nothing by itself: a caller skipped while it stalled may have written it late. Without a
    holder, `meta` is the lane's record (released, stale or None)."""

    scope: str
    lane: int
    slots: int
    served: int | None
    meta_raw: str | None
    meta_pttl_ms: int  # -2 absent, -1 no TTL
    redis_now_ms: int
    head_record: TicketRecord | None = None  # holder:<head>
    last_record: TicketRecord | None = None  # holder:<served>, when the lane served a ticket
    schema: keys.KeySchema = keys.SCHEMA
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
        """The lane's key `meta:<k>`: a copy of the holder's record, or the record itself when
        it holds by itself (compat.is_format2_holder)."""
        return self.schema.lane_meta_key(self.scope, self.lane)

    @property
    def served_key(self) -> str:
        return self.schema.served_key(self.scope, self.lane)

    @property
    def format(self) -> int | None:
        """3: the holder's record is its ticket's own; compat.FORMAT2: it is the lane's; None:
        not held."""
        if self.holder is not None:
            return 3
        return compat.FORMAT2 if compat.is_format2_holder(self.copy) else None

    @property
    def record_key(self) -> str:
        """Where the holder's record is (the lane's key when nothing holds)."""
        return self.holder.key if self.holder is not None else self.key

    @property
    def record_pttl_ms(self) -> int:
        return self.holder.pttl_ms if self.holder is not None else self.meta_pttl_ms

    @property
    def held(self) -> bool:
        """A ticket's own record that holds (format 3), or a lane's record that holds by itself
        (compat.is_format2_holder)."""
        return self.holder is not None or compat.is_format2_holder(self.copy)

    @property
    def ticket(self) -> int | None:
        return as_int((self.meta or {}).get("ticket"))

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
        return as_int(self.copy.get("ticket")) == self.ticket and self.copy.get(
            "lock_id"
        ) == meta.get("lock_id")

    @property
    def copy_is_stale(self) -> bool:
        """A format-3 holder whose lane copy is missing or another lock's (lock_release calls
        without a ticket read the copy, and so do compat.COPY_READERS). A released copy of the
        holder itself is no stale one: its release is under way (release.js marks the record,
        then the copy, then advances the lane)."""
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
                found.append(compat.format2_off_head(self.ticket, self.head))
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
    ticket = as_int(copy.get("ticket"))
    named = f"ticket {ticket}" if ticket is not None else f"lock {copy.get('lock_id')}"
    return f"{named}, released" if copy.get("released") else named


def as_int(value: Any) -> int | None:
    """An int a record holds (never a bool), else None."""
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
    and the scopes an older lock is still held on (compat.format1_held)."""

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
