"""The operator commands against the test-bed n8n and Redis, on locks that real executions took.

Each test owns its scope (`unique_name`); the commands run in the lock bed's workspace, whose env
recorded Redis through `redis-credential` (the CLI gets --redis-url only when the test bed gives
n8n another address for Redis than the tests use).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from click.testing import CliRunner, Result

from n8n_lockkit.cli import main
from tests.e2e.lockbed import (
    API_KEY_VARIABLE,
    Call,
    LockBed,
    acquired,
    run_cli,
    stat,
    wait_until,
)
from tests.testbed.client import OWNER
from tests.testbed.endpoints import N8nInstance


@pytest.fixture
def ops(lockbed: LockBed, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[OpsCli]:
    monkeypatch.setenv(API_KEY_VARIABLE, lockbed.n8n.api_key)
    monkeypatch.delenv("N8NLOCK_REDIS_URL", raising=False)
    yield OpsCli(lockbed, redis_url)


class OpsCli:
    def __init__(self, lockbed: LockBed, redis_url: str) -> None:
        self.lockbed = lockbed
        seen = urlsplit(redis_url)
        same = (seen.hostname, seen.port) == (lockbed.n8n.redis_host, lockbed.n8n.redis_port)
        self.redis_args = [] if same else ["--redis-url", redis_url]

    def __call__(self, *args: str, exit_code: int = 0) -> Result:
        result = CliRunner().invoke(main, ["--workspace", str(self.lockbed.root), *args,
                                           *self.redis_args])  # fmt: skip
        assert result.exit_code == exit_code, (
            f"n8nlock {' '.join(args)} exited {result.exit_code}\n{result.output}"
        )
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "-o", "json").stdout)


UNHANDLED = "e2e_lock_caller_unhandled"


@pytest.fixture
def unhandled_caller(lockbed: LockBed) -> str:
    """The lock caller without an error workflow: n8n 2.x runs the error workflow when an
    execution is stopped (and the cleanup handler then frees its locks), 1.x does not; without
    one, only `reap` frees a stopped execution's lock on both. Returns its webhook path."""
    path = lockbed.root / "workflows" / f"{UNHANDLED}.template.json"
    if not path.exists():
        caller = json.loads(
            (lockbed.root / "workflows" / "e2e_lock_caller.template.json").read_text()
        )
        caller["name"] = "e2e: lock caller without error workflow"
        caller["settings"].pop("errorWorkflow")
        for node in caller["nodes"]:
            if node["type"] == "n8n-nodes-base.webhook":
                node["parameters"]["path"] = "e2e-lock-unhandled"
                node["webhookId"] = str(uuid.uuid5(uuid.NAMESPACE_URL, UNHANDLED))
        path.write_text(json.dumps(caller, indent=2))
        run_cli(lockbed.root, "push", "--env", "e2e", "--activate", UNHANDLED)
    return "e2e-lock-unhandled"


def hold_in_background(
    pool: ThreadPoolExecutor, lockbed: LockBed, scope: str, path: str = "e2e-lock"
) -> Future[Call]:
    """An execution that takes the lock and then waits a minute before releasing it."""
    body = {"ttl": 600, "max_wait": 60, "hold_ms": 60_000, "scope": scope}
    return pool.submit(lockbed.webhook, path, body)


def holder_execution(lockbed: LockBed, scope: str) -> str:
    wait_until(lambda: bool(lockbed.redis.exists(f"n8n-lock-{scope}:meta")), 30, "lock taken")
    meta = json.loads(str(lockbed.redis.get(f"n8n-lock-{scope}:meta")))
    return str(meta["execution_id"])


def stop_execution(n8n: N8nInstance, execution_id: str) -> None:
    """Stop a running execution as a user would: the public API on 2.x; 1.x has no public
    stop, so its UI's internal endpoint, logged in as the owner."""
    if not n8n.version.startswith("1."):
        response = requests.post(
            f"{n8n.base_url}/api/v1/executions/{execution_id}/stop",
            headers={"X-N8N-API-KEY": n8n.api_key},
            timeout=30,
        )
        response.raise_for_status()
        return
    with requests.Session() as session:
        session.headers["browser-id"] = str(uuid.uuid4())
        login = {"emailOrLdapLoginId": OWNER["email"], "password": OWNER["password"]}
        session.post(f"{n8n.base_url}/rest/login", json=login, timeout=30).raise_for_status()
        stop = session.post(f"{n8n.base_url}/rest/executions/{execution_id}/stop", timeout=30)
        stop.raise_for_status()


