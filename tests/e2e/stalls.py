"""Stall harness (a library, no tests here): stop n8n for seconds while callers contend.

A stall is a caller that is alive but does nothing for seconds (notes: stalls.md). Here it is
made with SIGSTOP on an n8n process the test bed started (the main process in single-process
mode, one worker in queue mode) and SIGCONT after N seconds, while C callers hit a webhook
workflow wrapped by `add-lock-to-workflow` (tests/e2e/test_lock_engine.py's body workflow: each
body pushes its start and end to the Redis list `engine-sink-<scope>`, which does not depend on
the lock). What a run gives back: every caller's answer, the bodies' intervals and how many
ran at once, and when each stop really happened.

- Processes: `n8n_main_pid`, `worker_pids`, `n8n_pids`, `descendants`, `process_state`,
  `n8n_log_path`.
- Stops: `stopped` (a context manager) and `stop_for` always send SIGCONT, on an error or a
  KeyboardInterrupt too; an atexit hook continues anything still stopped at interpreter exit.
- Scenario: `contend_with_stalls`.
- Diagnosis: `saved_executions`, `caller_executions`, `failure_of`, `tickets_of`,
  `decisions_of`, `log_excerpt`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import redis
import requests

from testbed.client import saved_executions
from testbed.endpoints import N8nInstance
from testbed.process import ManagedProcess, live_processes
from testbed.queue import QueueCluster
from tests.e2e.lockbed import LockBed
from tests.e2e.test_lock_engine import engine_workflow, install, most_at_once, spans

__all__ = [
    "Answer",
    "Body",
    "Failure",
    "StallRun",
    "Stop",
    "caller_executions",
    "contend_with_stalls",
    "crowded",
    "decisions_of",
    "descendants",
    "engine_workflow",
    "failure_of",
    "install",
    "log_excerpt",
    "most_at_once",
    "n8n_log_path",
    "n8n_main_pid",
    "n8n_pids",
    "never_started",
    "overlapping_pairs",
    "process_state",
    "saved_executions",
    "sink_bodies",
    "skips_of",
    "spans",
    "stop_for",
    "stopped",
    "tickets_of",
    "worker_pids",
]

CALLER_TIMEOUT = 300.0  # seconds a caller waits for its webhook's answer
STOP_CONFIRM_SECONDS = 2.0  # how long to wait for /proc to show a stopped process as stopped
Execution = dict[str, Any]

# ---------------------------------------------------------------------------------------------
# Finding the processes


def port_of(base_url: str) -> int:
    parts = urlsplit(base_url)
    return parts.port or (443 if parts.scheme == "https" else 80)


def process_env(pid: int) -> dict[str, str]:
    """The environment `pid` was started with ({} when it cannot be read)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {name: value for name, _, value in pairs}


def process_cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def process_state(pid: int) -> str:
    """The one-letter state of /proc/<pid>/stat: R, S, D, T (stopped), t, Z; "" when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rpartition(")")[2].split()[0]  # the name in parentheses may hold spaces


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (n8n 2.x: its JS task runner), nearest first."""
    found: list[int] = []
    frontier = [pid]
    while frontier:
        below = [c for p in frontier for c in children(p) if c not in found]
        found += below
        frontier = below
    return found


def _is_n8n(pid: int, command: str, port: int) -> bool:
    argv = process_cmdline(pid)
    is_n8n = any(a.endswith("/n8n") or a == "n8n" for a in argv) and command in argv
    return is_n8n and process_env(pid).get("N8N_PORT") == str(port)


def _managed_main(n8n: N8nInstance) -> ManagedProcess | None:
    """The test bed's record of the n8n main process serving `n8n` (this interpreter only)."""
    port = port_of(n8n.base_url)
    for process in live_processes():
        if process.is_alive() and _is_n8n(process.pid, "start", port):
            return process
    return None


def n8n_main_pid(n8n: N8nInstance) -> int:
    """The OS pid of the n8n main process (`n8n start`) behind `n8n.base_url`.

    The test bed's own record first; else any local process that runs `n8n start` with that
    N8N_PORT (an n8n started by another interpreter on this machine). LookupError otherwise
    (Docker or external n8n: no local process to stop).
    """
    managed = _managed_main(n8n)
    if managed is not None:
        return managed.pid
    port = port_of(n8n.base_url)
    found = [
        int(p.name) for p in Path("/proc").glob("[0-9]*") if _is_n8n(int(p.name), "start", port)
    ]
    if len(found) != 1:
        raise LookupError(f"{len(found)} local `n8n start` processes with N8N_PORT={port}")
    return found[0]


