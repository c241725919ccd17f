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
import datetime
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import redis

from bench.harness.calls import WARM_UP
from bench.harness.results import RESULTS, command, measured, progress_for, write_report
from bench.harness.session import running_bed
from bench.stall_diagnosis import diagnose
from tests.e2e.lockbed import API_KEY_VARIABLE, LockBed, init_workspace
from tests.e2e.stalls import contend_with_stalls, install, n8n_log_path, n8n_main_pid, process_state

VERSION = "2.41.1"
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


progress = progress_for("stall_bench")


def warm_up(bed: LockBed, key: str, token: str) -> None:
    """Uncontended calls first: n8n compiles and caches on first use."""
    for index in range(WARM_UP):
        call = bed.webhook(key, {"scope": f"warm-{token}", "who": index, "hold_ms": 0})
        if call.status != 200:
            raise SystemExit(f"warm-up call of {key} failed: {call.status} {call.body}")


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
    diagnosis = diagnose(bed, bed.workflow_id(key), run, scenario.limit, stops)
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
    settings = n8n_extra(args)
    with running_bed(
        VERSION, topology="single", n8n_settings=settings, api_key_variable=API_KEY_VARIABLE
    ) as test_bed:
        n8n = test_bed.n8n
        root = init_workspace(test_bed.tmp / "ws", n8n, [])
        client = redis.Redis.from_url(test_bed.redis.url, decode_responses=True)
        bed = LockBed(root, n8n, client)
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
        f"{measured(command('stall_bench', argv))}: n8n {VERSION}, one "
        f"process{settings_text(args)}, stopped with SIGSTOP/SIGCONT ({args.gap:g} s running "
        f"between stops, from the first body's start); TTL 60 s, max wait 120 s. Peak: the "
        f"most bodies at once in the sink list (✓ within the lock's limit)."
    )
    text = "\n".join([header, "", *table(result), "", *details(result)])
    print()
    print(text)
    print(f"n8n log kept at {kept}; total {time.monotonic() - started:.0f} s")
    stem = f"stall_bench-{day}" + ("-quick" if args.quick else "")
    write_report(args.results, stem, text + "\n")
    document = {
        "command": command("stall_bench", argv),
        "arguments": vars(args),
        "n8n_log_kept": kept,
        **result,
    }
    (args.results / f"{stem}.json").write_text(json.dumps(document, indent=2, default=str) + "\n")
    progress(f"wrote {args.results / stem}.json and .md")


if __name__ == "__main__":
    main()
