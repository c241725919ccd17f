"""Parking in queue mode with two job slots per worker (issue 33: workers with `--concurrency 2`).

In queue mode a waiting execution is a job on a worker: a polled waiter keeps one of its
worker's `--concurrency` job slots for its whole wait, and a job of any other workflow queues
behind the line in Bull. With `--park` a waiter further back than the next in line ends its job
at the park; its resume is a new job.

This module runs a queue cluster of its own (main, two workers with `--concurrency 2`: four job
slots in all, PostgreSQL, Bull in Redis database 1) reaching the session's Redis for the locks,
since the session's cluster runs five slots per worker for the other suites.

Held here, as in regular mode (test_parking.py) for a Schedule-triggered line: an unrelated
webhook workflow answers within 0.5 s of its time alone while the parked line grows (the
median call; at most a quarter over, none over 2 s more: assert_within_margin), and the same
line polled (the control) fails that guard; the bodies run one at a time, in ticket order, and
every run that drew a ticket runs. For a webhook caller, what docs/parking.md says of queue
mode: its execution parks, and n8n answers it at once with an empty 200, before its body ran.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from testbed.backend import Backend
from testbed.endpoints import N8nInstance, RedisEndpoint
from testbed.local import LocalBackend
from testbed.settings import n8n_version_params, topology
from tests.e2e.lockbed import API_KEY_VARIABLE, init_workspace, run_cli
from tests.e2e.test_parking import (
    MARGIN_SECONDS,
    assert_within_margin,
    deactivate,
    install_scheduled,
    scheduled_line_served,
    unrelated_seconds,
    unrelated_workflow,
)
from tests.e2e.test_parking_queue import assert_parked_callers_answered_empty

pytestmark = pytest.mark.skipif(topology() != "queue", reason="n8n's queue mode only")

JOB_SLOTS_PER_WORKER = 2
BULL_DB = 1  # not the session cluster's queue (database 0)
# The line grows by about 0.6 runs a second while the schedule fires, past the four job slots
# after some 6 s: the guard looks at the calls made while it fires (drained, a polled line
# shorter than the slots leaves one free, and the control would prove nothing).
SCHEDULE_FOR_S = 20


@dataclass
class SlotsBed:
    n8n: N8nInstance
    redis: redis.Redis
    root: Path
    unrelated_key: str


@pytest.fixture(scope="module", params=n8n_version_params(), ids=lambda v: f"n8n-{v}")
def slots_bed(
    request: pytest.FixtureRequest,
    testbed_backend: Backend,
    redis_endpoint: RedisEndpoint,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SlotsBed]:
    version: str = request.param
    assert isinstance(testbed_backend, LocalBackend)  # queue mode runs on local processes
    with ExitStack() as stack, pytest.MonkeyPatch.context() as patch:
        workdir = tmp_path_factory.mktemp(f"n8n-queue-slots-{version}-")
        n8n, _ = testbed_backend.n8n_queue(
            stack, version, redis_endpoint, workdir,
            concurrency=JOB_SLOTS_PER_WORKER, bull_db=BULL_DB,
        )  # fmt: skip
        root = workdir / "ws"
        patch.setenv(API_KEY_VARIABLE, n8n.api_key)
        init_workspace(root, n8n, [])
        unrelated_key = f"qunrelated_{uuid.uuid4().hex[:6]}"
        (root / "workflows" / f"{unrelated_key}.template.json").write_text(
            json.dumps(unrelated_workflow(unrelated_key))
        )
        run_cli(root, "push", "--env", "e2e", "--activate", unrelated_key)
        client = redis.Redis.from_url(redis_endpoint.url, decode_responses=True)
        stack.callback(client.close)
        yield SlotsBed(n8n, client, root, unrelated_key)


def _unrelated(bed: SlotsBed) -> float:
    return unrelated_seconds(bed.n8n, bed.unrelated_key)


def _scheduled_line(bed: SlotsBed, *flags: str) -> tuple[list[float], list[float], int]:
    """A Schedule trigger every second with a body of 2.5 s on a scope of its own, locked with
    `flags`, firing for SCHEDULE_FOR_S. Once a line has built up, the unrelated workflow is
    called every 0.3 s until every run that drew a ticket has run its body (checked: one at a
    time, in ticket order). Its times while the schedule fired and while the line drained
    after, and the number of runs."""
    tag = uuid.uuid4().hex[:6]
    key, scope = f"qslots_{tag}", f"qslots-{tag}"
    install_scheduled(bed.root, key, scope, *flags)
    began = time.monotonic()
    run_cli(bed.root, "push", "--env", "e2e", "--activate", key)
    firing: list[float] = []
    draining: list[float] = []
    served = threading.Event()

    def probe() -> None:
        time.sleep(5.0)  # a line builds up
        while not served.is_set():
            seconds = _unrelated(bed)
            (firing if time.monotonic() - began < SCHEDULE_FOR_S else draining).append(seconds)
            time.sleep(0.3)

    with ThreadPoolExecutor(1) as pool:
        prober = pool.submit(probe)
        try:
            time.sleep(SCHEDULE_FOR_S)
        finally:
            deactivate(bed.n8n, bed.root, key)
        try:
            # A polled line drains one 2.5 s body at a time after the schedule stops.
            bodies = scheduled_line_served(bed.redis, scope, 180)
        finally:
            served.set()
        prober.result()
    return firing, draining, len(bodies)


def _figures(name: str, firing: list[float], draining: list[float], runs: int) -> str:
    during = firing + draining
    return (
        f"during a {name} line of {runs} runs: max {max(during):.2f} s, median "
        f"{statistics.median(during):.2f} ({len(during)} calls; while the schedule fired "
        f"{' '.join(f'{s:.2f}' for s in firing)}; while the line drained "
        f"{' '.join(f'{s:.2f}' for s in draining)})"
    )


def test_with_two_job_slots_per_worker_a_parked_schedule_leaves_other_workflows_their_slots(
    slots_bed: SlotsBed,
) -> None:
    """Four job slots in the cluster. Polled (the control): the waiters keep the slots and the
    unrelated workflow's job queues behind them. Parked: it answers within 0.5 s of its time
    alone while the line grows; bodies one at a time, in ticket order, every run served."""
    bed = slots_bed
    for _ in range(3):  # the first calls of a new workflow compile its expressions
        _unrelated(bed)
    alone = statistics.median(_unrelated(bed) for _ in range(5))
    polled_firing, polled_draining, polled_runs = _scheduled_line(bed)
    parked_firing, parked_draining, parked_runs = _scheduled_line(bed, "--park")
    figures = (
        f"unrelated alone {alone:.2f} s; "
        f"{_figures('polled', polled_firing, polled_draining, polled_runs)}; "
        f"{_figures('parked', parked_firing, parked_draining, parked_runs)}"
    )
    print(figures)
    assert max(polled_firing) > alone + MARGIN_SECONDS, f"the job slots do not bite: {figures}"
    with pytest.raises(AssertionError):  # the guard below tells a polled line from a parked one
        assert_within_margin(polled_firing, alone, figures)
    assert len(parked_firing) >= 10, f"too few calls to judge: {figures}"
    assert_within_margin(parked_firing, alone, figures)


def test_with_two_job_slots_per_worker_a_parked_webhook_caller_gets_an_empty_200_at_once(
    slots_bed: SlotsBed,
) -> None:
    """What docs/parking.md and the park-webhook-queue-mode rule say, with few job slots too."""
    bed = slots_bed
    assert_parked_callers_answered_empty(bed.n8n, bed.root, bed.redis)
