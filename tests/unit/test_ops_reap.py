"""reap's decisions, against a real Redis and a stand-in for n8n's executions API."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import redis

from n8n_lockkit.ops.reap import Decision, Reaper
from n8n_lockkit.ops.store import LockStore
from n8n_lockkit.remote.n8n_client import N8nNotFound
from tests.redis_bed import meta_for, put_lock


class Executions:
    """n8n's GET /executions/{id} and GET /workflows/{id}, answered from dicts."""

    def __init__(self, statuses: dict[str, str], workflows: tuple[str, ...] = ("wf1",)) -> None:
        self.statuses = statuses
        self.workflows = workflows
        self.asked: list[str] = []
        self.before_answer: Callable[[str], None] = lambda _: None

    def get_execution(self, execution_id: str) -> dict[str, Any]:
        self.asked.append(execution_id)
        self.before_answer(execution_id)
        if execution_id not in self.statuses:
            raise N8nNotFound(f"n8n has no execution {execution_id}")
        status, _, workflow = self.statuses[execution_id].partition("@")
        return {"id": execution_id, "status": status, "workflowId": workflow or "wf1"}

    def get_workflow(self, workflow_id: str) -> dict[str, Any]:
        if workflow_id not in self.workflows:
            raise N8nNotFound(f"n8n has no workflow {workflow_id}")
        return {"id": workflow_id}


def reap(
    client: redis.Redis,
    executions: Executions,
    *,
    dry_run: bool = False,
    during_grace: Callable[[], None] = lambda: None,
) -> dict[str, Decision]:
    store = LockStore(client)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        during_grace()

    reaper = Reaper(
        store, executions, grace_seconds=30, dry_run=dry_run, sleep=sleep, announce=print
    )
    decisions = reaper.run(store.scan("*").states)
    assert len(slept) <= 1, "reap looks twice at most"
    return {d.scope: d for d in decisions}


def hold(client: redis.Redis, scope: str, execution_id: str, **meta: Any) -> None:
    put_lock(client, scope, meta=meta_for(scope, execution_id=execution_id, **meta))


def reaped_count(client: redis.Redis, scope: str) -> int:
    return sum(int(client.get(k) or 0) for k in client.keys(f"n8nlock:stats:*:reaped:{scope}"))


@pytest.mark.parametrize("status", ["success", "error", "crashed", "canceled"])
def test_a_lock_whose_execution_ended_is_freed_and_counted(
    redis_client: redis.Redis, status: str
) -> None:
    hold(redis_client, "order-1", "57")
    decisions = reap(redis_client, Executions({"57": status}))
    assert decisions["order-1"].action == "freed"
    assert decisions["order-1"].reason == f"execution 57 ended: {status}"
    assert redis_client.keys("n8n-lock-order-1*") == []
    assert reaped_count(redis_client, "order-1") == 1


@pytest.mark.parametrize("status", ["new", "running", "waiting"])
def test_a_lock_whose_execution_runs_or_waits_is_kept(
    redis_client: redis.Redis, status: str
) -> None:
    hold(redis_client, "order-1", "57")
    decisions = reap(redis_client, Executions({"57": status}))
    assert decisions["order-1"].action == "kept"
    assert redis_client.exists("n8n-lock-order-1", "n8n-lock-order-1:meta") == 2


def test_an_execution_n8n_no_longer_has_frees_its_lock(redis_client: redis.Redis) -> None:
    hold(redis_client, "order-1", "57")
    decisions = reap(redis_client, Executions({}))
    assert decisions["order-1"].action == "freed"
    assert decisions["order-1"].reason == "execution 57 no longer exists in n8n"


def test_a_lock_of_another_n8n_instance_is_kept(redis_client: redis.Redis) -> None:
    # Execution ids restart on every instance: 57 here is not the 57 that holds the lock.
    hold(redis_client, "order-1", "57", workflow_id="elsewhere")
    hold(redis_client, "order-2", "58", workflow_id="elsewhere")
    decisions = reap(redis_client, Executions({"57": "success@wf1"}))
    assert decisions["order-1"].action == "kept"
    assert "belongs to workflow wf1, not elsewhere" in decisions["order-1"].reason
    assert decisions["order-2"].action == "kept"
    assert "workflow elsewhere is not on this n8n instance" in decisions["order-2"].reason
    assert redis_client.exists("n8n-lock-order-1", "n8n-lock-order-2") == 2


