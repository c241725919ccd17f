"""The lock across n8n queue-mode workers (N8NLOCK_TEST_TOPOLOGY=queue; skipped otherwise).

Main enqueues every webhook execution in Redis (Bull); two `n8n worker` processes run them, so
contending executions of one scope really run in separate processes. Which worker ran an
execution comes from the workers' logs (testbed/queue.py); the critical sections record
their start and end in a Redis list that does not depend on the lock.

The tests that SIGKILL a worker carry the marker `worker_kill`: the dead worker's executions
linger (`running` for ~2 min until Bull declares the job stalled, then error workflows), and a
queue-mode rate-limit test that ran right after them once got no answer in 180 s (issue 23).
`make test` runs them last, in a pytest run of their own: a fresh main, workers and databases.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import redis
import requests

from n8n_lockkit.primitives import engine, keys
from testbed.endpoints import N8nInstance, RedisEndpoint
from testbed.polling import wait_for
from testbed.progress import stderr_progress
from testbed.queue import (
    BULL_LOCK_MS,
    BULL_STALLED_INTERVAL_MS,
    QueueCluster,
    QueueWorker,
)
from testbed.redis_server import start_redis_server
from testbed.runtime import major_version
from tests.e2e.lockbed import (
    LockBed,
    held_lanes,
    init_workspace,
    run_cli,
    stat,
    tickets_drawn,
    wait_until,
)
from tests.e2e.test_lock_engine import install, most_at_once

LOOK = engine.MAX_POLL_MS / 1000  # the longest a waiter sleeps between two looks at the line
GRACE = keys.SKIP_GRACE_SECONDS  # how long a dead waiter's ticket holds up the line
MARGIN = 2.5  # n8n's own overhead per call on a 2-core machine, with room to spare
CALLER_WAIT = 45.0  # how long a test waits for a webhook answer that may never come
# A dead worker's job: its Bull lock lapses (it was renewed up to the last renewal), then the
# stalled check must see it unlocked twice before Bull fails it.
STALLED_DETECTION_SECONDS = (BULL_LOCK_MS + 2 * BULL_STALLED_INTERVAL_MS) / 1000


def bodies(client: redis.Redis, scope: str) -> list[dict[str, Any]]:
    """One {execution, start, end} per critical section of `scope`, in order of start."""
    events = [json.loads(e) for e in client.lrange(f"engine-sink-{scope}", 0, -1)]
    starts = {e["execution"]: e["t"] for e in events if e["event"] == "start"}
    ends = {e["execution"]: e["t"] for e in events if e["event"] == "end"}
    spans = [{"execution": x, "start": starts[x], "end": ends[x]} for x in starts if x in ends]
    return sorted(spans, key=lambda span: span["start"])


def contend(bed: LockBed, key: str, scope: str, total: int, threads: int) -> None:
    with ThreadPoolExecutor(threads) as pool:
        calls = list(
            pool.map(
                lambda i: bed.webhook(key, {"scope": scope, "who": i, "hold_ms": 5}), range(total)
            )
        )
    assert [c.status for c in calls] == [200] * total, [c.body for c in calls if c.status != 200]


def assert_spread_and_exclusive(
    cluster: QueueCluster, spans: list[dict[str, Any]], total: int
) -> None:
    """Both workers ran bodies of the one scope, and never two bodies at once."""
    workers = [cluster.worker_of(span["execution"]) for span in spans]
    ran = Counter(workers)
    # The lock, not luck, kept them apart: the holder changed process many times.
    switches = sum(1 for a, b in itertools.pairwise(workers) if a != b)
    print(f"bodies per worker: {dict(ran)}; the holder changed worker {switches} times")
    assert len(spans) == total
    assert ran[None] == 0, "an execution no worker logged (did main run it?)"
    assert all(ran[w.name] >= total // 10 for w in cluster.workers), ran
    assert switches >= total // 10, f"only {switches} hand-offs between workers"
    assert most_at_once([(s["start"], s["end"]) for s in spans]) == 1


@pytest.fixture(scope="module")
def mutex(queue_cluster: QueueCluster, lockbed: LockBed) -> str:
    return install(lockbed, f"queue_mutex_{uuid.uuid4().hex[:6]}")


def test_200_contended_executions_ran_on_both_workers_and_never_overlapped(
    queue_cluster: QueueCluster, lockbed: LockBed, mutex: str, unique_name: str
) -> None:
    scope = f"queue-{unique_name}"
    started = time.monotonic()
    contend(lockbed, mutex, scope, total=200, threads=20)
    print(f"200 contended executions in {time.monotonic() - started:.1f} s")
    assert_spread_and_exclusive(queue_cluster, bodies(lockbed.redis, scope), 200)
    assert tickets_drawn(lockbed.redis, scope) == 200
    assert held_lanes(lockbed.redis, scope) == []


def _answer_of(url: str, body: dict[str, Any], timeout: float) -> str:
    """What the caller of an execution got: status and body, or that nothing came."""
    try:
        response = requests.post(url, json=body, timeout=timeout)
    except requests.RequestException as exc:
        return f"no answer ({type(exc).__name__})"
    return f"HTTP {response.status_code} {response.text[:120]}"


@dataclass
class Holder:
    """A lock caller that entered its critical section and sleeps there, on `worker`."""

    execution: str
    lock_id: str
    record: dict[str, Any]  # the lane's record while it holds: expires_ms, ...
    worker: QueueWorker
    answer: Future[str]  # what its webhook caller gets in the end


def hold_on_some_worker(
    pool: ThreadPoolExecutor,
    bed: LockBed,
    cluster: QueueCluster,
    scope: str,
    *,
    ttl: int,
    caller_wait: float = CALLER_WAIT,
) -> Holder:
    # A hold under 65 s stays in the worker's memory; a longer Wait would park the execution
    # in the database (status `waiting`) and no worker would be running it.
    body = {"scope": scope, "ttl": ttl, "max_wait": 40, "hold_ms": 50_000}
    answer = pool.submit(_answer_of, bed.n8n.base_url + "/webhook/e2e-lock", body, caller_wait)
    wait_until(lambda: len(_sink_starts(bed, scope)) == 1, 30, "the holder entered")
    start = _sink_starts(bed, scope)[0]
    wait_until(lambda: cluster.worker_of(start["execution"]) is not None, 10, "holder logged")
    worker = next(w for w in cluster.workers if w.name == cluster.worker_of(start["execution"]))
    record = json.loads(bed.redis.get(f"n8n-lock-{scope}:meta:0") or "{}")
    assert record.get("lock_id") == start["lock_id"], record
    return Holder(start["execution"], start["lock_id"], record, worker, answer)


def waiter(pool: ThreadPoolExecutor, bed: LockBed, scope: str, max_wait: int) -> Future[str]:
    body = {"scope": scope, "ttl": 60, "max_wait": max_wait, "hold_ms": 10}
    url = bed.n8n.base_url + "/webhook/e2e-lock"
    return pool.submit(_answer_of, url, body, max_wait + 5)  # n8n answers within max_wait


@pytest.mark.worker_kill
def test_a_worker_killed_mid_hold_frees_the_lock_by_its_ttl_and_blocks_nobody_longer(
    queue_cluster: QueueCluster, lockbed: LockBed, unique_name: str
) -> None:
    """SIGKILL the worker that runs the holder. For the first minute or two n8n still lists
    the execution as `running` and runs no error workflow, so neither the cleanup handler nor
    `reap` frees the lock: a TTL shorter than that does. Waiters on the other worker, in line
    before the kill or arriving after it, enter by the TTL plus one look; a waiter that died
    with the worker holds the line for the skip grace at most."""
    with ThreadPoolExecutor(8) as pool:
        holder = hold_on_some_worker(pool, lockbed, queue_cluster, unique_name, ttl=15)
        before = {w.name: w.executions() for w in queue_cluster.workers}
        answers = [waiter(pool, lockbed, unique_name, max_wait=40) for _ in range(2)]
        wait_until(
            lambda: sum(len(w.executions() - before[w.name]) for w in queue_cluster.workers) >= 2,
            15,
            "both early waiters were picked up by a worker",
        )
        died_in_line = len(holder.worker.executions() - before[holder.worker.name])
        served = 4 - died_in_line
        try:
            holder.worker.crash()
            killed_ms = time.time() * 1000
            time.sleep(3)  # the cleanup handler frees a failed execution's lock within 0.3 s
            assert held_lanes(lockbed.redis, unique_name) == [
                f"n8n-lock-{unique_name}:holder:{holder.record['ticket']}",
                f"n8n-lock-{unique_name}:meta:0",
            ]
            status = _execution_status(lockbed.n8n, holder.execution)
            dry_run = ("reap", "--env", "e2e", "--scope", unique_name, "--dry-run", "-o", "json")
            reap = run_cli(lockbed.root, *dry_run)
            answers += [waiter(pool, lockbed, unique_name, max_wait=40) for _ in range(2)]
            wait_until(lambda: len(_sink_ends(lockbed, unique_name)) == served, 45, "served")
        finally:
            queue_cluster.restart(holder.worker)
        got = [holder.answer.result(), *(a.result() for a in answers)]
    print(
        f"killed {holder.worker.name} running execution {holder.execution} (status then: "
        f"{status}); waiters lost with it: {died_in_line}; callers got: {got}"
    )
    assert status == "running", "n8n noticed the crash at once: update docs/queue-mode.md"
    assert [lk["action"] for lk in json.loads(reap.stdout)["locks"]] == ["kept"], reap.stdout
    expiry = float(holder.record["expires_ms"])
    entries = [start["t"] for start in _sink_starts(lockbed, unique_name)[1:]]
    assert len(entries) == served
    assert entries[0] >= expiry - 1000, "the lock was freed before its TTL: by whom?"
    bound = expiry + died_in_line * GRACE * 1000 + served * LOOK * 1000 + MARGIN * 1000
    assert entries[-1] <= bound, (entries[-1] - expiry, died_in_line)
    assert stat(lockbed, "healed", unique_name) == 0
    assert held_lanes(lockbed.redis, unique_name) == []
    print(f"first waiter entered {entries[0] - killed_ms:.0f} ms after the kill")


@pytest.mark.worker_kill
def test_a_killed_workers_lock_is_freed_by_the_cleanup_handler_once_n8n_fails_the_job(
    queue_cluster: QueueCluster, lockbed: LockBed, unique_name: str
) -> None:
    """With a TTL longer than n8n's stalled-job detection: Bull declares the dead worker's job
    stalled (its lock expires after QUEUE_WORKER_LOCK_DURATION, and a check every
    QUEUE_WORKER_STALLED_INTERVAL sees it twice), main marks the execution `error`, answers
    its caller 500 and runs its error workflow: the cleanup handler frees the lock, and the
    waiter on the other worker enters. Measured: ~117 s with n8n's defaults."""
    if major_version(lockbed.n8n.version) < 2:
        pytest.skip(
            "n8n 1.x does not fail a dead worker's job: Bull re-runs it once from the start on "
            "another worker (maxStalledCount 1), so no error workflow runs for it"
        )
    detection = STALLED_DETECTION_SECONDS
    with ThreadPoolExecutor(4) as pool:
        holder = hold_on_some_worker(
            pool, lockbed, queue_cluster, unique_name, ttl=600, caller_wait=detection + 60
        )
        try:
            holder.worker.crash()
            killed = time.time()
            patient = waiter(pool, lockbed, unique_name, max_wait=int(detection) + 60)
            wait_for(
                lambda: _execution_status(lockbed.n8n, holder.execution) != "running",
                timeout=detection + 30,
                interval=1.0,
                what="n8n gives up on the dead worker's execution",
            )
            failed_after = time.time() - killed
            status = _execution_status(lockbed.n8n, holder.execution)
            answer = patient.result()
        finally:
            queue_cluster.restart(holder.worker)
    print(f"n8n marked execution {holder.execution} {status} {failed_after:.0f} s after the kill")
    assert status == "error"
    assert holder.answer.result().startswith("HTTP 500"), holder.answer.result()
    assert answer.startswith("HTTP 200"), answer
    # Only the cleanup handler counts `healed` (the holder and waiters of the test before, if
    # they died with a worker, reach their own error workflows around now too: no count of
    # the handler's executions tells which is which).
    assert stat(lockbed, "healed", unique_name) == 1
    entered = _sink_starts(lockbed, unique_name)[1]["t"] / 1000
    # After the detection: main marks the execution, enqueues the error workflow, a worker runs
    # the handler, and the waiter looks again (measured up to 129 s with the defaults).
    assert killed + 40 <= entered <= killed + detection + LOOK + MARGIN + 15, entered - killed
    assert held_lanes(lockbed.redis, unique_name) == []


