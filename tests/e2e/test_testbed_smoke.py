"""The test bed works end to end: n8n runs a webhook -> Redis INCR -> Code workflow."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from testbed.client import N8nClient, saved_executions
from testbed.endpoints import N8nInstance
from testbed.process import live_processes
from testbed.workflows import counter_workflow
from tests.e2e.lockbed import LockBed, wait_until

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


def test_a_caller_never_answered_is_reported_with_the_executions_n8n_has_not_finished(
    lockbed: LockBed, unique_name: str
) -> None:
    """A webhook call that times out (a queue-mode CI run once waited 180 s for a rate-limit
    caller) fails with what n8n was still running and the test bed's log tails, not with
    urllib3's traceback alone."""
    body = {"scope": unique_name, "ttl": 60, "max_wait": 60, "hold_ms": 5000}
    with pytest.raises(AssertionError) as unanswered:
        lockbed.webhook("e2e-lock", body, timeout=2)
    report = str(unanswered.value)
    workflow = lockbed.workflow_id("e2e_lock_caller")
    headline = f"POST /webhook/e2e-lock {json.dumps(body)}: no answer in 2 s"
    # CI keeps a failure's head and tail: the headline opens and closes the report.
    assert report.startswith(headline) and report.endswith(headline), report
    # Other tests' executions may still run on this shared n8n (1.123.81 keeps stopped ones
    # "running"): the report names the caller's, whatever else it lists.
    assert re.search(r"executions running: [1-9]", report), report
    assert f"of workflow {workflow}: since" in report, report
    assert "last lines:" in report, report

    def ended() -> bool:
        return not saved_executions(lockbed.n8n, workflow, status="running", with_data=False)

    wait_until(ended, 30, "the caller's execution ends (its 5 s hold)")