def worker_pids(cluster: QueueCluster) -> dict[str, int]:
    """Queue mode: worker name → pid of its live `n8n worker` process."""
    pids: dict[str, int] = {}
    for worker in cluster.workers:
        if worker.process is None or not worker.process.is_alive():
            raise LookupError(f"{worker.name} is not running")
        pids[worker.name] = worker.process.pid
    return pids


def n8n_pids(n8n: N8nInstance, cluster: QueueCluster | None = None) -> dict[str, int]:
    """ "main" → the main process's pid; in queue mode also each worker's name → its pid."""
    pids = {"main": cluster.main.pid if cluster is not None else n8n_main_pid(n8n)}
    if cluster is not None:
        pids.update(worker_pids(cluster))
    return pids


def n8n_log_path(n8n: N8nInstance) -> Path | None:
    """Where the test bed writes the main process's output (`<workdir>/n8n.log`; for the bench,
    under a TemporaryDirectory `n8nlock-bed-*` that goes when the test bed stops)."""
    managed = _managed_main(n8n)
    return managed.log_path if managed is not None else None


# ---------------------------------------------------------------------------------------------
# Stopping and continuing

_STOPPED: set[int] = set()  # stopped here and not continued yet
_STOPPED_LOCK = threading.Lock()


@atexit.register
def _continue_leftovers() -> None:
    with _STOPPED_LOCK:
        left = sorted(_STOPPED)
        _STOPPED.clear()
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM back while SIGCONT goes out (main thread only: Python runs signal
    handlers there, so a Ctrl-C cannot land between two SIGCONTs)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _continue(pids: Iterable[int]) -> None:
    with _signals_deferred():
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
            with _STOPPED_LOCK:
                _STOPPED.discard(pid)


def _all_stopped(pids: Sequence[int], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        states = [process_state(pid) for pid in pids]
        if all(state in ("T", "t", "") for state in states):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)


@dataclass(frozen=True)
class Stop:
    """One stop as it happened: epoch ms at SIGSTOP and at SIGCONT, and whether /proc showed
    every process stopped (state T) within STOP_CONFIRM_SECONDS."""

    pids: tuple[int, ...]
    planned_seconds: float
    stopped_at_ms: int
    resumed_at_ms: int
    confirmed: bool

    @property
    def seconds(self) -> float:
        return (self.resumed_at_ms - self.stopped_at_ms) / 1000


@dataclass
class _Span:
    stopped_at_ms: int = 0
    confirmed: bool = False


@contextlib.contextmanager
def stopped(pids: int | Sequence[int], *, with_children: bool = False) -> Iterator[list[int]]:
    """SIGSTOP `pids` (and, with `with_children`, everything below them, e.g. n8n's task
    runner) for the duration of the block; SIGCONT on the way out, whatever happens, in
    reverse order. Yields the pids stopped."""
    targets = [pids] if isinstance(pids, int) else list(pids)
    if with_children:
        targets += [c for pid in list(targets) for c in descendants(pid) if c not in targets]
    sent: list[int] = []
    try:
        for pid in targets:
            with _STOPPED_LOCK:
                _STOPPED.add(pid)
            sent.append(pid)
            os.kill(pid, signal.SIGSTOP)
        yield list(sent)
    finally:
        _continue(reversed(sent))


def stop_for(
    pids: int | Sequence[int],
    seconds: float,
    *,
    with_children: bool = False,
    cancel: threading.Event | None = None,
) -> Stop:
    """Stop `pids` for `seconds` (less if `cancel` is set meanwhile), then continue them."""
    span = _Span()
    planned = [pids] if isinstance(pids, int) else list(pids)
    with stopped(planned, with_children=with_children) as sent:
        span.stopped_at_ms = int(time.time() * 1000)
        start = time.monotonic()
        span.confirmed = _all_stopped(sent, STOP_CONFIRM_SECONDS)
        rest = seconds - (time.monotonic() - start)
        if rest > 0:
            (cancel or threading.Event()).wait(rest)
    return Stop(tuple(sent), seconds, span.stopped_at_ms, int(time.time() * 1000), span.confirmed)


# ---------------------------------------------------------------------------------------------
# The contention scenario


