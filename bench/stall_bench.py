"""Stall bench: callers contend for one scope while n8n stops (SIGSTOP) for seconds at a time.

What each caller got and how many bodies ran at once. Not a test.

    .venv/bin/python -m bench.stall_bench [--quick] [--only a,b,c,d] [--gap 1.5]
        [--n8n-log-level info] [--n8n-env NAME=VALUE ...] [--results bench/results]
        [--keep-log PATH]

On n8n 2.41.1, one process (testbed), the body workflow of tests/e2e/test_lock_engine.py
wrapped by this checkout's `add-lock-to-workflow` (TTL 60 s, max wait 120 s), one run per
scenario on a scope of its own; the stops start once the first body has started, with `--gap`
seconds of running between two stops (tests/e2e/stalls.py):
- a: mutex, 40 callers, hold 50 ms, stops 6 s × 5;
- b: mutex, 60 callers, hold 300 ms, stops 6, 6, 6, 20, 20 s;
- c: semaphore (`--max-concurrent 3`), 60 callers, hold 1000 ms, stops 6, 6, 6, 20, 20 s;
- d: control: mutex, 40 callers, hold 50 ms, stops 3 s × 5 (below the 5 s skip grace).
Per scenario: callers answered 200 / total, the other answers (status, first 200 characters),
the most bodies at once (≤ 1 for a mutex, ≤ 3 for the semaphore) and the wall time; then,
for every caller that did not get 200, its saved execution (node, message, description,
stack) and the lines of n8n's log that name it, and for every pair of bodies that overlapped,
the tickets and decisions of both. Writes `<results>/stall_bench-<date>[-quick].json` and
`.md`; keeps n8n's log (the test bed's temporary directory goes at the end) at `--keep-log`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import redis

import testbed.n8n_process as n8n_process
from testbed.session import running_testbed
from testbed.settings import ENV_TOPOLOGY
from tests.e2e.lockbed import API_KEY_VARIABLE, LockBed, init_workspace
from tests.e2e.stalls import (
    Body,
    Failure,
    StallRun,
    caller_executions,
    contend_with_stalls,
    decisions_of,
    failure_of,
    install,
    log_excerpt,
    n8n_log_path,
    n8n_main_pid,
    process_state,
    skips_of,
    tickets_of,
)

VERSION = "2.41.1"
RESULTS = Path(__file__).parent / "results"
WARM_UP = 5  # uncontended calls per workflow first: n8n compiles and caches on first use
Figures = dict[str, Any]


@dataclass(frozen=True)
class Scenario:
    name: str
    lock: str  # "mutex" or "semaphore"
    callers: int
    hold_ms: int
    stops: tuple[float, ...]
    note: str = ""

    @property
    def limit(self) -> int:
        return 3 if self.lock == "semaphore" else 1


FULL = [
    Scenario("a", "mutex", 40, 50, (6, 6, 6, 6, 6)),
    Scenario("b", "mutex", 60, 300, (6, 6, 6, 20, 20)),
    Scenario("c", "semaphore", 60, 1000, (6, 6, 6, 20, 20)),
    Scenario("d", "mutex", 40, 50, (3, 3, 3, 3, 3), "control: stops below the skip grace"),
]
QUICK = [
    Scenario("a", "mutex", 12, 50, (6, 6)),
    Scenario("b", "mutex", 16, 300, (6, 20)),
    Scenario("c", "semaphore", 16, 1000, (6, 20)),
    Scenario("d", "mutex", 12, 50, (3, 3), "control: stops below the skip grace"),
]


def progress(message: str) -> None:
    print(f"[stall_bench] {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def n8n_settings_added(extra: dict[str, str]) -> Iterator[None]:
    """Start the test bed's n8n with `extra` settings (N8N_LOG_LEVEL, ...): n8n_env drops
    inherited N8N_* variables, so they go in through the settings it adds (testbed is
    not changed; the wrapper is undone on exit)."""
    original = n8n_process.n8n_settings

    def settings(version: str) -> dict[str, str]:
        return {**original(version), **extra}

    n8n_process.n8n_settings = settings
    try:
        yield
    finally:
        n8n_process.n8n_settings = original


def warm_up(bed: LockBed, key: str, token: str) -> None:
    for index in range(WARM_UP):
        call = bed.webhook(key, {"scope": f"warm-{token}", "who": index, "hold_ms": 0})
        if call.status != 200:
            raise SystemExit(f"warm-up call of {key} failed: {call.status} {call.body}")


def wait_saved(bed: LockBed, workflow_id: str, scope: str, count: int) -> dict[int, Any]:
    """caller → its saved execution, once all `count` are saved (or after 60 s)."""
    deadline = time.monotonic() + 60
    while True:
        found = caller_executions(bed.n8n, workflow_id, scope)
        finished = {w: e for w, e in found.items() if e.get("stoppedAt")}
        if len(finished) >= count or time.monotonic() > deadline:
            return found
        time.sleep(1)


def describe(execution: dict[str, Any]) -> Figures:
    """The lock's view of one execution: its tickets, each look's decision, when it wrote
    its record (Lock Hold) and when its body started."""
    looks = []
    for decision in decisions_of(execution):
        looks.append(
            {
                k: decision.get(k)
                for k in ("_at", "state", "ticket", "head", "served", "quiet_since", "skip")
                if decision.get(k) is not None
            }
        )
    result = (execution.get("data") or {}).get("resultData") or {}
    runs = result.get("runData") or {}
    entered = [look["ticket"] for look in looks if look.get("state") == "enter"]
    return {
        "execution": str(execution.get("id")),
        "status": execution.get("status"),
        "last_node": result.get("lastNodeExecuted"),
        "lock_release_runs": len(runs.get("Lock Release", [])),
        "tickets": tickets_of(execution),
        "entered_with": entered[-1] if entered else None,
        "looks": looks,
        "lock_hold_started": [r.get("startTime") for r in runs.get("Lock Hold", [])],
        "mark_start": [r.get("startTime") for r in runs.get("Mark Start", [])],
        # Format 3: how often it read its `gone` mark after a late record, and withdrew.
        "late_checks": len(runs.get("Lock Check Skipped", [])),
        "withdrawals": len(runs.get("Lock Withdrawn", [])),
    }


def lock_summary(locks: dict[int, Figures]) -> Figures:
    """What the lock did across the callers: tickets drawn, late checks, withdrawals."""
    return {
        "callers": len(locks),
        "callers_with_more_than_one_ticket": sum(
            1 for v in locks.values() if len(v["tickets"]) > 1
        ),
        "late_checks": sum(v["late_checks"] for v in locks.values()),
        "withdrawals": sum(v["withdrawals"] for v in locks.values()),
        "looks": sum(len(v["looks"]) for v in locks.values()),
    }


def stops_between(stops: Sequence[Figures], start: float, end: float) -> list[str]:
    return [
        f"{s['seconds']:.1f} s stop {s['stopped_at_ms']}→{s['resumed_at_ms']}"
        for s in stops
        if s["stopped_at_ms"] < end and s["resumed_at_ms"] > start
    ]


def skip_story(ticket: int | None, skips: Sequence[Figures], stops: Sequence[Figures]) -> list[str]:
    """Who skipped `ticket`, after how much "quiet", and which stops fell in that quiet."""
    told = []
    for skip in skips:
        if ticket is None or skip["skipped"] != ticket:
            continue
        quiet = skip["at"] - skip["quiet_since"] if skip.get("quiet_since") else None
        within = stops_between(stops, skip.get("quiet_since") or skip["at"], skip["at"])
        told.append(
            f"ticket {ticket} skipped by caller {skip['who']} (ticket {skip['ticket']}) at "
            f"{skip['at']} after {quiet} ms of quiet, which held {within or 'no stop'}"
        )
    return told


def failure_timing(failure: Failure | None, stops: Sequence[Figures]) -> str | None:
    """When the failing node's error was raised, against the stops (epoch ms)."""
    at = ((failure.node_error or {}) if failure else {}).get("timestamp")
    if not isinstance(at, int):
        return None
    for stop in stops:
        if stop["stopped_at_ms"] <= at < stop["resumed_at_ms"]:
            return (
                f"raised at {at}, during the stop {stop['stopped_at_ms']}→{stop['resumed_at_ms']}"
            )
    before = [s for s in stops if s["resumed_at_ms"] <= at]
    if not before:
        return f"raised at {at}, before the first stop"
    last = before[-1]
    return (
        f"raised at {at}, {at - last['resumed_at_ms']} ms after the SIGCONT that ended the "
        f"{last['seconds']:.1f} s stop {last['stopped_at_ms']}→{last['resumed_at_ms']}"
    )


