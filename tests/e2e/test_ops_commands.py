"""The operator commands against the test-bed n8n and its Redis.

The Lua scripts run in the Redis n8n uses. Held locks are written in engine v2's layout
(keys.py, as `tests/redis_fixtures.hold_lane` writes them) for executions that really ran in n8n,
so that reap asks n8n about real executions; the last test takes its lock through n8n itself.
Each test owns its scope (`unique_name`).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis
import requests
from click.testing import CliRunner, Result

from n8n_lockkit.cli import main
from n8n_lockkit.ops.snapshot import ScopeState
from n8n_lockkit.ops.store import LockStore
from testbed.client import N8nClient
from testbed.endpoints import N8nInstance
from tests.e2e.lockbed import (
    API_KEY_VARIABLE,
    LockBed,
    acquired,
    init_workspace,
    stop_execution,
    wait_until,
)
from tests.redis_fixtures import draw, hold_lane, leave_lane

HOLDER_PATH = "e2e-ops-holder"


class OpsCli:
    """`n8nlock` in a workspace whose env points at the test-bed n8n and its Redis."""

    def __init__(self, root: Path, n8n: N8nInstance, redis_url: str) -> None:
        self.root = root
        seen = urlsplit(redis_url)
        same = (seen.hostname, seen.port) == (n8n.redis_host, n8n.redis_port)
        self.redis_args = [] if same else ["--redis-url", redis_url]

    def __call__(self, *args: str, exit_code: int = 0) -> Result:
        result = CliRunner().invoke(main, ["--workspace", str(self.root), *args,
                                           *self.redis_args])  # fmt: skip
        assert result.exit_code == exit_code, (
            f"n8nlock {' '.join(args)} exited {result.exit_code}\n{result.output}"
        )
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "-o", "json").stdout)


@pytest.fixture
def ops(
    n8n: N8nInstance, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[OpsCli]:
    monkeypatch.setenv(API_KEY_VARIABLE, n8n.api_key)
    monkeypatch.delenv("N8NLOCK_REDIS_URL", raising=False)
    yield OpsCli(init_workspace(tmp_path / "ws", n8n, []), n8n, redis_url)


def holder_workflow() -> dict[str, Any]:
    """A webhook that answers with its execution id at once, then waits `?hold=` seconds."""

    def node(name: str, kind: str, version: float, parameters: dict[str, Any]) -> dict[str, Any]:
        return {"id": str(uuid.uuid4()), "name": name, "type": kind, "typeVersion": version,
                "position": [0, 0], "parameters": parameters}  # fmt: skip

    webhook = node("Webhook", "n8n-nodes-base.webhook", 2,
                   {"path": HOLDER_PATH, "httpMethod": "GET", "responseMode": "responseNode",
                    "options": {}})  # fmt: skip
    webhook["webhookId"] = str(uuid.uuid4())
    body = "={{ JSON.stringify({ execution_id: $execution.id }) }}"
    answer = node("Answer", "n8n-nodes-base.respondToWebhook", 1.1,
                  {"respondWith": "json", "options": {}, "responseBody": body})  # fmt: skip
    hold = node("Hold", "n8n-nodes-base.wait", 1.1,
                {"resume": "timeInterval", "unit": "seconds",
                 "amount": "={{ Number($('Webhook').first().json.query.hold) }}"})  # fmt: skip
    hold["webhookId"] = str(uuid.uuid4())
    return {
        "name": f"e2e ops holder {uuid.uuid4().hex[:6]}",
        "nodes": [webhook, answer, hold],
        "connections": {
            "Webhook": {"main": [[{"node": "Answer", "type": "main", "index": 0}]]},
            "Answer": {"main": [[{"node": "Hold", "type": "main", "index": 0}]]},
        },
        "settings": {"executionOrder": "v1"},
    }


@pytest.fixture(scope="module")
def holder(n8n: N8nInstance) -> Iterator[str]:
    """The holder workflow, active in the test-bed n8n; returns its id."""
    client = N8nClient(n8n)
    try:
        created = client.create_workflow(holder_workflow())
        client.activate_and_wait(str(created["id"]), HOLDER_PATH, "GET")
        yield str(created["id"])
    finally:
        client.close()


def run_holder(n8n_client: N8nClient, hold_seconds: int) -> str:
    """Start an execution of the holder; returns its id (it runs on for `hold_seconds`)."""
    response = n8n_client.call_webhook(f"{HOLDER_PATH}?hold={hold_seconds}")
    response.raise_for_status()
    return str(response.json()["execution_id"])


def status(n8n_client: N8nClient, execution_id: str) -> str:
    return str(n8n_client.api("GET", f"/executions/{execution_id}")["status"])


def counted(client: redis.Redis, metric: str, scope: str) -> int:
    found = client.scan_iter(match=f"n8nlock:stats:*:{metric}:{scope}")
    return sum(int(client.get(key) or 0) for key in found)


def record(client: redis.Redis, scope: str, lane: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(client.get(f"n8n-lock-{scope}:meta:{lane}") or "null")
    return found


def test_locks_lists_a_held_lane_and_release_force_lets_the_next_in_line_enter(
    ops: OpsCli, n8n: N8nInstance, redis_client: redis.Redis, holder: str, unique_name: str
) -> None:
    held = hold_lane(redis_client, unique_name, ticket=3, ttl=120, workflow_id=holder,
                     workflow_name="e2e ops holder", execution_id="4711")  # fmt: skip
    draw(redis_client, unique_name, 5)  # 4 and 5 wait
    (listed,) = ops.json("locks", "--scope", unique_name)["locks"]
    execution_url = f"{n8n.base_url}/workflow/{holder}/executions/4711"
    assert listed["holder"] == {
        "lock_id": held["lock_id"],
        "workflow_id": holder,
        "workflow_name": "e2e ops holder",
        "execution_id": "4711",
        "execution_url": execution_url,
    }
    assert (listed["ticket"], listed["fence"], listed["waiting"]) == (3, 3, 2)
    assert 100 < listed["ttl_seconds"] <= 120 and listed["problems"] == []
    assert execution_url in ops("locks", "--scope", unique_name).stdout
    assert requests.get(execution_url, timeout=30).status_code == 200  # n8n's page for it

    released = ops("release", unique_name, "--force", "--yes")
    assert f"release  n8n-lock-{unique_name}:meta:0" in released.stderr
    assert record(redis_client, unique_name)["released"] is True
    assert redis_client.get(f"n8n-lock-{unique_name}:served:0") == "3"  # ticket 4's turn
    assert counted(redis_client, "force_released", unique_name) == 1
    ops("release", unique_name, "--force", "--yes", exit_code=3)
    assert counted(redis_client, "force_released", unique_name) == 1


def test_reap_keeps_a_running_holder_and_frees_it_once_stopped_through_the_api(
    ops: OpsCli,
    n8n: N8nInstance,
    n8n_client: N8nClient,
    redis_client: redis.Redis,
    holder: str,
    unique_name: str,
) -> None:
    finished = run_holder(n8n_client, 1)
    running = run_holder(n8n_client, 60)
    wait_until(lambda: status(n8n_client, finished) == "success", 30, "the short run ended")
    hold_lane(redis_client, unique_name, ticket=1, slots=2, workflow_id=holder,
              execution_id=finished)  # fmt: skip
    hold_lane(redis_client, unique_name, ticket=2, slots=2, workflow_id=holder,
              execution_id=running)  # fmt: skip
    dry = ops.json("reap", "--scope", unique_name, "--dry-run")["locks"]
    assert [(d["lane"], d["action"]) for d in dry] == [(0, "kept"), (1, "would-free")]
    assert "released" not in record(redis_client, unique_name, 1)

    first = ops.json("reap", "--scope", unique_name)["locks"]
    assert {d["lane"]: d["action"] for d in first} == {0: "kept", 1: "freed"}
    assert {d["lane"]: d["reason"] for d in first}[1] == f"execution {finished} ended: success"
    assert record(redis_client, unique_name, 1)["released"] is True
    assert redis_client.get(f"n8n-lock-{unique_name}:served:1") == "1"

    stop_execution(n8n, running)
    wait_until(lambda: status(n8n_client, running) in {"canceled", "crashed"}, 30, "stopped")
    started = time.monotonic()
    freed = ops("reap", "--scope", unique_name)
    print(f"reap released the stopped execution's lane in {time.monotonic() - started:.2f} s")
    stopped = status(n8n_client, running)
    assert freed.stdout == (f"freed  {unique_name} lane 0  execution {running} ended: {stopped}\n")
    assert redis_client.get(f"n8n-lock-{unique_name}:served:0") == "2"
    assert counted(redis_client, "reaped", unique_name) == 2
    again = ops.json("reap", "--scope", unique_name)
    assert again["freed"] == 0 and again["locks"] == []


def test_reap_idle_forgets_the_scalars_only_of_a_scope_nobody_is_in_line_for(
    ops: OpsCli, redis_url: str, redis_client: redis.Redis, unique_name: str
) -> None:
    idle, busy = f"{unique_name}-idle", f"{unique_name}-busy"
    marked = f"{unique_name}-marked"
    leave_lane(redis_client, idle, ticket=6)
    redis_client.expire(f"n8n-lock-{idle}:hold_ms", 3600)  # released long ago
    leave_lane(redis_client, busy, ticket=2)
    redis_client.expire(f"n8n-lock-{busy}:hold_ms", 3600)
    draw(redis_client, busy, 3)  # 3 drew its ticket and has not entered yet
    # Ticket 5 was skipped (or gave up): a skipped caller may be stalled and come back, and
    # only its mark tells it so; forgetting the scope would restart tickets beside it.
    leave_lane(redis_client, marked, ticket=6)
    redis_client.set(f"n8n-lock-{marked}:gone:5", 1, ex=600)
    redis_client.expire(f"n8n-lock-{marked}:hold_ms", 3600)
    result = ops.json("reap", "--scope", f"{unique_name}-*", "--idle")
    actions = {d["scope"]: d["action"] for d in result["locks"]}
    assert actions == {idle: "forgot", busy: "busy", marked: "busy"}, result
    assert redis_client.get(f"n8n-lock-{marked}:gone:5") == "1"
    assert [k for k in redis_client.scan_iter(match=f"n8n-lock-{idle}*")] == [
        f"n8n-lock-{idle}:meta:0"  # the released record, for its last seconds
    ]
    assert redis_client.get(f"n8n-lock-{busy}:ticket") == "3"

    # An arrival between the read and the script: the script reads the ticket itself.
    leave_lane(redis_client, busy, ticket=3)
    redis_client.expire(f"n8n-lock-{busy}:hold_ms", 3600)
    with redis.Redis.from_url(redis_url, decode_responses=True) as client:
        store = LockStore(client)
        state = store.read(busy)
        assert isinstance(state, ScopeState)
        redis_client.incr(f"n8n-lock-{busy}:ticket")
        assert store.forget_if_idle(state, 30) == (False, "ticket 4 is in line in lane 0")
    assert redis_client.get(f"n8n-lock-{busy}:ticket") == "4"


def test_a_lock_taken_through_n8n_is_listed_force_released_and_counted(
    lockbed: LockBed, ops: OpsCli, redis_client: redis.Redis, unique_name: str
) -> None:
    # Takes its lock through the engine v2 primitives: re-check when they change.
    holder = acquired(lockbed.lock(unique_name, release=False, ttl=120))
    (listed,) = ops.json("locks", "--scope", unique_name)["locks"]
    assert listed["holder"]["lock_id"] == holder["lock_id"]
    assert listed["holder"]["execution_id"] == holder["execution_id"]
    assert (listed["lane"], listed["fence"]) == (0, holder["fence"])
    assert 100 < listed["ttl_seconds"] <= 120
    ops("release", unique_name, "--force", "--yes")
    started = time.monotonic()
    acquired(lockbed.lock(unique_name))
    assert time.monotonic() - started < 2.5, "the next caller still waited"
    (scope,) = ops.json("stats", "--scope", unique_name, "--hours", "2")["scopes"]
    assert (scope["arrived"], scope["acquired"], scope["force_released"]) == (2, 2, 1)
    assert sum(scope["wait_seconds"]["buckets"].values()) == 2