@dataclass(frozen=True)
class Answer:
    """What one caller got: HTTP status (0: no answer at all, `body` then names the error),
    the first 2000 characters of the body, and seconds until it came."""

    who: int
    status: int
    body: str
    seconds: float


@dataclass(frozen=True)
class Body:
    """One critical section from the sink list (epoch ms; `end` None if it never ended)."""

    who: int
    execution: str
    start: int
    end: int | None


@dataclass
class StallRun:
    key: str
    scope: str
    hold_ms: int
    schedule: list[float]
    answers: list[Answer]
    bodies: list[Body]
    stops: list[Stop]
    wall_seconds: float
    first_body_seconds: float | None  # from the first call to the first body's start
    started_at_ms: int
    ended_at_ms: int
    stop_errors: list[str] = field(default_factory=list)

    @property
    def intervals(self) -> dict[int, tuple[int, int]]:
        """caller → (start, end) ms of its body, for the bodies that ended."""
        return {b.who: (b.start, b.end) for b in self.bodies if b.end is not None}

    @property
    def peak(self) -> int:
        """The most bodies at once (an unfinished body counts until the run's end)."""
        return most_at_once([(b.start, b.end or self.ended_at_ms) for b in self.bodies])

    @property
    def ok(self) -> int:
        return sum(1 for a in self.answers if a.status == 200)

    def failed(self) -> list[Answer]:
        return [a for a in self.answers if a.status != 200]

    def overlaps(self) -> list[tuple[Body, Body]]:
        return overlapping_pairs(self.bodies, self.ended_at_ms)

    def crowded(self, limit: int) -> list[list[Body]]:
        return crowded(self.bodies, limit, self.ended_at_ms)


def overlapping_pairs(bodies: Sequence[Body], open_end: int) -> list[tuple[Body, Body]]:
    """Pairs of bodies that ran at once (touching ends are not overlap), by start."""
    ordered = sorted(bodies, key=lambda b: b.start)
    pairs = []
    for i, first in enumerate(ordered):
        for second in ordered[i + 1 :]:
            if second.start >= (first.end or open_end):
                break
            pairs.append((first, second))
    return pairs


def crowded(bodies: Sequence[Body], limit: int, open_end: int) -> list[list[Body]]:
    """The moments more than `limit` bodies ran at once: at each body's start, every body
    running then (by start), when there are more than `limit`; a moment contained in the
    one before is left out."""
    moments: list[list[Body]] = []
    for body in sorted(bodies, key=lambda b: b.start):
        running = [b for b in bodies if b.start <= body.start < (b.end or open_end)]
        if len(running) > limit:
            running.sort(key=lambda b: b.start)
            if moments and {b.execution for b in running} <= {b.execution for b in moments[-1]}:
                continue
            moments.append(running)
    return moments


def sink_bodies(client: redis.Redis, scope: str) -> list[Body]:
    """The bodies recorded in `engine-sink-<scope>`, by start (one per execution)."""
    events = [json.loads(e) for e in client.lrange(f"engine-sink-{scope}", 0, -1)]
    starts = {str(e["execution"]): e for e in events if e["event"] == "start"}
    ends = {str(e["execution"]): int(e["t"]) for e in events if e["event"] == "end"}
    bodies = [Body(int(e["who"]), x, int(e["t"]), ends.get(x)) for x, e in starts.items()]
    return sorted(bodies, key=lambda b: b.start)


def _call(base_url: str, key: str, body: dict[str, Any], timeout: float) -> Answer:
    start = time.monotonic()
    try:
        response = requests.post(f"{base_url}/webhook/{key}", json=body, timeout=timeout)
    except requests.RequestException as exc:
        return Answer(int(body["who"]), 0, f"{type(exc).__name__}: {exc}", time.monotonic() - start)
    return Answer(
        int(body["who"]), response.status_code, response.text[:2000], time.monotonic() - start
    )