def violations(
    run: StallRun, scenario: Scenario, locks: dict[int, Figures]
) -> list[tuple[Body, ...]]:
    """Bodies that must not have run together: for a mutex every overlapping pair; for a
    semaphore every overlapping pair in one lane (entering ticket mod N), and every moment
    with more than N bodies."""
    if scenario.limit == 1:
        return list(run.overlaps())

    def lane(body: Body) -> int | None:
        ticket = locks.get(body.who, {}).get("entered_with")
        return None if ticket is None else int(ticket) % scenario.limit

    same = [p for p in run.overlaps() if lane(p[0]) is not None and lane(p[0]) == lane(p[1])]
    return [*same, *(tuple(moment) for moment in run.crowded(scenario.limit))]


def diagnose(
    bed: LockBed, workflow_id: str, run: StallRun, scenario: Scenario, stops: list[Figures]
) -> Figures:
    """Every non-200 caller's saved failure, and the tickets, skips and looks of the bodies
    that ran together when they must not."""
    log = n8n_log_path(bed.n8n)
    executions = wait_saved(bed, workflow_id, run.scope, len(run.answers))
    locks = {who: describe(e) for who, e in executions.items()}
    skips = [{"who": who, **skip} for who, e in executions.items() for skip in skips_of(e)]
    failures = []
    for answer in run.failed():
        execution = executions.get(answer.who)
        entry: Figures = {"who": answer.who, "status": answer.status, "body": answer.body[:200]}
        if execution is None:
            entry["execution"] = None
        else:
            failure = failure_of(execution)
            entry["failure"] = failure.as_dict() if failure else None
            entry["lock"] = locks[answer.who]
            entry["timing"] = failure_timing(failure, stops)
            if log is not None:
                needles = [f"execution {execution['id']}", f'"executionId":"{execution["id"]}"',
                           f"executionId: {execution['id']}"]  # fmt: skip
                if failure and failure.message:
                    needles.append(failure.message[:80])
                entry["log"] = log_excerpt(log, needles, context=3, limit=80)
        failures.append(entry)
    found: list[Figures] = []
    for group in violations(run, scenario, locks):
        story = [
            line
            for body in group
            for line in skip_story(locks.get(body.who, {}).get("entered_with"), skips, stops)
        ]
        found.append(
            {
                "bodies": [
                    asdict(b)
                    | {
                        "ticket": locks.get(b.who, {}).get("entered_with"),
                        "tickets": locks.get(b.who, {}).get("tickets"),
                    }
                    for b in group
                ],
                "skips": story,
            }
        )
    # Every caller's lock story only where something went wrong; otherwise the totals.
    involved = {int(f["who"]) for f in failures}
    for together in found:
        involved |= {int(body["who"]) for body in together["bodies"]}
    return {
        "failures": failures,
        "violations": found,
        "skips": skips,
        "lock_summary": lock_summary(locks),
        "locks": {who: v for who, v in locks.items() if who in involved},
    }


