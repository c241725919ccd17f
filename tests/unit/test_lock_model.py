"""A model check of the lock protocol, on the engine's real nodes.

`tests/model/graph.py` dumps the nodes `engine.acquire` and `engine.release` generate (a mutex
and a semaphore of three lanes); `tests/model/explore.mjs` runs them in a mini n8n
(`n8n_subset.mjs`: Set, If, Split Out, Redis, Wait, Stop and Error, with `$()` answering the
last run of a node) against a simulated Redis, many callers interleaved one atomic step at a
time (a Redis item or an expression node), with random delays, stalls of whole n8n processes
(3, 6, 20 s and random sizes up to the TTL; a stall of 5 s or more may land inside an
expression, which n8n 2.x then stops, so the node fails and runs again), failing Redis
commands and crashes. After every step it checks that the
callers in their body whose lease has not expired are at most one per lane and N in all; at
the end that every caller that did not crash ended in time.

Each test prints a reproducible schedule on failure: `tests/model/run.sh current --lock mutex
--replay '<spec>'` replays it with its whole trace. The number of random
schedules per test is N8NLOCK_MODEL_SCHEDULES (default: enough for about 40 s on two cores).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.model import graph

NODE = shutil.which("node")
EXPLORE = Path(graph.__file__).with_name("explore.mjs")
PREVIOUS = "9cb0f7b"  # the engine before format 3 (one record per lane, skips by a 5 s grace)
WORKERS = 2
SCALE = int(os.environ.get("N8NLOCK_MODEL_SCHEDULES") or 0)

pytestmark = [
    pytest.mark.slow,  # thousands of schedules, explored under Node.js
    pytest.mark.skipif(
        NODE is None,
        reason="node is not on PATH: the model explorer (tests/model/explore.mjs) runs under "
        "Node.js",
    ),
]

Summary = dict[str, Any]


def schedules(default: int) -> int:
    """Random schedules for one test: the default, or more with N8NLOCK_MODEL_SCHEDULES."""
    return max(default, SCALE)


def bases(default: int) -> int:
    """Base schedules of a systematic test (each one is run once per step and stall size)."""
    return max(default, SCALE // 500)


def _run(graphs: Path, args: list[str]) -> Summary:
    assert NODE is not None
    done = subprocess.run(
        [NODE, str(EXPLORE), "--graphs", str(graphs), *args],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    try:
        summary: Summary = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"explore.mjs answered no summary (exit {done.returncode}):\n{done.stderr}")
    if done.returncode not in (0, 1) or (done.returncode == 1) != (summary["violations_total"] > 0):
        pytest.fail(f"explore.mjs exit {done.returncode}:\n{done.stderr}")
    return summary


def explore(graphs: Path, count: int, *args: str, seed: int = 1, workers: int = WORKERS) -> Summary:
    """Run `count` schedules on `workers` processes (seeds `seed`, `seed + 1`, …) and merge."""
    shares = [count // workers + (1 if i < count % workers else 0) for i in range(workers)]
    jobs = [
        [*args, "--schedules", str(share), "--seed", str(seed + i)]
        for i, share in enumerate(shares)
        if share
    ]
    with ThreadPoolExecutor(len(jobs)) as pool:
        parts = list(pool.map(lambda job: _run(graphs, job), jobs))
    return merge(parts)


def merge(parts: list[Summary]) -> Summary:
    out = dict(parts[0])
    for key in ("schedules_run", "steps", "virtual_seconds", "violations_total", "wall_ms"):
        out[key] = sum(p[key] for p in parts)
    for key in ("max_bodies_at_once", "max_idle_gap_ms", "max_wait_ms"):
        out[key] = max(p[key] for p in parts)
    for group in ("outcomes", "events", "violations_by_kind"):
        keys = {k for p in parts for k in p[group]}
        out[group] = {k: sum(p[group].get(k, 0) for p in parts) for k in sorted(keys)}
    out["violations"] = [v for p in parts for v in p["violations"]]
    found = [p["shortest"] for p in parts if p["shortest"]]
    out["shortest"] = min(found, key=lambda v: len(v["spec"]["callers"])) if found else None
    return out


def report(summary: Summary) -> str:
    """A violation as a bug report: what broke, the schedule to replay, the last steps."""
    v = summary["shortest"] or (summary["violations"] or [None])[0]
    what = "debounce" if "debounce" in summary else "lock"  # tests/unit/test_debounce_model.py
    head = (
        f"{summary['violations_total']} of {summary['schedules_run']} schedules broke the {what} "
        f"({summary['violations_by_kind']}); max bodies at once {summary['max_bodies_at_once']}"
    )
    if v is None:
        return head
    deaths = f"; deaths {v['deaths']}" if "deaths" in v else ""
    lines = [
        head,
        f"{v['kind']}: {v['detail']} (at {v['at_ms']} ms, step {v['step']}{deaths})",
        f"replay (its whole trace): tests/model/run.sh current --{what} {v['spec'][what]} "
        f"--replay '{json.dumps(v['spec'])}'",
        "last steps (t ms, caller, process, node, op, key, value):",
    ]
    for row in v["trace"]:
        cells = [str(row.get(k, "")) for k in ("t", "c", "p", "node", "op", "key", "value")]
        lines.append("  " + " | ".join(cells))
    return "\n".join(lines)


def assert_safe(summary: Summary) -> None:
    assert summary["violations_total"] == 0, report(summary)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The nodes this checkout's engine.py generates (built anew on every run)."""
    path = tmp_path_factory.mktemp("model") / "graphs.json"
    path.write_text(json.dumps(graph.graphs()), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def previous_graphs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model") / f"graphs-{PREVIOUS}.json"
    try:
        data = graph.graphs(commit=PREVIOUS)
    except subprocess.CalledProcessError as error:
        pytest.skip(f"cannot build the engine of {PREVIOUS} (git archive: {error.stderr!r})")
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def mutated(graphs: Path, tmp_path: Path, node: str, change: Callable[[str], str]) -> Path:
    """A copy of the graphs whose acquire node `node` (or a debounce's node) has its expression
    text changed (the engine itself is not touched): the model must catch the broken protocol."""
    data = json.loads(graphs.read_text(encoding="utf-8"))
    for lock in data.values():
        for n in lock["acquire" if "acquire" in lock else "chain"]["nodes"]:  # or a debounce's
            if n["name"] == node:
                before = json.dumps(n["parameters"])
                n["parameters"] = json.loads(change(before))
                if json.dumps(n["parameters"]) == before:
                    pytest.fail(f"the mutation of {node} no longer applies to engine.py's text")
    path = tmp_path / "mutated.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


STALLS = ["--stalls", "0-4", "--stall-sizes", "3,6,20,rand,4:7"]


def test_no_schedule_with_stalls_lets_two_callers_hold_a_mutex(graphs: Path) -> None:
    summary = explore(graphs, schedules(1600), "--lock", "mutex", "--callers", "2-6", *STALLS)
    assert_safe(summary)
    assert summary["max_bodies_at_once"] == 1
    # The stalls reached the paths that matter: heads skipped, late entries checked and withdrawn.
    events = summary["events"]
    assert events["skips"] > 0 and events["gone_checks"] > 0 and events["withdrawals"] > 0, events
    assert events["node_retries"] > 0, events  # stalls inside an expression made nodes run again


@pytest.mark.parametrize(("lock", "callers"), [("mutex", "2-6"), ("semaphore", "4-9")])
def test_nodes_that_fail_and_run_again_never_let_two_callers_in(
    graphs: Path, lock: str, callers: str
) -> None:
    """Every Redis item fails with probability 3% (its request lost, or its answer lost after it
    ran), besides the stalls: the nodes run again from their first item (Retry On Fail), a
    ticket may be drawn twice, a record or a skip written twice; an execution whose tries run
    out fails and leaves its keys, as a crash."""
    args = ["--lock", lock, "--callers", callers, *STALLS, "--redis-faults", "0.03"]
    summary = explore(graphs, schedules(400), *args, seed=701)
    assert_safe(summary)
    assert summary["events"]["redis_faults"] > 0 and summary["events"]["node_retries"] > 0


def test_a_semaphore_of_three_never_has_four_holders_under_stalls(graphs: Path) -> None:
    args = ["--lock", "semaphore", "--callers", "4-9", *STALLS]
    summary = explore(graphs, schedules(1000), *args, seed=101)
    assert_safe(summary)
    assert summary["max_bodies_at_once"] == 3, "three lanes never ran at once: the model is idle"
    assert summary["events"]["withdrawals"] > 0, summary["events"]


@pytest.mark.parametrize(
    ("lock", "callers"),
    [("mutex_short_wait", "2-6"), ("semaphore_short_wait", "4-9"), ("mutex_fail_fast", "2-6")],
)
def test_callers_that_give_up_never_let_two_callers_in(
    graphs: Path, lock: str, callers: str
) -> None:
    """A max wait of 10 s (or fail-fast) under stalls: callers give up, leave their `gone`
    mark, and the callers behind skip them at once; a refusal is always the expected one."""
    summary = explore(
        graphs, schedules(360), "--lock", lock, "--callers", callers, *STALLS, seed=151
    )
    assert_safe(summary)
    assert summary["outcomes"]["refused"] > 0, summary["outcomes"]


@pytest.mark.parametrize(
    ("lock", "count", "callers"), [("mutex", 3, "3-4"), ("semaphore", 2, "5-6")]
)
def test_a_stall_at_every_step_of_one_caller_never_breaks_exclusion(
    graphs: Path, lock: str, count: int, callers: str
) -> None:
    """For each of the first three callers of a schedule: stall its process (every caller on
    it) before its step k, for 6 s and for 20 s, for every k of its run without stalls."""
    summary = explore(
        graphs, bases(count), "--lock", lock, "--callers", callers, "--systematic",
        "--victims", "0,1,2", "--stall-sizes", "6,20", seed=201,
    )  # fmt: skip
    assert_safe(summary)
    assert summary["schedules_run"] > 100 * bases(count)


@pytest.mark.parametrize("lock", ["mutex", "semaphore"])
def test_crashed_waiters_do_not_stop_the_line(graphs: Path, lock: str) -> None:
    """A caller that dies anywhere (in line, between two writes, holding) blocks the others at
    most a skip grace and two sleeps (or its lease's TTL, when it held): every other caller
    gets the lock, and the line is never idle longer (`--max-idle-ms auto`)."""
    callers = "2-6" if lock == "mutex" else "4-9"
    args = ["--lock", lock, "--callers", callers, "--crashes", "1-2", "--stalls", "0-0"]
    summary = explore(graphs, schedules(600), *args, "--max-idle-ms", "auto", seed=301)
    assert_safe(summary)
    assert summary["outcomes"]["crashed"] > 0
    assert summary["outcomes"]["refused"] == 0, summary["outcomes"]


@pytest.mark.parametrize(("lock", "callers"), [("mutex", "2-7"), ("semaphore", "4-10")])
def test_callers_healed_by_the_cleanup_handler_are_passed_without_a_grace(
    graphs: Path, lock: str, callers: str
) -> None:
    """With --lock-on-error, n8n's recovery runs the cleanup handler for every execution that
    died (`--heal-after-ms`: 3 s after each death, as one step with the handler's rules): a
    holder's lock is released, a waiter's listed ticket marked gone. Under stalls that is
    still never two holders, and the line idles a grace only for a caller that died before it
    listed its ticket: the listed ones cost no grace (`--max-idle-ms auto`, explore.mjs)."""
    args = ["--lock", lock, "--callers", callers, "--crashes", "1-4", *STALLS]
    summary = explore(
        graphs, schedules(300), *args, "--heal-after-ms", "3000", "--max-idle-ms", "auto",
        seed=901,
    )  # fmt: skip
    assert_safe(summary)
    events = summary["events"]
    assert events["passed_dead_waiters"] > 0 and events["healed_holders"] > 0, events


# n8n killed while c0 holds (its body ends at its death) and c1..c6 wait, each listed in its
# execution index; c7 arrives 9 s later, after n8n's restart.
CRASH_WITH_A_LINE = {
    "lock": "mutex",
    "seed": 1,
    "index": 0,
    "procs": [{"offset": 0, "rate": 1}],
    "callers": [
        {"proc": 0, "arrival": 0, "hold": 3000, "rng": 11},
        *({"proc": 0, "arrival": 200 + 100 * i, "hold": 300, "rng": 100 + i} for i in range(6)),
        {"proc": 0, "arrival": 9000, "hold": 300, "rng": 999},
    ],
    "stalls": [],
    "crashes": [{"caller": 0, "atStep": 20}, *({"caller": i, "atStep": 60} for i in range(1, 7))],
}


def test_after_a_crash_the_cleanup_handler_lets_a_new_caller_in_at_once(graphs: Path) -> None:
    """With the cleanup handler (3 s after the deaths) the holder is released and the six dead
    tickets go in two skips: c7 is in within a second. Without it, c7 waits for the holder's
    lease (TTL 30 s), a grace, and then passes the six dead in one run, not one grace each."""
    replay = ["--lock", "mutex", "--replay", json.dumps(CRASH_WITH_A_LINE)]
    unhealed = _run(graphs, replay)
    healed = _run(graphs, [*replay, "--heal-after-ms", "3000"])
    assert_safe(unhealed)
    assert_safe(healed)
    lock = json.loads(graphs.read_text(encoding="utf-8"))["mutex"]
    grace, lease_left = lock["skip_grace_ms"], lock["ttl_seconds"] * 1000 - 9000
    # The lease, a grace for the expired holder, then the run grace for the six behind it.
    bound = lease_left + grace + 9000 + 2 * lock["max_sleep_ms"]
    assert lease_left < unhealed["max_wait_ms"] < bound, unhealed["max_wait_ms"]
    events = healed["events"]
    assert (events["healed_holders"], events["passed_dead_waiters"]) == (1, 6), (
        "the schedule no longer kills c0 holding and c1..c6 listed: re-tune the crash steps "
        f"of CRASH_WITH_A_LINE (replay it with --trace): {events}"
    )
    assert healed["max_wait_ms"] < grace, healed["max_wait_ms"]


# n8n killed while c1..c6 wait behind c0 (whose body ends normally 3 s in); c7 arrives 9 s in.
DEAD_LINE = {**CRASH_WITH_A_LINE, "crashes": [{"caller": i, "atStep": 60} for i in range(1, 7)]}


def test_a_line_of_dead_waiters_is_passed_in_one_run_not_one_grace_each(
    graphs: Path, tmp_path: Path
) -> None:
    """Measured in n8n 2.41.1 and 1.123.81 before: after a crash with 10 in line, a new caller
    waited 55 s, the dead tickets skipped one 5 s grace after another (n8n's recovery runs no
    error workflow for a waiter that has looked twice, so no cleanup handler marks them). A
    waiter that watched a quiet head for the run grace, with no `alive` beacon between, passes
    the head and the tickets between in one skip: c7 waits a first sleep, the run grace and a
    sleep (its looks while it watches). With the run grace disabled the same schedule takes
    one grace per dead ticket."""
    replay = ["--lock", "mutex", "--replay", json.dumps(DEAD_LINE)]
    summary = _run(graphs, replay)
    assert_safe(summary)
    lock = json.loads(graphs.read_text(encoding="utf-8"))["mutex"]
    run_grace = 9000
    assert summary["max_wait_ms"] < run_grace + 3 * lock["max_sleep_ms"], summary["max_wait_ms"]

    def no_run(text: str) -> str:
        return text.replace(f"out.watch_ms >= {run_grace}", "out.watch_ms >= 9e9")

    sequential = _run(mutated(graphs, tmp_path, "Lock Decide", no_run), replay)
    assert sequential["max_wait_ms"] > 5 * lock["skip_grace_ms"], sequential["max_wait_ms"]


def test_without_stalls_every_caller_gets_the_lock_and_the_line_never_idles(graphs: Path) -> None:
    args = ["--lock", "mutex", "--stalls", "0-0", "--redis-stalls", "0", "--max-idle-ms", "auto"]
    summary = explore(graphs, schedules(400), *args, seed=401)
    assert_safe(summary)
    assert summary["outcomes"]["refused"] == 0
    assert summary["events"]["skips"] == 0 and summary["events"]["withdrawals"] == 0


def test_the_previous_engine_lets_two_callers_hold_a_mutex_under_6s_stalls(
    previous_graphs: Path,
) -> None:
    """The model can fail: the engine of 9cb0f7b (a caller skipped after 5 s of quiet still
    enters when it stalled between its decision and its record) shows two holders, as the
    SIGSTOP runs of the stalls notes (stalls.md) did on a real n8n."""
    args = ["--lock", "mutex", "--callers", "2-6", "--stalls", "1-3", "--stall-sizes", "6"]
    summary = explore(
        previous_graphs, schedules(1000), *args, "--stop-after", "1", seed=501, workers=1
    )
    assert summary["violations_by_kind"].get("two holders in one lane", 0) > 0, summary
    assert summary["max_bodies_at_once"] == 2


def test_a_verify_that_trusts_a_late_record_lets_two_callers_hold(
    graphs: Path, tmp_path: Path
) -> None:
    """Lock Verify skips the `gone` read within SAFE_ENTRY_MS of Lock Context; made to trust
    records written up to 9 s late (past the 5 s skip grace), the model finds two holders."""
    broken = mutated(graphs, tmp_path, "Lock Verify", lambda s: s.replace(">= 4500", ">= 9000"))
    args = ["--lock", "mutex", *STALLS, "--stop-after", "1"]
    summary = explore(broken, schedules(2000), *args, seed=601, workers=1)
    assert summary["violations_by_kind"].get("two holders in one lane", 0) > 0, summary


# Three processes: c0 decides to enter and stalls before its record; c1 and c2 watch it quiet;
# c2 skips it and stalls between its two writes; c1 (the new head) enters; c0 wakes, writes its
# record and reads its `gone` mark.
def _stall(caller: int, node: str, item: int, occurrence: int, ms: int) -> dict[str, Any]:
    site = {"atNode": node, "item": item, "occurrence": occurrence}
    return {"caller": caller, **site, "ms": ms, "whole": "process"}


SKIP_BETWEEN_WRITES = {
    "lock": "mutex",
    "seed": 1,
    "index": 0,
    "procs": [{"offset": 0, "rate": 1}] * 3,
    "callers": [
        {"proc": 0, "arrival": 0, "hold": 300, "rng": 11},
        {"proc": 1, "arrival": 100, "hold": 4000, "rng": 12},
        {"proc": 2, "arrival": 200, "hold": 300, "rng": 13},
    ],
    "stalls": [
        _stall(0, "Lock Hold", 0, 0, 9000),  # before its record: c0 writes it late
        _stall(1, "Lock Decide", 0, 3, 6500),  # so that c2, not c1, skips c0
        _stall(2, "Lock Skip Head", 1, 0, 10000),  # between the skip's two writes
    ],
    "crashes": [],
}


def test_a_skip_marks_the_head_gone_before_it_advances_served(graphs: Path, tmp_path: Path) -> None:
    """With the skip's two writes swapped (`served` first), the late head's check runs between
    them, finds no mark and enters beside the new head; in the engine's order it withdraws."""
    replay = ["--lock", "mutex", "--replay", json.dumps(SKIP_BETWEEN_WRITES)]
    assert_safe(_run(graphs, replay))

    def swap(text: str) -> str:
        gone = "{ key: `${ctx.base}:gone:${head}`, type: 'string', value: '1', ttl: ctx.gone_ttl },"
        served = "{ key: `${ctx.base}:served:${look.lane}`, type: 'string', value: String(head),"
        served += " ttl: 0 },"
        gone, served = json.dumps(gone)[1:-1], json.dumps(served)[1:-1]
        return text.replace(gone, "\0").replace(served, gone).replace("\0", served)

    broken = _run(mutated(graphs, tmp_path, "Lock Decide", swap), replay)
    assert broken["violations_by_kind"].get("two holders in one lane") == 1, (
        "the swapped skip no longer shows two holders on this schedule: if the engine's timings"
        " changed, re-tune SKIP_BETWEEN_WRITES (replay it with --replay to see its trace)"
    )


# A dead waiter (c1, ticket 2); c2 skips it and its process stops for 20 s between the skip's
# two writes, while the others skip c1 and c2 and serve tickets 4 to 10; then c2 writes
# `served` = 2, and c10..c14, arriving meanwhile, have to skip tickets 3 to 10 again, each
# after the full grace (their records are gone and they left no `gone` mark).
LATE_SKIP = {
    "lock": "mutex",
    "seed": 1,
    "index": 0,
    "procs": [{"offset": 0, "rate": 1}] * 2,
    "callers": [
        {"proc": 0, "arrival": 0, "hold": 300, "rng": 101},
        {"proc": 0, "arrival": 200, "hold": 300, "rng": 102},
        {"proc": 1, "arrival": 400, "hold": 300, "rng": 103},
        *({"proc": 0, "arrival": 400 + 100 * i, "hold": 200, "rng": 101 + i} for i in range(3, 10)),
        *({"proc": 0, "arrival": 26000 + 100 * i, "hold": 200, "rng": 111 + i} for i in range(5)),
    ],
    "stalls": [_stall(2, "Lock Skip Head", 1, 0, 20000)],
    "crashes": [{"caller": 1, "atStep": 10}],
}


def test_a_skip_written_late_does_not_send_the_line_back(graphs: Path) -> None:
    """Found by this model: a skip's `served` write that lands 20 s late set the lane back,
    and every ticket served meanwhile was skipped again after the full grace (the line sat
    idle 40+ s). Released records now stay a minute, and a head whose record says released on
    two looks in a row is skipped at once."""
    replay = ["--lock", "mutex", "--replay", json.dumps(LATE_SKIP), "--max-idle-ms", "auto"]
    assert_safe(_run(graphs, replay))


# ---------------------------------------------------------------------------------------------
# Parking (add-lock-to-workflow --park): the same engine, whose far waiters park in a Wait "On
# Webhook Call" and are woken by the waiter ahead (explore.mjs models the park, the resume
# n8n answers 200 / 409 / 404, and a resumed run that queues for a slot: --resume-delays).
# 8 s resume delays are longer than the 5 s skip grace: a woken waiter still queueing for a
# slot must not be skipped as dead.
SLOW_RESUMES = ["--resume-delays", "250,8000"]


@pytest.mark.parametrize(("lock", "callers"), [("mutex_park", "2-7"), ("semaphore_park", "4-10")])
def test_parked_waiters_under_stalls_and_slow_resumes_never_let_two_in(
    graphs: Path, lock: str, callers: str
) -> None:
    args = ["--lock", lock, "--callers", callers, *STALLS, *SLOW_RESUMES, "--redis-faults", "0.02"]
    summary = explore(graphs, schedules(600), *args, seed=801)
    assert_safe(summary)
    events = summary["events"]
    assert events["parks"] > 0 and events["resumes"] > 0, events
    # a resume that came before the park, or a second one, was refused (409) and harmless
    assert events["resumes_refused"] > 0, events


def test_a_parked_line_without_stalls_never_idles_and_nobody_waits_for_a_backstop(
    graphs: Path,
) -> None:
    args = ["--lock", "mutex_park", "--stalls", "0-0", "--redis-stalls", "0"]
    summary = explore(graphs, schedules(400), *args, "--max-idle-ms", "auto", seed=811)
    assert_safe(summary)
    assert summary["outcomes"]["refused"] == 0
    assert summary["events"]["parks"] > 0
    assert summary["events"]["backstops"] == 0, summary["events"]


@pytest.mark.parametrize("lock", ["mutex_park", "semaphore_park"])
def test_callers_that_die_in_a_parked_line_cost_the_line_a_backstop_at_most(
    graphs: Path, lock: str
) -> None:
    """A waiter that dies parked, or a waker that dies before it wakes the one behind: the
    line moves again within a grace, a sleep and the park's backstop per dead caller."""
    args = [
        "--lock",
        lock,
        "--callers",
        "3-8",
        "--crashes",
        "1-2",
        "--stalls",
        "0-0",
        *SLOW_RESUMES,
    ]
    summary = explore(graphs, schedules(400), *args, "--max-idle-ms", "auto", seed=821)
    assert_safe(summary)
    assert summary["events"]["backstops"] > 0, summary["events"]


def test_a_release_that_does_not_wake_the_parked_waiter_two_behind_leaves_the_line_idle(
    graphs: Path, tmp_path: Path
) -> None:
    """The release wakes the waiter two tickets behind it when it parked (Lock Wake Read →
    Lock Wake Next): it is second in line then. Without that wake the model finds the line
    idle until the backstop."""
    data = json.loads(graphs.read_text(encoding="utf-8"))
    due = next(n for n in data["mutex_park"]["release"]["nodes"] if n["name"] == "Lock Wake Due?")
    condition = due["parameters"]["conditions"]["conditions"][0]
    if "listing" not in str(condition["leftValue"]):
        pytest.fail("the mutation of Lock Wake Due? no longer applies to its condition")
    condition["leftValue"] = "={{ false }}"
    broken = tmp_path / "mutated.json"
    broken.write_text(json.dumps(data), encoding="utf-8")
    args = ["--lock", "mutex_park", "--stalls", "0-0", "--redis-stalls", "0", "--stop-after", "1"]
    summary = explore(broken, schedules(400), *args, "--max-idle-ms", "auto", seed=811, workers=1)
    assert summary["violations_by_kind"].get("line blocked", 0) > 0, summary
