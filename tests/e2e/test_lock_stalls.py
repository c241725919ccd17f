"""Stalls: n8n stops for seconds (SIGSTOP/SIGCONT) while callers contend for one scope.

A stall is a caller that is alive but does nothing for a while: a blocked event loop, a GC
pause, a throttled container, one stalled queue worker (notes: stalls.md). The lock's promise
must not depend on how long it lasts (up to the lease): no two bodies of a mutex at once, never
more than N of a semaphore, and every caller gets its answer. The harness is tests/e2e/stalls.py
(also behind `python -m bench.stall_bench`).

The body's own nodes retry here (retryOnFail), as the lock's nodes do: n8n 2.x fails any
expression that a stop of more than 5 s interrupts (N8N_EXPRESSION_ENGINE_TIMEOUT), and these
tests are about the lock, not about that.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from testbed.queue import QueueCluster
from testbed.settings import topology
from tests.e2e.lockbed import LockBed, held_lanes
from tests.e2e.stalls import (
    StallRun,
    contend_with_stalls,
    n8n_main_pid,
    never_started,
    worker_pids,
)
from tests.e2e.test_lock_engine import engine_workflow, install


def stall_body(key: str) -> dict[str, Any]:
    """The engine tests' body (mark start, hold, mark end, answer), each node retrying."""
    workflow = engine_workflow(key)
    for node in workflow["nodes"]:
        if node["type"] != "n8n-nodes-base.webhook":
            node.update(retryOnFail=True, maxTries=3, waitBetweenTries=0)
    return workflow


def report(run: StallRun) -> str:
    failed = [(a.who, a.status, a.body[:200]) for a in run.failed()]
    pairs = [(a.who, b.who) for a, b in run.overlaps()]
    stops = [f"{s.seconds:.1f}s" for s in run.stops]
    return json.dumps(
        {"failed": failed, "overlaps": pairs[:10], "peak": run.peak, "stops": stops},
        default=str,
    )


single_process = pytest.mark.skipif(
    topology() != "single", reason="stops the one n8n process; queue mode stops a worker below"
)


@pytest.fixture(scope="module")
def mutex(lockbed: LockBed) -> str:
    key = f"stall_mutex_{uuid.uuid4().hex[:6]}"
    return install(lockbed, key, body=stall_body(key))


@pytest.fixture(scope="module")
def semaphore(lockbed: LockBed) -> str:
    key = f"stall_sem_{uuid.uuid4().hex[:6]}"
    return install(lockbed, key, "--max-concurrent", "3", body=stall_body(key))


@single_process
@pytest.mark.parametrize(
    ("callers", "hold_ms", "schedule"),
    [(40, 50, [6, 6, 6]), (30, 300, [6, 20])],
    ids=["6s-stops", "20s-stop"],
)
def test_a_mutex_never_has_two_bodies_when_n8n_stops_for_seconds_during_contention(
    lockbed: LockBed,
    mutex: str,
    unique_name: str,
    callers: int,
    hold_ms: int,
    schedule: list[float],
) -> None:
    """Before format 3: with 6 s stops two bodies ran at once and one caller got a 500; a
    caller skipped while stopped entered beside the one that skipped it."""
    run = contend_with_stalls(
        lockbed, mutex, unique_name, callers=callers, hold_ms=hold_ms, schedule=schedule,
        pids=[n8n_main_pid(lockbed.n8n)],
    )  # fmt: skip
    assert len(run.stops) == len(schedule) and not run.stop_errors, report(run)
    assert run.ok == callers, report(run)
    assert run.peak == 1, report(run)
    assert len(run.intervals) == callers, report(run)
    assert held_lanes(lockbed.redis, unique_name) == []


@single_process
def test_a_semaphore_of_three_never_has_four_bodies_when_n8n_stops_for_seconds(
    lockbed: LockBed, semaphore: str, unique_name: str
) -> None:
    """Before format 3: 7 bodies at once with stops of 6 and 20 s."""
    run = contend_with_stalls(
        lockbed, semaphore, unique_name, callers=30, hold_ms=1000, schedule=[6, 20],
        pids=[n8n_main_pid(lockbed.n8n)],
    )  # fmt: skip
    assert len(run.stops) == 2 and not run.stop_errors, report(run)
    assert run.peak <= 3, report(run)
    # Every caller is answered and its body ran, but for executions n8n itself never began
    # (1.123.81, rarely: created as its process was stopped, no node run, not even ours; 3 of
    # 30 in one CI run, 4 in another). At most a fifth, so that the test cannot pass with the
    # line lost; the failure names when each of them started against the stops.
    lost = never_started(lockbed.n8n, lockbed.workflow_id(semaphore), unique_name)
    answered = {a.who for a in run.answers if a.status == 200}
    when = {
        who: [
            None if at is None else (at - s.stopped_at_ms, at - s.resumed_at_ms) for s in run.stops
        ]
        for who, at in lost.items()
    }
    assert answered | set(lost) == set(range(30)) and len(lost) <= 6, (when, report(run))
    assert set(run.intervals) == answered, report(run)
    assert held_lanes(lockbed.redis, unique_name) == []


def test_one_stalled_queue_worker_never_lets_a_second_body_in_while_the_other_serves(
    queue_cluster: QueueCluster, lockbed: LockBed, mutex: str, unique_name: str
) -> None:
    """Queue mode: one worker stops for 20 s (twice) while the other keeps serving the scope;
    the stalled worker's callers, skipped meanwhile, go back in line when it resumes."""
    worker = next(iter(worker_pids(queue_cluster).values()))
    run = contend_with_stalls(
        lockbed, mutex, unique_name, callers=30, hold_ms=200, schedule=[20, 20],
        pids=[worker],
    )  # fmt: skip
    assert len(run.stops) == 2 and not run.stop_errors, report(run)
    assert run.ok == 30, report(run)
    assert run.peak == 1, report(run)
    assert held_lanes(lockbed.redis, unique_name) == []
