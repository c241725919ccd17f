"""Locks of both engine formats, for the tests of the operator commands (tests/unit/test_ops_*,
tests/cli/test_ops_commands.py), on top of tests/redis_fixtures.py.

Format 3 (keys.py): a ticket that enters writes its own record `holder:<t>` (its lease, the
only thing the engine decides on), then a copy of it at its lane's `meta:<k>`; a release sets
`served`, then marks the copy and the record released (5 s). Format 2 wrote the record only at
`meta:<k>`, without a `format` field (redis_fixtures.hold_lane, leave_lane). `hold` and `leave`
write either, as the engine of that format leaves Redis.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from n8n_lockkit.primitives import keys
from tests.redis_fixtures import draw, hold_lane, leave_lane, record_for

FORMATS = (2, 3)


def hold(
    client: redis.Redis,
    scope: str,
    *,
    fmt: int = 3,
    ticket: int = 1,
    slots: int = 1,
    ttl: int | None = 300,
    record: dict[str, Any] | None = None,
    copy: bool = True,
    **fields: Any,
) -> dict[str, Any]:
    """Ticket `ticket` holds its lane, as the engine of format `fmt` leaves it: the ticket
    drawn, the lane's `served` one turn behind (absent for the lane's first ticket), the
    record with the lock's TTL (ttl=None: without TTL) and, format 3, its copy at the lane
    (copy=False: not written yet, or lost)."""
    if fmt == 2:
        return hold_lane(client, scope, ticket=ticket, slots=slots, ttl=ttl, record=record,
                         **fields)  # fmt: skip
    lane = ticket % slots
    draw(client, scope, ticket)
    if ticket > slots:
        client.set(keys.SCHEMA.served_key(scope, lane), ticket - slots)
    held = record or {
        **record_for(scope, ticket=ticket, slots=slots, ttl=ttl or 300, **fields),
        "format": 3,
    }
    client.set(keys.SCHEMA.holder_key(scope, ticket), json.dumps(held), ex=ttl)
    if copy:
        client.set(keys.SCHEMA.lane_meta_key(scope, lane), json.dumps(held), ex=ttl)
    return held


def released_record(scope: str, ticket: int, **extra: Any) -> dict[str, Any]:
    return {"released": True, "ticket": ticket, "lock_id": f"57-test-{scope}-{ticket}",
            "released_at": "2026-03-01T12:00:00.000Z", **extra}  # fmt: skip


def leave(
    client: redis.Redis, scope: str, *, fmt: int = 3, ticket: int = 1, slots: int = 1
) -> None:
    """Ticket `ticket` released its lane as release.js of format `fmt` does. Format 3:
    `served`, then the lane's copy and the ticket's record marked released (5 s), then a
    mutex's fast-path value and the hold average (7 days)."""
    if fmt == 2:
        leave_lane(client, scope, ticket=ticket, slots=slots)
        return
    lane = ticket % slots
    draw(client, scope, ticket)
    released = json.dumps(released_record(scope, ticket))
    client.set(keys.SCHEMA.served_key(scope, lane), ticket)
    client.set(keys.SCHEMA.lane_meta_key(scope, lane), released, ex=5)
    client.set(keys.SCHEMA.holder_key(scope, ticket), released, ex=5)
    if slots == 1:
        client.set(keys.SCHEMA.fast_key(scope), ticket * keys.FAST_SCALE)
    client.set(keys.SCHEMA.hold_key(scope), 250, ex=7 * 86400)


def release_under_way(client: redis.Redis, scope: str, *, ticket: int, slots: int = 1) -> None:
    """Ticket `ticket`'s release.js has written `served` and the lane's copy, not yet its own
    record (the engine keeps the next ticket out until that record says released)."""
    client.set(keys.SCHEMA.served_key(scope, ticket % slots), ticket)
    released = json.dumps(released_record(scope, ticket))
    client.set(keys.SCHEMA.lane_meta_key(scope, ticket % slots), released, ex=5)


def skip(client: redis.Redis, scope: str, *, head: int, slots: int = 1) -> None:
    """The caller behind skipped head `head` (it neither entered nor left): its `gone` mark
    (a day), then the lane's `served`."""
    client.set(keys.SCHEMA.gone_key(scope, head), 1, ex=keys.GONE_MIN_TTL_SECONDS)
    client.set(keys.SCHEMA.served_key(scope, head % slots), head)


def enter_late(
    client: redis.Redis, scope: str, *, ticket: int, slots: int = 1, **fields: Any
) -> dict[str, Any]:
    """Ticket `ticket`, skipped while it stalled, wakes and writes its record and its lane's
    copy late (format 3), over whatever copy the lane had."""
    late = {**record_for(scope, ticket=ticket, slots=slots, **fields), "format": 3}
    client.set(keys.SCHEMA.holder_key(scope, ticket), json.dumps(late), ex=300)
    client.set(keys.SCHEMA.lane_meta_key(scope, ticket % slots), json.dumps(late), ex=300)
    return late


def withdraw(client: redis.Redis, scope: str, late: dict[str, Any]) -> None:
    """The caller of record `late` found its `gone` mark after entering late and withdrew
    (withdraw.js): only its own record is marked (released, withdrawn; 5 s); its late copy
    stays until its TTL."""
    withdrawn = {**released_record(scope, late["ticket"], withdrawn=True),
                 "lock_id": late["lock_id"]}  # fmt: skip
    client.set(keys.SCHEMA.holder_key(scope, late["ticket"]), json.dumps(withdrawn), ex=5)


def lane_record(client: redis.Redis, scope: str, lane: int = 0) -> Any:
    """The lane's `meta:<k>` record (format 2: the holder's; format 3: its copy), or None."""
    return json.loads(client.get(keys.SCHEMA.lane_meta_key(scope, lane)) or "null")


def holder_record(client: redis.Redis, scope: str, ticket: int) -> Any:
    """Ticket `ticket`'s own record `holder:<t>` (format 3), or None."""
    return json.loads(client.get(keys.SCHEMA.holder_key(scope, ticket)) or "null")


def own_record(client: redis.Redis, scope: str, *, fmt: int, ticket: int, slots: int = 1) -> Any:
    """The record the engine of format `fmt` decides on: `holder:<t>`, or format 2's lane."""
    if fmt == 2:
        return lane_record(client, scope, ticket % slots)
    return holder_record(client, scope, ticket)
