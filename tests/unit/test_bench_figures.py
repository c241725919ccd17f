"""The lock benchmark's figures come from saved executions: gaps, overtakes, spread, Redis load."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bench import figures
from bench.figures import Holder
from bench.harness import runs, stats

REDIS = "n8n-nodes-base.redis"
SET = "n8n-nodes-base.set"
V2_TYPES = {
    "Webhook": "n8n-nodes-base.webhook",
    "Lock Context": SET,
    "Lock Take Ticket": REDIS,
    "Lock Read Line": REDIS,
    "Lock Sleep": "n8n-nodes-base.wait",
    "Lock Hold": REDIS,
    "Hold": "n8n-nodes-base.wait",
    "Lock Release": REDIS,
    "Lock Count Wait": REDIS,
}


Json = dict[str, Any]


def run(start: float, took: float, output: Json | None = None, **extra: Any) -> Json:
    data = {"main": [[{"json": output}]]} if output is not None else {}
    return {"startTime": start, "executionTime": took, "data": data, **extra}


def execution(execution_id: str, runs: dict[str, list[Json]], types: dict[str, str]) -> Json:
    nodes = [{"name": name, "type": kind} for name, kind in types.items()]
    return {
        "id": execution_id,
        "data": {"resultData": {"runData": runs}},
        "workflowData": {"nodes": nodes},
    }


def v2_execution(
    execution_id: str, ticket: int, at: float, entered: float, looks: int = 1
) -> dict[str, Any]:
    """An engine v2 call: ticket at `at`, `looks` reads of the line (sleeping between them),
    body from `entered` for 300 ms, then the release SET (12 ms) and the wait statistics."""
    read_times = [at + 10 + i * (entered - at - 30) / looks for i in range(looks)]
    runs = {
        "Webhook": [run(at, 0, {"body": {"scope": "s", "hold_ms": 300}})],
        "Lock Context": [run(at, 2)],
        "Lock Take Ticket": [run(at + 2, 8, {"n8n-lock-s:ticket": ticket, "n8nlock:stats": 1})],
        "Lock Read Line": [run(t, 5) for t in read_times],
        "Lock Hold": [run(entered - 15, 10)],
        "Hold": [run(entered, 300)],
        "Lock Release": [run(entered + 310, 12)],
        "Lock Count Wait": [run(entered + 330, 6)],
    }
    if looks > 1:
        runs["Lock Sleep"] = [run(t + 7, 20) for t in read_times[:-1]]
    return execution(execution_id, runs, V2_TYPES)


def holder(order: float, lined_up: float, entered: float, released: float = 0.0) -> Holder:
    return Holder(str(order), order, lined_up, entered, released or entered + 300, True, 0)


def test_v2_call_is_read_from_its_ticket_release_node_and_acquire_redis_nodes() -> None:
    found = figures.v2_holder(v2_execution("7", ticket=42, at=1000, entered=2000, looks=3))

    assert found == Holder(
        execution_id="7",
        order=42,
        lined_up_ms=1000,
        entered_ms=2000,
        released_ms=2322,  # Lock Release starts 310 ms into the body and takes 12 ms
        waited=True,
        # ticket + 3 looks + hold; the release and the wait statistics come after the body
        acquire_redis_runs=5,
    )


def test_v2_call_that_never_slept_did_not_wait() -> None:
    found = figures.v2_holder(v2_execution("1", ticket=1, at=0, entered=60))

    assert not found.waited
    assert found.acquire_redis_runs == 3


def test_seed_call_is_read_from_the_sub_executions_of_its_acquire_and_release() -> None:
    parent_types = {
        "Webhook": "n8n-nodes-base.webhook",
        "Lock Acquire": "n8n-nodes-base.executeWorkflow",
        "Hold": "n8n-nodes-base.wait",
        "Lock Release": "n8n-nodes-base.executeWorkflow",
    }

    def calls(sub: str) -> dict[str, Any]:
        return {"subExecution": {"executionId": sub, "workflowId": "w"}}

    parent = execution(
        "10",
        {
            "Webhook": [run(1000, 0, {"body": {"scope": "s"}})],
            "Lock Acquire": [run(1001, 2100, metadata=calls("11"))],
            "Hold": [run(3110, 300)],
            "Lock Release": [run(3420, 80, metadata=calls("12"))],
        },
        parent_types,
    )
    acquisition = execution(
        "11",
        {
            "GET Lock": [run(1010, 5), run(2015, 5), run(3020, 5)],
            "Wait Before Poll": [run(1020, 1000), run(2025, 1000)],
            "INCR Lock": [run(3030, 5)],
            "SET Lock Meta and Index": [run(3050, 9)],
        },
        {"GET Lock": REDIS, "Wait Before Poll": "n8n-nodes-base.wait", "INCR Lock": REDIS,
         "SET Lock Meta and Index": REDIS},
    )  # fmt: skip
    release = execution(
        "12",
        {"DEL Lock Meta": [run(3450, 5)], "DEL Lock Counter": [run(3456, 13)]},
        {"DEL Lock Meta": REDIS, "DEL Lock Counter": REDIS},
    )

    found = figures.seed_holder(parent, {"11": acquisition, "12": release})

    assert found == Holder("10", 1001, 1001, 3110, 3469, True, 5)


def test_handoff_gap_runs_from_one_release_to_the_next_body_in_entering_order() -> None:
    # listed out of order, as the API lists executions newest first
    line = [holder(3, 0, 1000, released=1300), holder(1, 0, 0, released=300),
            holder(2, 0, 330, released=640)]  # fmt: skip

    found = figures.handoff(line)

    assert found.gaps_ms == [30, 360]
    assert found.median_ms == 195
    assert found.overlaps == 0


def test_a_body_that_starts_before_its_predecessor_released_is_an_overlap() -> None:
    found = figures.handoff([holder(1, 0, 0, released=300), holder(2, 0, 290)])

    assert found.gaps_ms == [-10]
    assert found.overlaps == 1


def test_no_figure_from_a_single_holder() -> None:
    found = figures.handoff([holder(1, 0, 0)])

    assert math.isnan(found.median_ms) and math.isnan(found.p99_ms)


def test_served_in_ticket_order_has_no_inversion() -> None:
    line = [holder(1, 0, 10), holder(2, 5, 320), holder(3, 6, 630)]

    assert figures.service_order(line) == figures.Order(inverted=0, comparable=3)


def test_a_later_ticket_entering_first_is_an_inversion() -> None:
    line = [holder(1, 0, 10), holder(2, 5, 630), holder(3, 6, 320)]

    found = figures.service_order(line)

    assert found == figures.Order(inverted=1, comparable=3)
    assert found.fraction == pytest.approx(1 / 3)


def test_callers_that_never_waited_together_cannot_overtake_each_other() -> None:
    # the second lined up after the first had entered: nothing to compare
    found = figures.service_order([holder(2, 0, 10), holder(1, 50, 60)])

    assert found == figures.Order(inverted=0, comparable=0)
    assert found.fraction == 0


def test_spread_is_most_over_fewest_completions() -> None:
    assert figures.spread([30, 33, 36, 30, 31, 32]) == pytest.approx(1.2)
    assert figures.spread([30, 0, 36]) == math.inf


def test_redis_load_counts_only_what_waiting_added_per_second_waited() -> None:
    waiters = [
        Holder("1", 1, 0, 2000, 2300, True, 5),  # 2 s, 2 runs beyond an uncontended acquire
        Holder("2", 2, 0, 1000, 1300, True, 4),  # 1 s, 1 run beyond
        Holder("3", 3, 0, 60, 360, False, 9),  # did not wait: not counted
    ]

    assert figures.redis_per_wait_second(waiters, uncontended_runs=3) == pytest.approx(1.0)


def test_no_redis_load_figure_without_a_waiter() -> None:
    found = figures.redis_per_wait_second([Holder("1", 1, 0, 60, 360, False, 3)], 3)

    assert math.isnan(found)


def test_percentile_is_a_measured_value() -> None:
    values = [float(v) for v in range(1, 101)]

    assert stats.percentile(values, 90) == 90
    assert stats.percentile(values, 99) == 99
    assert stats.percentile([5.0, 1.0], 50) == 1


def test_node_cost_sums_a_nodes_runs_then_takes_the_median_over_calls() -> None:
    calls = [
        v2_execution("1", ticket=1, at=0, entered=100),
        v2_execution("2", ticket=2, at=1000, entered=1100),
        v2_execution("3", ticket=3, at=2000, entered=2500, looks=3),
    ]

    costs = runs.node_costs(calls)

    assert costs["Hold"] == 300
    assert costs["Lock Read Line"] == 5  # median of 5, 5 and 15 (three looks)
    assert next(iter(costs)) == "Hold"  # slowest first


def test_a_lock_labelled_after_its_trigger_is_read_like_the_only_one() -> None:
    call = v2_execution("4", ticket=9, at=0, entered=500, looks=2)
    runs = call["data"]["resultData"]["runData"]
    for name in [n for n in runs if n.startswith("Lock ")]:
        runs[f"{name} (Webhook)"] = runs.pop(name)
    for node in call["workflowData"]["nodes"]:
        node["name"] += " (Webhook)" if node["name"].startswith("Lock ") else ""

    assert figures.holder(call, subs={}) == figures.v2_holder(
        v2_execution("4", ticket=9, at=0, entered=500, looks=2)
    )


def test_the_parked_line_bench_reads_each_body_s_place_and_counts_pairs_out_of_order() -> None:
    from bench import park_line

    def task(start: float, out: Json) -> Json:
        return {"startTime": start, "data": {"main": [[{"json": out}]]}}

    run = {
        "Webhook": [task(0, {"body": {"who": 7}})],
        "Lock Decide": [
            task(1, {"state": "park", "ticket": 9}),
            task(5, {"state": "enter", "ticket": 9}),
        ],
        "Mark Start": [task(6, {})],
    }
    assert park_line._served(run) == (6.0, 9, 7)
    assert park_line._served({"Webhook": run["Webhook"]}) is None  # no body: not served
    assert park_line._inversions([1, 2, 3]) == 0
    assert park_line._inversions([2, 1, 4, 3]) == 2