def test_an_execution_id_n8n_cannot_look_up_is_kept(redis_client: redis.Redis) -> None:
    hold(redis_client, "order-1", "manual-run")
    executions = Executions({})
    assert reap(redis_client, executions)["order-1"].action == "kept"
    assert executions.asked == []


def test_dry_run_decides_the_same_and_deletes_nothing(redis_client: redis.Redis) -> None:
    hold(redis_client, "order-1", "57")
    put_lock(redis_client, "order-2", with_meta=False)
    decisions = reap(redis_client, Executions({"57": "canceled"}), dry_run=True)
    assert {s: d.action for s, d in decisions.items()} == {
        "order-1": "would-free",
        "order-2": "would-free",
    }
    assert redis_client.exists("n8n-lock-order-1", "n8n-lock-order-2") == 2
    assert reaped_count(redis_client, "order-1") == 0


def test_a_counter_without_record_is_freed_after_the_grace_period(
    redis_client: redis.Redis,
) -> None:
    put_lock(redis_client, "order-1", ttl=None, with_meta=False)
    decision = reap(redis_client, Executions({}))["order-1"]
    assert decision.action == "freed"
    assert decision.reason == "no meta (holder unknown) for 30 s"
    assert redis_client.exists("n8n-lock-order-1") == 0
    assert reaped_count(redis_client, "order-1") == 1


def test_a_counter_whose_record_arrives_during_the_grace_period_is_kept(
    redis_client: redis.Redis,
) -> None:
    # A holder between its INCR and its SET: the record lands while reap waits.
    put_lock(redis_client, "order-1", with_meta=False)

    def record_arrives() -> None:
        redis_client.set("n8n-lock-order-1:meta", json.dumps(meta_for("order-1")), ex=300)

    decision = reap(redis_client, Executions({}), during_grace=record_arrives)["order-1"]
    assert decision.action == "kept"
    assert redis_client.exists("n8n-lock-order-1", "n8n-lock-order-1:meta") == 2


def test_a_counter_replaced_during_the_grace_period_is_kept(redis_client: redis.Redis) -> None:
    put_lock(redis_client, "order-1", ttl=300, with_meta=False)

    def new_holder_increments() -> None:
        redis_client.delete("n8n-lock-order-1")
        put_lock(redis_client, "order-1", ttl=120, with_meta=False)

    decision = reap(redis_client, Executions({}), during_grace=new_holder_increments)
    assert decision["order-1"].action == "kept"
    assert redis_client.ttl("n8n-lock-order-1") > 100


def test_a_record_left_without_counter_and_ttl_is_cleared(redis_client: redis.Redis) -> None:
    redis_client.set("n8n-lock-order-1:meta", json.dumps(meta_for("order-1")))
    redis_client.set("n8n-lock-order-2:meta", json.dumps(meta_for("order-2")), ex=60)
    decisions = reap(redis_client, Executions({}))
    assert decisions["order-1"].action == "freed"
    assert "order-2" not in decisions, "a record with a TTL expires on its own"
    assert redis_client.exists("n8n-lock-order-1:meta", "n8n-lock-order-2:meta") == 1


def test_a_lock_renewed_while_n8n_was_asked_is_left_alone(redis_client: redis.Redis) -> None:
    hold(redis_client, "order-1", "57")

    def renew(_: str) -> None:
        redis_client.set("n8n-lock-order-1:meta", json.dumps(meta_for("order-1", ttl=600)))

    executions = Executions({"57": "success"})
    executions.before_answer = renew
    assert reap(redis_client, executions)["order-1"].action == "changed"
    assert redis_client.exists("n8n-lock-order-1", "n8n-lock-order-1:meta") == 2


def test_without_orphans_reap_does_not_wait(redis_client: redis.Redis) -> None:
    hold(redis_client, "order-1", "57")
    store = LockStore(redis_client)

    def no_sleep(seconds: float) -> None:
        raise AssertionError("reap waited although every lock had a holder to ask about")

    reaper = Reaper(store, Executions({"57": "running"}), 30, False, no_sleep, print)
    assert [d.action for d in reaper.run(store.scan("*").states)] == ["kept"]


def test_reaping_twice_frees_nothing_the_second_time(redis_client: redis.Redis) -> None:
    hold(redis_client, "order-1", "57")
    executions = Executions({"57": "error"})
    assert reap(redis_client, executions)["order-1"].action == "freed"
    assert reap(redis_client, executions) == {}
    assert reaped_count(redis_client, "order-1") == 1