def _sink_starts(bed: LockBed, scope: str) -> list[dict[str, Any]]:
    return sorted((e for e in bed.sink(scope) if e["event"] == "start"), key=lambda e: e["t"])


def _sink_ends(bed: LockBed, scope: str) -> list[dict[str, Any]]:
    return [e for e in bed.sink(scope) if e["event"] == "end"]


def _execution_status(n8n: N8nInstance, execution_id: str) -> str:
    response = requests.get(
        f"{n8n.base_url}/api/v1/executions/{execution_id}",
        headers={"X-N8N-API-KEY": n8n.api_key},
        timeout=30,
    )
    response.raise_for_status()
    return str(response.json().get("status"))


@pytest.fixture(scope="module")
def second_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisEndpoint]:
    with ExitStack() as stack:
        _, endpoint = start_redis_server(
            stack, tmp_path_factory.mktemp("lock-redis"), stderr_progress
        )
        yield endpoint


@pytest.mark.parametrize("where", ["another-db", "another-instance"])
def test_the_lock_redis_can_be_another_than_the_queues(
    queue_cluster: QueueCluster,
    lockbed: LockBed,
    second_redis: RedisEndpoint,
    tmp_path: Path,
    unique_name: str,
    where: str,
) -> None:
    """The primitives' credential points at another Redis database or server than Bull's
    queue (QUEUE_BULL_REDIS_*); exclusion holds across workers, and neither Redis gets the
    other's keys. (The rest of the suite runs with both in one Redis database.)"""
    bull = queue_cluster.bull
    if where == "another-db":
        lock_redis = replace(bull, db=5, url=bull.url.rsplit("/", 1)[0] + "/5")
    else:
        lock_redis = second_redis
    n8n = replace(
        lockbed.n8n,
        redis_host=lock_redis.host_for_n8n,
        redis_port=lock_redis.port_for_n8n,
        redis_db=lock_redis.db,
    )
    root = init_workspace(tmp_path / "ws", n8n, [])
    client = redis.Redis.from_url(lock_redis.url, decode_responses=True)
    try:
        bed = LockBed(root, n8n, client)
        key = install(bed, f"queue_other_redis_{uuid.uuid4().hex[:6]}")
        scope = f"queue-{unique_name}"
        contend(bed, key, scope, total=60, threads=12)
        assert_spread_and_exclusive(queue_cluster, bodies(client, scope), 60)
        assert tickets_drawn(client, scope) == 60
        assert list(client.scan_iter("bull:*")) == [], "the queue's keys in the lock Redis"
        queue_side = redis.Redis.from_url(bull.url, decode_responses=True)
        try:
            assert list(queue_side.scan_iter(f"n8n-lock-{scope}*")) == []
            assert list(queue_side.scan_iter("bull:*")), "Bull is not where the test thinks"
        finally:
            queue_side.close()
    finally:
        client.close()