def run_scenario(
    bed: LockBed, scenario: Scenario, key: str, token: str, args: argparse.Namespace
) -> Figures:
    pid = n8n_main_pid(bed.n8n)
    scope = f"stall-{scenario.name}-{token}"
    progress(
        f"{scenario.name}: {scenario.lock}, {scenario.callers} callers, hold {scenario.hold_ms} "
        f"ms, stops [{stops_text(scenario.stops)}] of n8n pid {pid} (state {process_state(pid)})"
    )
    run = contend_with_stalls(
        bed,
        key,
        scope,
        callers=scenario.callers,
        hold_ms=scenario.hold_ms,
        schedule=scenario.stops,
        pids=[pid],
        gap_seconds=args.gap,
        timeout=args.caller_timeout,
    )
    stops = [asdict(stop) | {"seconds": stop.seconds} for stop in run.stops]
    diagnosis = diagnose(bed, bed.workflow_id(key), run, scenario, stops)
    others = Counter(f"{a.status} {a.body[:200]}" for a in run.failed())
    figures: Figures = {
        "scenario": asdict(scenario),
        "scope": scope,
        "workflow": key,
        "pid": pid,
        "answered_200": run.ok,
        "callers": scenario.callers,
        "non_200": [{"answer": text, "count": n} for text, n in others.items()],
        "peak": run.peak,
        "peak_ok": run.peak <= scenario.limit,
        "wall_seconds": run.wall_seconds,
        "first_body_seconds": run.first_body_seconds,
        "stops": stops,
        "stop_errors": run.stop_errors,
        "bodies": [asdict(b) for b in run.bodies],
        "answers": [asdict(a) | {"body": a.body[:200]} for a in run.answers],
        "overlapping_pairs": len(run.overlaps()),
        **diagnosis,
    }
    progress(
        f"{scenario.name}: {run.ok}/{scenario.callers} answered 200, peak {run.peak}, "
        f"{len(diagnosis['violations'])} violations, wall {run.wall_seconds:.1f} s, stops "
        + ", ".join(
            f"{s.seconds:.1f} s{'' if s.confirmed else ' (not confirmed)'}" for s in run.stops
        )
    )
    return figures


