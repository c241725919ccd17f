"""A real, throwaway redis-server for unit and CLI tests of the operator commands.

Import the fixtures into a test module (`from tests.redis_bed import redis_client, redis_url`).
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

from tests.testbed.progress import stderr_progress
from tests.testbed.redis_server import start_redis_server


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
