"""A real, throwaway redis-server for unit and CLI tests of the operator commands (pytest
fixtures; the server itself is started by testbed/redis_server.py).

Import the fixtures into a test module (`from tests.redis_fixtures import redis_client, redis_url`).
`put_lock` writes a lock the way lock_acquisition does (INCR with EXPIRE, then the JSON record
with the same TTL), so the commands read exactly what n8n would have left.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis

from n8n_lockkit.primitives import keys
from testbed.progress import stderr_progress
from testbed.redis_server import start_redis_server


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with ExitStack() as stack:
        _, endpoint = start_redis_server(stack, tmp_path_factory.mktemp("redis"), stderr_progress)
        yield endpoint.url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client on an emptied database: every test starts from no keys."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    client.flushdb()
    yield client
    client.close()


def meta_for(
    scope: str,
    *,
    execution_id: str = "57",
    workflow_id: str = "wf1",
    workflow_name: str = "orders",
    ttl: int = 300,
    fence: int = 1,
    age: float = 0.0,
) -> dict[str, Any]:
    """The ownership record lock_acquisition writes (templates/js/.../build_lock_meta.js)."""
    locked_at = datetime.now(timezone.utc) - timedelta(seconds=age)
    return {
        "lock_id": f"{execution_id}-test-{scope}",
        "scope": scope,
        "workflow_id": workflow_id,
        "workflow_name": workflow_name,
        "execution_id": execution_id,
        "fence": fence,
        "locked_at": locked_at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "expires_at": (locked_at + timedelta(seconds=ttl))
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z"),
        "ttl_seconds": ttl,
    }


def put_lock(
    client: redis.Redis,
    scope: str,
    *,
    ttl: int | None = 300,
    meta: dict[str, Any] | None = None,
    with_meta: bool = True,
) -> dict[str, Any] | None:
    """Hold `scope` as a lock_acquisition would: counter, then record (both with `ttl`).

    ttl=None leaves the counter without TTL (a crash between INCR and EXPIRE, W11);
    with_meta=False leaves no record (a crash between INCR and SET, W2).
    """
    client.incr(f"n8n-lock-{scope}")
    if ttl is not None:
        client.expire(f"n8n-lock-{scope}", ttl)
    if not with_meta:
        return None
    record = meta or meta_for(scope, ttl=ttl or 300)
    client.set(f"n8n-lock-{scope}:meta", json.dumps(record), ex=ttl)
    return record


def record_for(
    scope: str,
    *,
    ticket: int = 1,
    slots: int = 1,
    execution_id: str = "57",
    workflow_id: str = "wf1",
    workflow_name: str = "orders",
    ttl: int = 300,
    age: float = 0.0,
    lock_id: str | None = None,
) -> dict[str, Any]:
    """The holder's record engine v2 writes to `:meta:<lane>`
    (templates/js/engine/lock/decide.js)."""
    locked = datetime.now(timezone.utc) - timedelta(seconds=age)
    locked_ms = int(locked.timestamp() * 1000)
    expires = locked + timedelta(seconds=ttl)
    return {
        "lock_id": lock_id or f"{execution_id}-test-{scope}-{ticket}",
        "scope": scope,
        "ticket": ticket,
        "fence": ticket,
        "slots": slots,
        "workflow_id": workflow_id,
        "workflow_name": workflow_name,
        "execution_id": execution_id,
        "locked_at": locked.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "locked_ms": locked_ms,
        "expires_at": expires.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "expires_ms": locked_ms + ttl * 1000,
        "ttl_seconds": ttl,
    }


def draw(client: redis.Redis, scope: str, up_to: int) -> None:
    """Callers have drawn tickets up to `up_to` (INCR never goes back)."""
    key = f"n8n-lock-{scope}:ticket"
    client.set(key, max(up_to, int(client.get(key) or 0)))


def hold_lane(
    client: redis.Redis,
    scope: str,
    *,
    ticket: int = 1,
    slots: int = 1,
    ttl: int | None = 300,
    record: dict[str, Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """Ticket `ticket` holds its lane, as engine v2 leaves it: the ticket drawn, the lane's
    `served` one turn behind (absent for the lane's first ticket) and the record with the
    lock's TTL (ttl=None: a record without TTL)."""
    lane = ticket % slots
    draw(client, scope, ticket)
    if ticket > slots:
        client.set(f"n8n-lock-{scope}:served:{lane}", ticket - slots)
    held = record or record_for(scope, ticket=ticket, slots=slots, ttl=ttl or 300, **fields)
    client.set(f"n8n-lock-{scope}:meta:{lane}", json.dumps(held), ex=ttl)
    return held


def leave_lane(client: redis.Redis, scope: str, *, ticket: int = 1, slots: int = 1) -> None:
    """Ticket `ticket` released its lane as release.js does (record marked for 5 s, served
    advanced, a mutex's fast-path value, hold average kept 7 days)."""
    lane = ticket % slots
    draw(client, scope, ticket)
    released = {"released": True, "ticket": ticket, "lock_id": f"57-test-{scope}-{ticket}",
                "released_at": "2026-03-01T12:00:00.000Z"}  # fmt: skip
    client.set(f"n8n-lock-{scope}:meta:{lane}", json.dumps(released), ex=5)
    client.set(f"n8n-lock-{scope}:served:{lane}", ticket)
    if slots == 1:
        client.set(keys.SCHEMA.fast_key(scope), ticket * keys.FAST_SCALE)
    client.set(f"n8n-lock-{scope}:hold_ms", 250, ex=7 * 86400)