def bench(args: argparse.Namespace, scenarios: Sequence[Scenario]) -> tuple[Figures, Path | None]:
    os.environ.pop(ENV_TOPOLOGY, None)  # one n8n process
    with (
        n8n_settings_added(n8n_extra(args)),
        running_testbed(VERSION) as (n8n, redis_endpoint),
        tempfile.TemporaryDirectory(prefix="stall-bench-") as tmp,
    ):
        os.environ[API_KEY_VARIABLE] = n8n.api_key
        root = init_workspace(Path(tmp) / "ws", n8n, [])
        client = redis.Redis.from_url(redis_endpoint.url, decode_responses=True)
        bed = LockBed(root, n8n, client, poll=1.0)
        token = uuid.uuid4().hex[:6]
        keys = {}
        if any(s.lock == "mutex" for s in scenarios):
            keys["mutex"] = install(bed, f"stall_mutex_{token}")
        if any(s.lock == "semaphore" for s in scenarios):
            keys["semaphore"] = install(bed, f"stall_sem_{token}", "--max-concurrent", "3")
        for key in keys.values():
            warm_up(bed, key, token)
        log = n8n_log_path(n8n)
        progress(f"n8n main pid {n8n_main_pid(n8n)}, log {log}")
        results = [run_scenario(bed, s, keys[s.lock], token, args) for s in scenarios]
        kept = None
        if log is not None and args.keep_log is not None:
            shutil.copyfile(log, args.keep_log)
            kept = args.keep_log
        client.close()
        return {"n8n": VERSION, "n8n_log": str(log), "scenarios": results}, kept


def n8n_extra(args: argparse.Namespace) -> dict[str, str]:
    extra = {"N8N_LOG_LEVEL": args.n8n_log_level}
    for item in args.n8n_env:
        name, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--n8n-env {item!r}: expected NAME=VALUE")
        extra[name] = value
    return extra


def stops_text(stops: Sequence[float]) -> str:
    if len(set(stops)) == 1:
        return f"{stops[0]:g} s × {len(stops)}"
    return ", ".join(f"{s:g}" for s in stops) + " s"


