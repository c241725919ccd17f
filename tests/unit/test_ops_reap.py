"""reap's decisions, against a real Redis and a stand-in for n8n's executions API.

Tests that take `fmt` run with locks of both engine formats (tests/ops_locks.py): format 3 keeps
each holder's record per ticket (`holder:<t>`) and a copy at the lane, format 2 the record at
the lane.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import redis

from n8n_lockkit.ops.reap import Decision, Reaper
from n8n_lockkit.ops.store import LockStore
from n8n_lockkit.primitives import keys
from n8n_lockkit.remote.n8n_client import N8nNotFound
from tests.ops_locks import (
    FORMATS,
    enter_late,
    hold,
    holder_record,
    lane_record,
    leave,
    own_record,
    release_under_way,
    skip,
    withdraw,
)
from tests.redis_fixtures import draw, hold_lane


@pytest.fixture(params=FORMATS, ids=lambda fmt: f"format{fmt}")
def fmt(request: pytest.FixtureRequest) -> int:
    """The engine format the locks of a test are written in."""
    value: int = request.param
    return value


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
    found: dict[str, Any] = lane_record(client, scope, lane)
    return found


@pytest.mark.parametrize("status", ["success", "error", "crashed", "canceled"])
def test_a_lane_whose_execution_ended_is_released_and_counted(
    redis_client: redis.Redis, status: str, fmt: int
) -> None:
    hold(redis_client, "order-1", fmt=fmt, ticket=3)
    draw(redis_client, "order-1", 4)  # a caller waits behind it
    decision = reap(redis_client, Executions({"57": status}))[("order-1", 0)]
    assert (decision.action, decision.reason) == ("freed", f"execution 57 ended: {status}")
    assert own_record(redis_client, "order-1", fmt=fmt, ticket=3)["released"] is True
    assert record(redis_client, "order-1")["released"] is True
    assert redis_client.get("n8n-lock-order-1:served:0") == "3"  # ticket 4 enters now
    assert reaped_count(redis_client, "order-1") == 1


@pytest.mark.parametrize("status", ["new", "running", "waiting"])
def test_a_lane_whose_execution_runs_or_waits_is_kept(
    redis_client: redis.Redis, status: str, fmt: int
) -> None:
    held = hold(redis_client, "order-1", fmt=fmt, ticket=3)
    decision = reap(redis_client, Executions({"57": status}))[("order-1", 0)]
    assert (decision.action, decision.reason) == ("kept", f"execution 57 is {status}")
    assert own_record(redis_client, "order-1", fmt=fmt, ticket=3) == held
    assert record(redis_client, "order-1") == held
    assert redis_client.get("n8n-lock-order-1:served:0") == "2"


def test_each_lane_of_a_semaphore_is_judged_by_its_own_holder(
    redis_client: redis.Redis, fmt: int
) -> None:
    hold(redis_client, "pool", fmt=fmt, ticket=1, slots=3, execution_id="57")
    hold(redis_client, "pool", fmt=fmt, ticket=2, slots=3, execution_id="58")
    decisions = reap(redis_client, Executions({"57": "success", "58": "running"}))
    assert {key: d.action for key, d in decisions.items()} == {
        ("pool", 1): "freed",
        ("pool", 2): "kept",
    }
    assert record(redis_client, "pool", 1)["released"] is True
    assert "released" not in record(redis_client, "pool", 2)


def test_reap_asks_n8n_about_the_holder_not_about_a_stale_copy(redis_client: redis.Redis) -> None:
    # Ticket 7 (execution 58) holds; ticket 6 (execution 57, ended) was skipped while it
    # stalled, wrote its record and the lane's copy late, and withdrew. Freeing the lane on
    # 57's word would free 58's lock.
    draw(redis_client, "order-1", 7)
    skip(redis_client, "order-1", head=6)
    held = hold(redis_client, "order-1", ticket=7, execution_id="58")
    late = enter_late(redis_client, "order-1", ticket=6, execution_id="57")
    withdraw(redis_client, "order-1", late)
    executions = Executions({"57": "success", "58": "running"})
    decision = reap(redis_client, executions)[("order-1", 0)]
    assert (decision.action, decision.reason) == ("kept", "execution 58 is running")
    assert executions.asked == ["58"]
    assert holder_record(redis_client, "order-1", 7) == held
    assert record(redis_client, "order-1") == late  # left to its TTL
    assert redis_client.get("n8n-lock-order-1:served:0") == "6"


def test_a_late_entrant_whose_execution_ended_is_freed_and_the_head_may_enter(
    redis_client: redis.Redis,
) -> None:
    # Ticket 6 was skipped, then wrote its record before it could see its mark, and its
    # execution crashed: ticket 7 waits for 6's record to say released.
    draw(redis_client, "order-1", 7)
    skip(redis_client, "order-1", head=6)
    enter_late(redis_client, "order-1", ticket=6, execution_id="57")
    decision = reap(redis_client, Executions({"57": "crashed"}))[("order-1", 0)]
    assert (decision.action, decision.reason) == ("freed", "execution 57 ended: crashed")
    assert holder_record(redis_client, "order-1", 6)["released"] is True
    assert record(redis_client, "order-1")["released"] is True  # its own copy
    assert redis_client.get("n8n-lock-order-1:served:0") == "6"
    assert reaped_count(redis_client, "order-1") == 1


def test_an_execution_n8n_no_longer_has_frees_its_lane(redis_client: redis.Redis, fmt: int) -> None:
    hold(redis_client, "order-1", fmt=fmt)
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


def test_dry_run_decides_the_same_and_changes_nothing(redis_client: redis.Redis, fmt: int) -> None:
    held = hold(redis_client, "order-1", fmt=fmt)
    redis_client.set("n8n-lock-order-2:meta:0", "{not json")  # without TTL
    decisions = reap(redis_client, Executions({"57": "canceled"}), dry_run=True)
    assert {key: d.action for key, d in decisions.items()} == {
        ("order-1", 0): "would-free",
        ("order-2", 0): "would-free",
    }
    assert record(redis_client, "order-1") == held
    assert own_record(redis_client, "order-1", fmt=fmt, ticket=1) == held
    assert redis_client.exists("n8n-lock-order-2:meta:0") == 1
    assert reaped_count(redis_client, "order-1") == 0


def test_a_held_record_without_ttl_is_freed_only_when_its_execution_ended(
    redis_client: redis.Redis, fmt: int
) -> None:
    hold(redis_client, "order-1", fmt=fmt, ttl=None)
    kept = reap(redis_client, Executions({"57": "running"}))[("order-1", 0)]
    assert kept.reason == (
        "execution 57 is running; its record has no TTL, so it is freed only when that "
        "execution ends"
    )
    freed = reap(redis_client, Executions({"57": "success"}))[("order-1", 0)]
    assert freed.action == "freed"
    assert 0 < redis_client.ttl("n8n-lock-order-1:meta:0") <= keys.RELEASED_META_TTL_SECONDS
    if fmt == 3:
        assert 0 < redis_client.ttl("n8n-lock-order-1:holder:1") <= keys.RELEASED_META_TTL_SECONDS


def test_a_stale_copy_without_ttl_is_deleted_after_the_grace(redis_client: redis.Redis) -> None:
    # A copy that no record of a holder backs, written without TTL (by hand, or by a bug).
    leave(redis_client, "order-1", ticket=4)
    stale = {"lock_id": "60-x", "ticket": 3, "format": 3, "execution_id": "60"}
    redis_client.set("n8n-lock-order-1:meta:0", json.dumps(stale))
    executions = Executions({})
    decision = reap(redis_client, executions)[("order-1", 0)]
    assert (decision.action, decision.reason) == (
        "freed", "stale copy (ticket 3) without TTL for 30 s"
    )  # fmt: skip
    assert executions.asked == [] and redis_client.exists("n8n-lock-order-1:meta:0") == 0


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
    redis_client: redis.Redis, fmt: int
) -> None:
    hold(redis_client, "order-1", fmt=fmt, ticket=1)

    def next_holder(_: str) -> None:
        leave(redis_client, "order-1", fmt=fmt, ticket=1)
        hold(redis_client, "order-1", fmt=fmt, ticket=2, execution_id="58")

    executions = Executions({"57": "success"})
    executions.before_answer = next_holder
    decision = reap(redis_client, executions)[("order-1", 0)]
    assert decision.action == "changed"
    # Format 3 reads ticket 1's own record, which its holder released.
    why = "it changed hands since it was read" if fmt == 2 else "its holder released it meanwhile"
    assert why in decision.reason
    assert record(redis_client, "order-1")["execution_id"] == "58"
    assert own_record(redis_client, "order-1", fmt=fmt, ticket=2)["execution_id"] == "58"
    assert redis_client.get("n8n-lock-order-1:served:0") == "1"


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
    redis_client: redis.Redis, fmt: int
) -> None:
    leave(redis_client, "order-1", fmt=fmt, ticket=1)
    draw(redis_client, "order-1", 3)  # 2 never entered; 3 waits and skips it after 5 s
    assert reap(redis_client, Executions({})) == {}
    assert redis_client.get("n8n-lock-order-1:served:0") == "1"


# --idle


def test_idle_forgets_a_scope_reaped_in_the_same_run_and_keeps_busy_ones(
    redis_client: redis.Redis, fmt: int
) -> None:
    hold(redis_client, "order-1", fmt=fmt, ticket=2)
    hold(redis_client, "order-2", fmt=fmt, ticket=5, execution_id="58")
    leave(redis_client, "order-3", fmt=fmt, ticket=1)
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
    redis_client: redis.Redis, fmt: int
) -> None:
    leave(redis_client, "order-1", fmt=fmt, ticket=4)
    redis_client.expire("n8n-lock-order-1:hold_ms", 600)
    leave(redis_client, "order-2", fmt=fmt, ticket=4)  # released just now: within the grace
    decisions = reap(redis_client, Executions({}), dry_run=True, idle=True)
    assert decisions[("order-1", None)].action == "would-forget"
    assert decisions[("order-2", None)].reason == "not idle: released too recently"
    assert redis_client.get("n8n-lock-order-1:ticket") == "4"


@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
def test_idle_does_not_forget_a_scope_whose_last_ticket_out_still_holds(
    redis_client: redis.Redis, dry_run: bool
) -> None:
    # Ticket 4's release set `served` and the lane's copy and has not marked its own record
    # yet (release.js writes them in that order): the lane looks empty and released, but 4
    # holds and 5 may not enter yet.
    hold(redis_client, "order-1", ticket=4)
    release_under_way(redis_client, "order-1", ticket=4)
    decisions = reap(redis_client, Executions({"57": "running"}), dry_run=dry_run, idle=True)
    assert {key: d.action for key, d in decisions.items()} == {("order-1", 0): "kept"}
    assert redis_client.get("n8n-lock-order-1:ticket") == "4"
    assert redis_client.get("n8n-lock-order-1:served:0") == "4"


def test_idle_keeps_a_scope_until_its_gone_marks_expire(redis_client: redis.Redis) -> None:
    # Ticket 2 was skipped while it stalled: it may wake, write its record late, and must then
    # find its mark (and no next round's ticket 2 beside it).
    hold(redis_client, "order-1", ticket=1)
    leave(redis_client, "order-1", ticket=1)
    draw(redis_client, "order-1", 3)
    skip(redis_client, "order-1", head=2)
    hold(redis_client, "order-1", ticket=3)
    leave(redis_client, "order-1", ticket=3)
    redis_client.expire("n8n-lock-order-1:hold_ms", 600)
    why = ("not idle: ticket 2 gave up or was skipped: kept until its mark expires (a caller "
           "skipped while it stalled may still wake)")  # fmt: skip
    for dry_run in (True, False):
        decision = reap(redis_client, Executions({}), dry_run=dry_run, idle=True)
        assert (decision[("order-1", None)].action, decision[("order-1", None)].reason) == (
            "busy", why
        )  # fmt: skip
    assert redis_client.exists("n8n-lock-order-1:ticket", "n8n-lock-order-1:gone:2") == 2