def test_locks_lists_a_held_lock_and_release_force_frees_it(
    lockbed: LockBed, ops: OpsCli, unique_name: str
) -> None:
    holder = acquired(lockbed.lock(unique_name, release=False, ttl=120))
    (listed,) = ops.json("locks", "--scope", unique_name)["locks"]
    execution_url = (
        f"{lockbed.n8n.base_url}/workflow/{holder['workflow_id']}/executions/"
        f"{holder['execution_id']}"
    )
    assert listed["holder"] == {
        "lock_id": holder["lock_id"],
        "workflow_id": holder["workflow_id"],
        "workflow_name": "e2e: lock caller",
        "execution_id": holder["execution_id"],
        "execution_url": execution_url,
    }
    assert listed["fence"] == holder["fence"] and listed["waiting"] == 0
    assert 100 < listed["ttl_seconds"] <= 120 and listed["problems"] == []
    text = ops("locks", "--scope", unique_name).stdout
    assert holder["execution_id"] in text and execution_url in text
    # Visit the link: it is the execution's page in n8n's UI.
    assert requests.get(execution_url, timeout=30).status_code == 200

    released = ops("release", unique_name, "--force", "--yes")
    assert f"delete  n8n-lock-{unique_name}:meta" in released.stderr
    assert lockbed.redis.exists(holder["key"], holder["meta_key"]) == 0
    started = time.monotonic()
    acquired(lockbed.lock(unique_name))
    assert time.monotonic() - started < 2.5, "the next caller still waited"
    assert stat(lockbed, "force_released", unique_name) == 1
    ops("release", unique_name, "--force", "--yes", exit_code=3)


def test_reap_keeps_a_running_holder_and_heals_it_once_stopped_through_the_api(
    lockbed: LockBed, ops: OpsCli, unique_name: str, unhandled_caller: str
) -> None:
    with ThreadPoolExecutor(1) as pool:
        call = hold_in_background(pool, lockbed, unique_name, unhandled_caller)
        execution_id = holder_execution(lockbed, unique_name)
        (kept,) = ops.json("reap", "--scope", unique_name)["locks"]
        assert kept["action"] == "kept" and kept["execution_id"] == execution_id
        assert kept["reason"] in {
            f"execution {execution_id} is {s}" for s in ("running", "waiting")
        }
        stop_execution(lockbed.n8n, execution_id)
        call.result(timeout=60)
    # Stopping runs no error workflow: the lock is still held by an execution that has ended.
    assert lockbed.redis.exists(f"n8n-lock-{unique_name}") == 1
    dry = ops.json("reap", "--scope", unique_name, "--dry-run")["locks"]
    assert [d["action"] for d in dry] == ["would-free"]
    assert lockbed.redis.exists(f"n8n-lock-{unique_name}") == 1
    started = time.monotonic()
    freed = ops("reap", "--scope", unique_name)
    print(f"reap freed the stopped execution's lock in {time.monotonic() - started:.2f} s")
    assert freed.stdout == f"freed  {unique_name}  execution {execution_id} ended: canceled\n"
    assert lockbed.redis.exists(f"n8n-lock-{unique_name}", f"n8n-lock-{unique_name}:meta") == 0
    assert stat(lockbed, "reaped", unique_name) == 1


def test_reap_heals_a_counter_its_holder_never_wrote_a_record_for(
    lockbed: LockBed, ops: OpsCli, unique_name: str
) -> None:
    key = f"n8n-lock-{unique_name}"
    lockbed.redis.incr(key)  # a holder that crashed between INCR and EXPIRE (W11, W2)
    (listed,) = ops.json("locks", "--scope", unique_name)["locks"]
    assert listed["holder"] is None and listed["problems"] == ["no meta", "no TTL"]
    started = time.monotonic()
    result = ops("reap", "--scope", unique_name, "--grace", "5")
    assert time.monotonic() - started >= 5
    assert result.stdout == f"freed  {unique_name}  no meta (holder unknown) for 5 s\n"
    assert lockbed.redis.exists(key) == 0
    acquired(lockbed.lock(unique_name))