def table(result: Figures) -> list[str]:
    lines = [
        "| scenario | lock | callers, hold | stops | answered 200 | non-200 answers "
        "| peak bodies at once | late records checked / withdrawn | wall |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for f in result["scenarios"]:
        s = f["scenario"]
        lock = "semaphore N=3" if s["lock"] == "semaphore" else "mutex"
        limit = 3 if s["lock"] == "semaphore" else 1
        others = "; ".join(
            f"{o['count']} × `{o['answer'].replace('|', '/')}`" for o in f["non_200"]
        )
        mark = "✓" if f["peak_ok"] else "✗"
        summary = f.get("lock_summary") or {}
        late = f"{summary.get('late_checks', '–')} / {summary.get('withdrawals', '–')}"
        name = s["name"] + (f" ({s['note']})" if s["note"] else "")
        lines.append(
            f"| {name} | {lock} | {s['callers']}, {s['hold_ms']} ms | {stops_text(s['stops'])} "
            f"| {f['answered_200']}/{f['callers']} | {others or 'none'} "
            f"| {f['peak']} (≤ {limit}) {mark} | {late} | {f['wall_seconds']:.1f} s |"
        )
    return lines


def details(result: Figures) -> list[str]:
    """The diagnosis, readable: each failure, and each group of bodies that ran together when
    they must not, with who skipped whom."""
    lines: list[str] = []
    for f in result["scenarios"]:
        name = f["scenario"]["name"]
        stops = ", ".join(
            f"{s['stopped_at_ms']}→{s['resumed_at_ms']} ({s['seconds']:.1f} s)" for s in f["stops"]
        )
        lines.append(f"### {name}: stops (epoch ms) {stops}")
        lines += [f"- stop schedule: {e}" for e in f["stop_errors"]]
        for failure in f["failures"]:
            saved = failure.get("failure") or {}
            lock = failure.get("lock") or {}
            lines.append(
                f"- caller {failure['who']}: HTTP {failure['status']} `{failure['body']}`; "
                f"execution {lock.get('execution')}, node **{saved.get('node')}**: "
                f"`{saved.get('message')}` ({saved.get('description')}); tickets "
                f"{lock.get('tickets')}; parameter "
                f"{((saved.get('node_error') or {}).get('context') or {}).get('parameter')}; "
                f"{failure.get('timing')}"
            )
            lines += [f"  - n8n log: `{line}`" for line in failure.get("log", [])[-6:]]
        for group in f["violations"]:
            bodies = ", ".join(
                f"caller {b['who']} (execution {b['execution']}, ticket {b['ticket']}, body "
                f"{b['start']}–{b['end']})"
                for b in group["bodies"]
            )
            lines.append(f"- together: {bodies}")
            lines += [f"  - {story}" for story in group["skips"]]
        lines.append("")
    return lines


def settings_text(args: argparse.Namespace) -> str:
    extra = [f"{k}={v}" for k, v in n8n_extra(args).items() if k != "N8N_LOG_LEVEL"]
    return f" ({', '.join(extra)})" if extra else ""


def command(argv: Sequence[str]) -> str:
    return " ".join([".venv/bin/python -m bench.stall_bench", *argv])


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer callers and stops")
    parser.add_argument("--only", default="", help="scenario names, commas (default: all)")
    parser.add_argument("--gap", type=float, default=1.5, help="seconds running between stops")
    parser.add_argument("--caller-timeout", type=float, default=300.0)
    parser.add_argument("--n8n-log-level", default="info", help="N8N_LOG_LEVEL for n8n")
    parser.add_argument(
        "--n8n-env", action="append", default=[], metavar="NAME=VALUE",
        help="another n8n setting, e.g. N8N_EXPRESSION_ENGINE_TIMEOUT=60000 (repeatable)",
    )  # fmt: skip
    parser.add_argument("--results", type=Path, default=RESULTS, help="where JSON and md go")
    parser.add_argument("--keep-log", type=Path, help="copy n8n's log here before it goes")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    if args.keep_log is None:
        args.keep_log = Path(tempfile.gettempdir()) / f"stall_bench-n8n-{os.getpid()}.log"
    wanted = {name.strip() for name in args.only.split(",") if name.strip()}
    scenarios = [s for s in (QUICK if args.quick else FULL) if not wanted or s.name in wanted]
    started = time.monotonic()
    result, kept = bench(args, scenarios)
    day = datetime.date.today().isoformat()
    header = (
        f"Measured {day} on {os.cpu_count()} cores with `{command(argv)}`: n8n {VERSION}, one "
        f"process{settings_text(args)}, stopped with SIGSTOP/SIGCONT ({args.gap:g} s running "
        f"between stops, from the first body's start); TTL 60 s, max wait 120 s. Peak: the "
        f"most bodies at once in the sink list (✓ within the lock's limit)."
    )
    text = "\n".join([header, "", *table(result), "", *details(result)])
    print()
    print(text)
    print(f"n8n log kept at {kept}; total {time.monotonic() - started:.0f} s")
    args.results.mkdir(parents=True, exist_ok=True)
    stem = f"stall_bench-{day}" + ("-quick" if args.quick else "")
    document = {"command": command(argv), "arguments": vars(args), "n8n_log_kept": kept, **result}
    (args.results / f"{stem}.json").write_text(json.dumps(document, indent=2, default=str) + "\n")
    (args.results / f"{stem}.md").write_text(text + "\n")
    progress(f"wrote {args.results / stem}.json and .md")


if __name__ == "__main__":
    main()