def _first_body(client: redis.Redis, scope: str, cancel: threading.Event, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not cancel.is_set() and time.monotonic() < deadline:
        if client.llen(f"engine-sink-{scope}") > 0:
            return True
        cancel.wait(0.02)
    return False


@dataclass
class _Schedule:
    stops: list[Stop] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    first_body_ms: int | None = None


def _run_schedule(
    bed: LockBed,
    scope: str,
    pids: Sequence[int],
    schedule: Sequence[float],
    gap_seconds: float,
    with_children: bool,
    cancel: threading.Event,
    first_body_timeout: float,
    out: _Schedule,
) -> None:
    if not _first_body(bed.redis, scope, cancel, first_body_timeout):
        out.errors.append(f"no body started within {first_body_timeout:g} s: no stop applied")
        return
    out.first_body_ms = int(time.time() * 1000)
    for index, seconds in enumerate(schedule):
        if cancel.is_set():
            out.errors.append(f"cancelled before stop {index + 1} of {len(schedule)}")
            return
        if index:
            cancel.wait(gap_seconds)
        try:
            out.stops.append(stop_for(pids, seconds, with_children=with_children, cancel=cancel))
        except OSError as exc:  # e.g. the process is gone
            out.errors.append(f"stop {index + 1}: {type(exc).__name__}: {exc}")
            return


def contend_with_stalls(
    bed: LockBed,
    key: str,
    scope: str,
    *,
    callers: int,
    hold_ms: int,
    schedule: Sequence[float],
    pids: Sequence[int],
    gap_seconds: float = 1.5,
    with_children: bool = False,
    timeout: float = CALLER_TIMEOUT,
    first_body_timeout: float = 120.0,
) -> StallRun:
    """`callers` calls of the wrapped webhook `key` on one `scope`, all fired at once (a thread
    each, `timeout` s), while a background thread, from the moment the first body has
    started, stops `pids` for each duration of `schedule` in turn, running `gap_seconds`
    between two stops. The schedule is cut short (SIGCONT at once) when every caller has
    its answer or on any error or KeyboardInterrupt here."""
    cancel = threading.Event()
    plan = _Schedule()
    stopper = threading.Thread(
        target=_run_schedule,
        args=(bed, scope, list(pids), list(schedule), gap_seconds, with_children, cancel,
              first_body_timeout, plan),
        name=f"stalls-{scope}",
        daemon=True,
    )  # fmt: skip
    started_ms = int(time.time() * 1000)
    started = time.monotonic()
    pool = ThreadPoolExecutor(callers, thread_name_prefix=f"caller-{scope}")
    try:
        stopper.start()
        futures = [
            pool.submit(
                _call, bed.n8n.base_url, key, {"scope": scope, "who": who, "hold_ms": hold_ms},
                timeout,
            )
            for who in range(callers)
        ]  # fmt: skip
        answers = [future.result() for future in futures]
    finally:
        cancel.set()
        stopper.join()  # its own finally has sent SIGCONT by now
        pool.shutdown(wait=False, cancel_futures=True)
    wall = time.monotonic() - started
    ended_ms = int(time.time() * 1000)
    first = None if plan.first_body_ms is None else (plan.first_body_ms - started_ms) / 1000
    return StallRun(
        key=key,
        scope=scope,
        hold_ms=hold_ms,
        schedule=list(schedule),
        answers=answers,
        bodies=sink_bodies(bed.redis, scope),
        stops=plan.stops,
        wall_seconds=wall,
        first_body_seconds=first,
        started_at_ms=started_ms,
        ended_at_ms=ended_ms,
        stop_errors=plan.errors,
    )


# ---------------------------------------------------------------------------------------------
# Diagnosis: the saved executions and n8n's log


def _run_data(execution: Execution) -> dict[str, list[dict[str, Any]]]:
    data = execution.get("data") or {}
    runs: dict[str, list[dict[str, Any]]] = (data.get("resultData") or {}).get("runData") or {}
    return runs


def _outputs(execution: Execution, name: str) -> list[dict[str, Any]]:
    """The first output item of each run of node `name`."""
    found = []
    for run in _run_data(execution).get(name, []):
        main = ((run.get("data") or {}).get("main") or [[]])[0] or []
        if main:
            found.append(main[0].get("json") or {})
    return found


def webhook_body(execution: Execution) -> dict[str, Any]:
    first = _outputs(execution, "Webhook")
    body: dict[str, Any] = (first[0].get("body") or {}) if first else {}
    return body


def never_started(n8n: N8nInstance, workflow_id: str, scope: str) -> dict[int, int | None]:
    """Callers (`who`) on `scope` whose execution n8n created and never began, with when n8n
    marked it started (epoch ms; None if it did not say): still `running`, no node run, the
    Webhook's item still on its stack. Seen on 1.123.81 for calls that arrived as its process
    was stopped: no node of ours ran, so no lock could answer them."""
    found: dict[int, int | None] = {}
    for execution in saved_executions(n8n, workflow_id, status="running"):
        data = execution.get("data") or {}
        if (data.get("resultData") or {}).get("runData"):
            continue
        stack = (data.get("executionData") or {}).get("nodeExecutionStack") or []
        for entry in stack[:1]:
            items = ((entry.get("data") or {}).get("main") or [[]])[0] or []
            body = (items[0].get("json") or {}).get("body") or {} if items else {}
            if body.get("scope") == scope and isinstance(body.get("who"), int):
                found[body["who"]] = _epoch_ms(execution.get("startedAt"))
    return found


def _epoch_ms(stamp: object) -> int | None:
    if not isinstance(stamp, str):
        return None
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def caller_executions(
    n8n: N8nInstance, workflow_id: str, scope: str, *, status: str | None = None
) -> dict[int, Execution]:
    """caller (`who`) → its saved execution on `scope` (with data)."""
    found: dict[int, Execution] = {}
    for execution in saved_executions(n8n, workflow_id, status=status):
        body = webhook_body(execution)
        if body.get("scope") == scope and "who" in body:
            found.setdefault(int(body["who"]), execution)
    return found


def tickets_of(execution: Execution) -> list[int]:
    """Every ticket the execution drew (Lock Take Ticket: more than one after a requeue)."""
    tickets = []
    for output in _outputs(execution, "Lock Take Ticket"):
        tickets += [int(v) for k, v in output.items() if str(k).endswith(":ticket")]
    return tickets


def skips_of(execution: Execution) -> list[dict[str, Any]]:
    """The heads this execution skipped: {ticket (its own), skipped, lane key, at, quiet_since}."""
    found = []
    for decision in decisions_of(execution):
        if decision.get("state") == "skip" and isinstance(decision.get("skip"), dict):
            found.append(
                {
                    "ticket": decision.get("ticket"),
                    "skipped": int(decision["skip"]["value"]),
                    "key": decision["skip"]["key"],
                    "at": decision.get("_at"),
                    "quiet_since": decision.get("quiet_since"),
                }
            )
    return found


def decisions_of(execution: Execution) -> list[dict[str, Any]]:
    """Lock Decide's output of every look, with the look's start time (`_at`, epoch ms)."""
    runs = _run_data(execution).get("Lock Decide", [])
    outputs = _outputs(execution, "Lock Decide")
    return [{**out, "_at": run.get("startTime")} for run, out in zip(runs, outputs, strict=False)]


@dataclass(frozen=True)
class Failure:
    """Why an execution failed, as n8n saved it."""

    execution_id: str
    status: str
    node: str | None
    message: str
    description: str | None
    stack: str | None
    last_node: str | None
    started_at: str | None
    stopped_at: str | None
    node_error: dict[str, Any] | None  # the failing node's run error as saved

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def failure_of(execution: Execution) -> Failure | None:
    """The error an execution ended with (the workflow's, else the first node run error);
    None if it has none."""
    result = (execution.get("data") or {}).get("resultData") or {}
    error: dict[str, Any] = result.get("error") or {}
    node_error: dict[str, Any] | None = None
    failing: str | None = None
    for name, runs in _run_data(execution).items():
        for run in runs:
            if run.get("error"):
                node_error, failing = run["error"], name
    if not error and node_error is None and execution.get("status") != "error":
        return None
    error = error or node_error or {}
    node = error.get("node")
    node_name = node.get("name") if isinstance(node, dict) else failing
    return Failure(
        execution_id=str(execution.get("id")),
        status=str(execution.get("status")),
        node=node_name or failing,
        message=str(error.get("message") or ""),
        description=error.get("description"),
        stack=error.get("stack"),
        last_node=result.get("lastNodeExecuted"),
        started_at=execution.get("startedAt"),
        stopped_at=execution.get("stoppedAt"),
        node_error=node_error,
    )


def log_excerpt(
    log: Path, needles: Iterable[str], *, context: int = 5, limit: int = 200
) -> list[str]:
    """Lines of n8n's log that contain any of `needles` (e.g. an execution id, an error
    message), each with `context` lines around it; at most `limit` lines."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError as exc:
        return [f"(no log: {exc})"]
    wanted = [n for n in needles if n]
    keep: set[int] = set()
    for index, line in enumerate(lines):
        if any(n in line for n in wanted):
            keep.update(range(max(0, index - context), min(len(lines), index + context + 1)))
    picked = [f"{i + 1}: {lines[i]}" for i in sorted(keep)]
    return picked[:limit]