def test_stats_count_what_the_executions_and_commands_did(
    lockbed: LockBed, ops: OpsCli, unique_name: str, unhandled_caller: str
) -> None:
    acquired(lockbed.lock(unique_name))  # acquired and released
    failed = lockbed.lock(unique_name, fail=True, ttl=120)  # healed by the cleanup handler
    assert failed.status >= 400 or "error" in str(failed.body)
    wait_until(lambda: not lockbed.redis.exists(f"n8n-lock-{unique_name}"), 5, "healed")
    acquired(lockbed.lock(unique_name, release=False))  # then force-released
    ops("release", unique_name, "--force", "--yes")
    with ThreadPoolExecutor(1) as pool:  # stopped, then reaped (no handler to race reap)
        call = hold_in_background(pool, lockbed, unique_name, unhandled_caller)
        stop_execution(lockbed.n8n, holder_execution(lockbed, unique_name))
        call.result(timeout=60)
    ops("reap", "--scope", unique_name)
    busy = lockbed.lock(unique_name, release=False, ttl=30)
    assert lockbed.lock(unique_name, wait=False).body["acquired"] is False  # refused: busy
    ops("release", unique_name, "--force", "--yes")
    assert acquired(busy)

    (scope,) = ops.json("stats", "--scope", unique_name, "--hours", "2")["scopes"]
    assert {k: scope[k] for k in ("acquired", "waited", "timeout", "busy")} == {
        "acquired": 5,
        "waited": 0,
        "timeout": 0,
        "busy": 1,
    }
    assert (scope["healed"], scope["force_released"], scope["reaped"]) == (1, 2, 1)
    assert sum(scope["wait_seconds"]["buckets"].values()) == 5
    prometheus = ops("stats", "--scope", unique_name, "-o", "prometheus").stdout
    assert f'n8nlock_lock_events{{event="reaped",scope="{unique_name}"}} 1.0' in prometheus


def test_locks_counts_the_executions_that_wait_and_they_count_out_when_they_leave(
    lockbed: LockBed, ops: OpsCli, unique_name: str
) -> None:
    acquired(lockbed.lock(unique_name, release=False, ttl=120))

    def waiting() -> int:
        (listed,) = ops.json("locks", "--scope", unique_name)["locks"]
        return int(listed["waiting"])

    with ThreadPoolExecutor(3) as pool:
        patient = [pool.submit(lockbed.lock, unique_name, max_wait=60) for _ in range(2)]
        hasty = pool.submit(lockbed.lock, unique_name, max_wait=2)
        wait_until(lambda: waiting() == 3, 10, "three waiters are counted")
        assert hasty.result().body.get("acquired") is False  # timed out: it counts itself out
        wait_until(lambda: waiting() == 2, 10, "the timed-out waiter left the count")
        ops("release", unique_name, "--force", "--yes")
        assert all(acquired(call.result()) for call in patient)
    assert not lockbed.redis.exists(f"n8n-lock-{unique_name}")
    assert lockbed.redis.get(f"n8nlock:arrived:{unique_name}") == "3"
    assert lockbed.redis.get(f"n8nlock:left:{unique_name}") == "3"


def test_a_stopped_execution_is_healed_by_the_handler_on_2x_and_by_reap_on_1x(
    lockbed: LockBed, ops: OpsCli, unique_name: str
) -> None:
    with ThreadPoolExecutor(1) as pool:
        call = hold_in_background(pool, lockbed, unique_name)  # the caller names the handler
        execution_id = holder_execution(lockbed, unique_name)
        stop_execution(lockbed.n8n, execution_id)
        call.result(timeout=60)
    key = f"n8n-lock-{unique_name}"
    if lockbed.n8n.version.startswith("1."):
        time.sleep(3)
        assert lockbed.redis.exists(key) == 1, "1.x ran an error workflow for a stopped execution"
        ops("reap", "--scope", unique_name)
        assert lockbed.redis.exists(key) == 0
    else:
        healed = wait_until(lambda: not lockbed.redis.exists(key), 5, "the handler freed it")
        print(f"2.x: the cleanup handler freed the stopped execution's lock in {healed:.2f} s")
