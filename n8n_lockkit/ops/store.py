"""Reading engine v2's keys as consistent snapshots, and changing them only by compare-and-set.

A scope's keys are found with SCAN, then read by one Lua script (atomic in Redis) with Redis's
own clock, into a ScopeState (snapshot.py). Every write is a second script (scripts.py) that
first checks that what it changes is still what was read: a lane that changed hands, or a scope
that a caller arrived at, is left alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from fnmatch import fnmatchcase
from typing import Any

import redis

from n8n_lockkit.ops import compat, scripts
from n8n_lockkit.ops.snapshot import (
    ForeignKey,
    Lane,
    Scan,
    ScopeState,
    TicketRecord,
    as_int,
    parse_meta,
)
from n8n_lockkit.primitives import keys

_SCAN_COUNT = 500
# What the client decodes bytes that are not UTF-8 to (redis_access sets errors="replace"):
# n8nlock writes only UTF-8, so such a name or value is someone else's.
_UNDECODABLE = "\ufffd"
# A scope whose lanes were never all seen is read again with this many lanes at most.
MAX_SLOTS = 1024


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

    def note(self, kind: str, number: int | None) -> None:
        """One of the scope's keys: a served:<k> or meta:<k> key is numbered by lane, a
        holder:<t> or gone:<t> key by ticket."""
        self.v2 = True
        if number is None:
            return
        if kind in ("served", "meta"):
            self.lanes.add(number)
        elif kind == "gone":
            self.gone.add(number)
        elif kind == "holder":
            self.holders.add(number)


class LockStore:
    """n8nlock's keys in one Redis: read only what it wrote, change only what is unchanged."""

    def __init__(self, client: redis.Redis, schema: keys.KeySchema = keys.SCHEMA) -> None:
        self._client = client
        self.schema = schema  # the env's namespace (keyPrefix): the only keys it reads
        self._snapshot = client.register_script(scripts.SNAPSHOT)
        self._release = client.register_script(scripts.RELEASE_IF_HOLDER)
        self._delete = client.register_script(scripts.DELETE_IF_UNCHANGED)
        self._forget = client.register_script(scripts.FORGET_IF_IDLE)
        self._forget_done = client.register_script(scripts.FORGET_DONE_IF_UNCHANGED)
        self._debounce_burst = client.register_script(scripts.DEBOUNCE_BURST)

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
        return self._collect(f"{self.schema.lock}{glob}*", lambda scope: fnmatchcase(scope, glob))

    def read(self, scope: str) -> ScopeState | ForeignKey | None:
        """Exactly `scope` (None when it has no key of engine v2)."""
        scan = self._collect(self.schema.scan_pattern(scope), lambda found: found == scope)
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
        older: list[tuple[str, str, str]] = []  # keys of an older format: compat reads them
        for key in self.scan_keys(pattern):
            if _UNDECODABLE in key:
                foreign.append(ForeignKey(key, "a name that is not UTF-8"))
                continue
            parsed = self.schema.parse_key(key)
            old = None if parsed is None else compat.format1_key(parsed)
            if old is not None:
                if wanted(old[0]):
                    older.append((key, *old))
                continue
            if parsed is None or not wanted(parsed[0]):
                continue
            scope, kind, number = parsed
            found.setdefault(scope, _Found()).note(kind, number)
        older_held, not_ours = compat.format1_held(self._client, older)
        foreign += [ForeignKey(key, kind) for key, kind in not_ours]
        states: list[ScopeState] = []
        for scope in sorted(found):
            state = self._read(scope, found[scope])
            if isinstance(state, ForeignKey):
                foreign.append(state)
            else:
                states.append(state)
        return Scan(states, foreign, older_held)

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
        names = [self.schema.ticket_key(scope), self.schema.hold_key(scope)]
        names += [self.schema.served_key(scope, lane) for lane in range(slots)]
        names += [self.schema.lane_meta_key(scope, lane) for lane in range(slots)]
        names += [self.schema.holder_key(scope, ticket) for ticket in holders]
        reply = self._snapshot(keys=names, args=[slots, self.schema.lock_key(scope)])
        count = 3 * len(names)
        kinds, values, pttls = reply[0:count:3], reply[1:count:3], reply[2:count:3]
        # Per lane: the records of its head and of its last ticket out (ticket, type, value, PTTL).
        per_lane = [reply[count + 4 * i : count + 4 * i + 4] for i in range(2 * slots)]
        read = list(zip(names, kinds, values, strict=True))
        read += [
            (self.schema.holder_key(scope, int(ticket)), kind, value)
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
            if number is None:
                return None
            return TicketRecord(scope, int(number), value, int(pttl), self.schema)

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
                schema=self.schema,
            )
            for lane in range(slots)
        )
        records = [parse_meta(value) for value in values[2 + slots :]]
        records += [parse_meta(value) for _, _, value, _ in per_lane]
        named = max(
            (s for r in records if (s := as_int((r or {}).get("slots"))) is not None), default=0
        )
        state = ScopeState(scope, ticket, lanes, gone, int(pttls[1]), now, holders)
        return state, named

    def release_if_holder(self, lane: Lane, metric: str) -> str:
        """Release `lane` as its holder would, if its record still names the holder shown;
        count `metric`: `served` advanced (never back), the holder's record (`record_key`) and
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
        ]
        stats = self.schema.stats_key(current_hour(now), metric, lane.scope)
        names = [lane.key, lane.served_key, stats, lane.record_key]
        return str(self._release(keys=names, args=arguments))

    def delete_if_unchanged(self, lane: Lane, metric: str) -> bool:
        """Delete a record without TTL only if it is still what `lane` saw; count `metric`."""
        assert lane.meta_raw is not None
        stats = self.schema.stats_key(current_hour(lane.redis_now_ms), metric, lane.scope)
        arguments: list[str | int] = [lane.meta_raw, keys.STATS_TTL_SECONDS]
        return bool(self._delete(keys=[lane.key, stats], args=arguments))

    def forget_if_idle(self, state: ScopeState, quiet_seconds: float) -> tuple[bool, str]:
        """Delete an idle scope's scalars (see scripts.FORGET_IF_IDLE). Its records are left to
        their TTLs: a lane's released record, and the holder:<t> records, none of which holds
        then (released or withdrawn ones, for a minute). Returns (deleted, the ticket it had, or
        why not)."""
        scope, slots = state.scope, state.slots
        names = [self.schema.ticket_key(scope), self.schema.hold_key(scope)]
        names += [self.schema.served_key(scope, lane) for lane in range(slots)]
        names += [self.schema.lane_meta_key(scope, lane) for lane in range(slots)]
        names += [self.schema.gone_key(scope, ticket) for ticket in state.gone]
        quiet_ms = max(0, keys.HOLD_TTL_SECONDS * 1000 - int(quiet_seconds * 1000))
        arguments: list[str | int] = [
            slots,
            state.ticket or 0,
            quiet_ms,
            self.schema.lock_key(scope),
            scripts.FORGET_MARKER_WINDOW,
            *state.holders,
        ]
        deleted, detail = self._forget(keys=names, args=arguments)
        return bool(deleted), str(detail)

    def done_mark(self, scope: str) -> tuple[str, int] | None:
        """A duplicate guard's mark of a success on `scope`: its value and remaining TTL (s),
        or None. A key of another type is not n8nlock's: None too."""
        name = self.schema.done_key(scope)
        with self._client.pipeline(transaction=True) as pipe:
            pipe.type(name)
            pipe.get(name)
            pipe.ttl(name)
            kind, value, ttl = pipe.execute()
        if kind != "string" or value is None:
            return None
        return str(value), int(ttl)

    def forget_done(self, scope: str, value: str) -> bool:
        """Delete the done mark of `scope` if it is still `value`, and the answer stored with
        it (a replaying guard's)."""
        names = [self.schema.done_key(scope), self.schema.answer_key(scope)]
        return bool(self._forget_done(keys=names, args=[value]))

    def debounce_burst(self, base: str, max_tickets: int) -> list[Any]:
        """A debounce key value's open burst, read at one instant (scripts.DEBOUNCE_BURST)."""
        names = [base + self.schema.seq, base + self.schema.watch]
        return list(self._debounce_burst(keys=names, args=[base, max_tickets]))

    def pttls(self, names: list[str]) -> list[int]:
        """PTTL of each name (-2: none, -1: no TTL), pipelined in slices."""
        found: list[int] = []
        for start in range(0, len(names), _SCAN_COUNT):
            with self._client.pipeline(transaction=False) as pipe:
                for name in names[start : start + _SCAN_COUNT]:
                    pipe.pttl(name)
                found.extend(int(value) for value in pipe.execute())
        return found

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
