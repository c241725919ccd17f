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
from tests.redis_bed import draw, hold_lane, leave_lane


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
    idle: bool = False,
    during_grace: Callable[[], None] = lambda: None,
) -> dict[tuple[str, int | None], Decision]:
    store = LockStore(client)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        during_grace()

    reaper = Reaper(
        store, executions, grace_seconds=30, dry_run=dry_run, sleep=sleep, announce=print,
        idle=idle,
    )  # fmt: skip
    decisions = reaper.run(store.scan("*").states)
    assert len(slept) <= 1, "reap looks twice at most"
    return {(d.scope, d.lane): d for d in decisions}


def reaped_count(client: redis.Redis, scope: str) -> int:
    return sum(int(client.get(k) or 0) for k in client.keys(f"n8nlock:stats:*:reaped:{scope}"))


def record(client: redis.Redis, scope: str, lane: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(client.get(f"n8n-lock-{scope}:meta:{lane}") or "null")
    return found


@pytest.mark.parametrize("status", ["success", "error", "crashed", "canceled"])
def test_a_lane_whose_execution_ended_is_released_and_counted(
    redis_client: redis.Redis, status: str
) -> None:
    hold_lane(redis_client, "order-1", ticket=3)
    draw(redis_client, "order-1", 4)  # a caller waits behind it
    decision = reap(redis_client, Executions({"57": status}))[("order-1", 0)]
    assert (decision.action, decision.reason) == ("freed", f"execution 57 ended: {status}")
    assert record(redis_client, "order-1")["released"] is True
    assert redis_client.get("n8n-lock-order-1:served:0") == "3"  # ticket 4 enters now
    assert reaped_count(redis_client, "order-1") == 1


@pytest.mark.parametrize("status", ["new", "running", "waiting"])
def test_a_lane_whose_execution_runs_or_waits_is_kept(
    redis_client: redis.Redis, status: str
) -> None:
    held = hold_lane(redis_client, "order-1", ticket=3)
    decision = reap(redis_client, Executions({"57": status}))[("order-1", 0)]
    assert (decision.action, decision.reason) == ("kept", f"execution 57 is {status}")
    assert record(redis_client, "order-1") == held
    assert redis_client.get("n8n-lock-order-1:served:0") == "2"


def test_each_lane_of_a_semaphore_is_judged_by_its_own_holder(redis_client: redis.Redis) -> None:
    hold_lane(redis_client, "pool", ticket=1, slots=3, execution_id="57")
    hold_lane(redis_client, "pool", ticket=2, slots=3, execution_id="58")
    decisions = reap(redis_client, Executions({"57": "success", "58": "running"}))
    assert {key: d.action for key, d in decisions.items()} == {
        ("pool", 1): "freed",
        ("pool", 2): "kept",
    }
    assert record(redis_client, "pool", 1)["released"] is True
    assert "released" not in record(redis_client, "pool", 2)


def test_an_execution_n8n_no_longer_has_frees_its_lane(redis_client: redis.Redis) -> None:
    hold_lane(redis_client, "order-1")
    decision = reap(redis_client, Executions({}))[("order-1", 0)]
    assert (decision.action, decision.reason) == ("freed", "execution 57 no longer exists in n8n")


def test_a_lock_of_another_n8n_instance_is_kept(redis_client: redis.Redis) -> None:
    # Execution ids restart on every instance: 57 here is not the 57 that holds the lock.
    hold_lane(redis_client, "order-1", execution_id="57", workflow_id="elsewhere")
    hold_lane(redis_client, "order-2", execution_id="58", workflow_id="elsewhere")
    decisions = reap(redis_client, Executions({"57": "success@wf1"}))
    assert decisions[("order-1", 0)].action == "kept"
    assert "belongs to workflow wf1, not elsewhere" in decisions[("order-1", 0)].reason
    assert decisions[("order-2", 0)].action == "kept"
    assert "workflow elsewhere is not on this n8n instance" in decisions[("order-2", 0)].reason
    assert reaped_count(redis_client, "order-1") + reaped_count(redis_client, "order-2") == 0


def test_an_execution_id_n8n_cannot_look_up_is_kept(redis_client: redis.Redis) -> None:
    hold_lane(redis_client, "order-1", execution_id="manual-run")
    executions = Executions({})
    assert reap(redis_client, executions)[("order-1", 0)].action == "kept"
    assert executions.asked == []


def test_dry_run_decides_the_same_and_changes_nothing(redis_client: redis.Redis) -> None:
    held = hold_lane(redis_client, "order-1")
    redis_client.set("n8n-lock-order-2:meta:0", "{not json")  # without TTL
    decisions = reap(redis_client, Executions({"57": "canceled"}), dry_run=True)
    assert {key: d.action for key, d in decisions.items()} == {
        ("order-1", 0): "would-free",
        ("order-2", 0): "would-free",
    }
    assert record(redis_client, "order-1") == held
    assert redis_client.exists("n8n-lock-order-2:meta:0") == 1
    assert reaped_count(redis_client, "order-1") == 0


def test_a_held_record_without_ttl_is_freed_only_when_its_execution_ended(
    redis_client: redis.Redis,
) -> None:
    hold_lane(redis_client, "order-1", ttl=None)
    kept = reap(redis_client, Executions({"57": "running"}))[("order-1", 0)]
    assert kept.reason == (
        "execution 57 is running; its record has no TTL, so it is freed only when that "
        "execution ends"
    )
    freed = reap(redis_client, Executions({"57": "success"}))[("order-1", 0)]
    assert freed.action == "freed"
    assert 0 < redis_client.ttl("n8n-lock-order-1:meta:0") <= 5


def test_a_record_without_ttl_that_holds_nothing_is_deleted_after_the_grace(
    redis_client: redis.Redis,
) -> None:
    redis_client.set("n8n-lock-order-1:meta:0", "{not json")
    redis_client.set("n8n-lock-order-2:meta:0", json.dumps({"released": True, "lock_id": "x"}))
    redis_client.set("n8n-lock-order-3:meta:0", "{not json", ex=60)  # expires on its own
    decisions = reap(redis_client, Executions({}))
    assert decisions[("order-1", 0)].reason == "unreadable meta without TTL for 30 s"
    assert decisions[("order-2", 0)].reason == "released record without TTL for 30 s"
    assert {d.action for d in decisions.values()} == {"freed"} and len(decisions) == 2
    assert redis_client.keys("n8n-lock-*") == ["n8n-lock-order-3:meta:0"]


def test_a_record_that_changes_during_the_grace_period_is_kept(
    redis_client: redis.Redis,
) -> None:
    redis_client.set("n8n-lock-order-1:meta:0", "{not json")

    def holder_writes() -> None:
        hold_lane(redis_client, "order-1", ticket=1)

    decisions = reap(redis_client, Executions({}), during_grace=holder_writes)
    assert decisions[("order-1", 0)].action == "kept"
    assert record(redis_client, "order-1")["ticket"] == 1


def test_a_lane_that_changed_hands_while_n8n_was_asked_is_left_alone(
    redis_client: redis.Redis,
) -> None:
    hold_lane(redis_client, "order-1", ticket=1)

    def next_holder(_: str) -> None:
        leave_lane(redis_client, "order-1", ticket=1)
        hold_lane(redis_client, "order-1", ticket=2, execution_id="58")

    executions = Executions({"57": "success"})
    executions.before_answer = next_holder
    decision = reap(redis_client, executions)[("order-1", 0)]
    assert decision.action == "changed"
    assert decision.reason.endswith("it changed hands since it was read: left alone")
    assert record(redis_client, "order-1")["execution_id"] == "58"


def test_without_orphans_reap_does_not_wait(redis_client: redis.Redis) -> None:
    hold_lane(redis_client, "order-1")
    store = LockStore(redis_client)

    def no_sleep(seconds: float) -> None:
        raise AssertionError("reap waited although every lock had a holder to ask about")

    reaper = Reaper(store, Executions({"57": "running"}), 30, False, no_sleep, print)
    assert [d.action for d in reaper.run(store.scan("*").states)] == ["kept"]


def test_reaping_twice_frees_nothing_the_second_time(redis_client: redis.Redis) -> None:
    hold_lane(redis_client, "order-1")
    executions = Executions({"57": "error"})
    assert reap(redis_client, executions)[("order-1", 0)].action == "freed"
    assert reap(redis_client, executions) == {}
    assert reaped_count(redis_client, "order-1") == 1


def test_a_head_that_never_takes_its_turn_is_left_to_the_engine(
    redis_client: redis.Redis,
) -> None:
    leave_lane(redis_client, "order-1", ticket=1)
    draw(redis_client, "order-1", 3)  # 2 never entered; 3 waits and skips it after 5 s
    assert reap(redis_client, Executions({})) == {}
    assert redis_client.get("n8n-lock-order-1:served:0") == "1"


# --idle


def test_idle_forgets_a_scope_reaped_in_the_same_run_and_keeps_busy_ones(
    redis_client: redis.Redis,
) -> None:
    hold_lane(redis_client, "order-1", ticket=2)
    hold_lane(redis_client, "order-2", ticket=5, execution_id="58")
    leave_lane(redis_client, "order-3", ticket=1)
    redis_client.expire("n8n-lock-order-3:hold_ms", 600)  # released long ago
    draw(redis_client, "order-4", 1)  # ticket 1 drawn, never entered: in line
    decisions = reap(redis_client, Executions({"57": "success", "58": "running"}), idle=True)
    assert {key: d.action for key, d in decisions.items()} == {
        ("order-1", 0): "freed",
        ("order-1", None): "forgot",
        ("order-2", 0): "kept",
        ("order-3", None): "forgot",
        ("order-4", None): "busy",
    }
    assert decisions[("order-1", None)].reason == "idle: deleted its ticket (2) and lanes"
    assert decisions[("order-4", None)].reason == "not idle: ticket 1 is in line in lane 0"
    left = set(redis_client.keys("n8n-lock-*"))
    assert "n8n-lock-order-1:ticket" not in left and "n8n-lock-order-3:served:0" not in left
    # The fast-path value goes with the ticket: kept, it would let the restarted ticket 2 in
    # beside ticket 1.
    assert "n8n-lock-order-3:fast" not in left
    assert {"n8n-lock-order-2:ticket", "n8n-lock-order-4:ticket"} <= left
    again = reap(redis_client, Executions({"58": "running"}), idle=True)
    assert sorted(again) == [("order-2", 0), ("order-4", None)]


def test_idle_dry_run_names_the_idle_scopes_and_deletes_nothing(
    redis_client: redis.Redis,
) -> None:
    leave_lane(redis_client, "order-1", ticket=4)
    redis_client.expire("n8n-lock-order-1:hold_ms", 600)
    leave_lane(redis_client, "order-2", ticket=4)  # released just now: within the grace
    decisions = reap(redis_client, Executions({}), dry_run=True, idle=True)
    assert decisions[("order-1", None)].action == "would-forget"
    assert decisions[("order-2", None)].reason == "not idle: released too recently"
    assert redis_client.get("n8n-lock-order-1:ticket") == "4"
