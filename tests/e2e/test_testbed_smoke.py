"""The test bed works end to end: n8n runs a webhook -> Redis INCR -> Code workflow."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from testbed.client import N8nClient
from testbed.endpoints import N8nInstance
from testbed.process import live_processes
from testbed.workflows import counter_workflow

CALLS = 10


def test_concurrent_webhook_calls_count_in_redis(
    n8n_client: N8nClient, redis_client: redis.Redis, unique_name: str
) -> None:
    key = f"n8nlock-e2e:{unique_name}"
    credential = n8n_client.create_redis_credential(unique_name)
    workflow = counter_workflow(name=unique_name, path=unique_name, key=key, credential=credential)
    created = n8n_client.create_workflow(workflow)
    n8n_client.activate_and_wait(created["id"], unique_name, "GET")

    with ThreadPoolExecutor(CALLS) as pool:
        responses = list(pool.map(lambda _: n8n_client.call_webhook(unique_name), range(CALLS)))

    assert [r.status_code for r in responses] == [200] * CALLS, [r.text for r in responses]
    assert sorted(r.json()["count"] for r in responses) == list(range(1, CALLS + 1))
    assert redis_client.get(key) == str(CALLS)
    assert 0 < redis_client.ttl(key) <= 60


def test_started_processes_are_tracked_for_teardown(n8n: N8nInstance) -> None:
    """Locally started services are registered for stopping; conftest checks they stopped."""
    if n8n.backend != "local":
        pytest.skip("only the local backend starts processes itself")
    names = sorted(p.name.split()[0] for p in live_processes() if p.is_alive())
    assert names == ["n8n", "redis-server"]
