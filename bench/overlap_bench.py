"""How fast a turned-away caller gets its answer: `--on-busy skip`, `--on-busy buffer-one` and
`add-dedupe` under a burst of simultaneous calls on one scope, beside the same burst of a plain
workflow (issue 21). Not a test.

    .venv/bin/python -m bench.overlap_bench [--versions 2.41.1,1.123.81] [--rounds 5]
        [--calls 10] [-o figures.json] [--results bench/results]

Per n8n version, one test bed at n8n's default settings (execution data saved), one Redis:
- plain: Webhook → Hold (Wait hold_ms) → Work (Code), answering with the last node;
- skip, buffer-one: plain wrapped by `add-lock-to-workflow --on-busy …` on the body's scope;
- dedupe: plain wrapped by `add-dedupe` on the same key, window 600 s.
Each round fires, for every workflow in a random order, `--calls` simultaneous calls on a fresh
scope (the guarded ones hold for 3 s, so every other caller arrives while the first holds; plain
holds 10 ms). The first round warms n8n up and is not counted. Reported per workflow: the bodies
that ran per burst, and the answer times of the turned-away callers (plain: of every caller,
the floor of that many simultaneous executions on this machine): median, p90, max. For skip and
buffer-one, also the next call on the scope once the burst has answered: it passes the skipped
callers' marked tickets before it enters (decide.js). Then where the turned-away callers' time
goes: the median time of each node in their saved executions.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from bench.harness.calls import Answer, burst, call
from bench.harness.executions import listing, workflow_ids
from bench.harness.results import (
    RESULTS,
    command,
    print_sections,
    report_text,
    versions,
    write_report,
)
from bench.harness.runs import epoch_ms
from bench.harness.session import Span, running_bed
from bench.harness.workspace import bench_workflow, cli, prepare, push, write_template
from testbed.endpoints import N8nInstance

GUARD_HOLD_MS = 3000
PLAIN_HOLD_MS = 10
FORMS: dict[str, tuple[str, ...]] = {
    "plain": (),
    "skip": ("add-lock-to-workflow", "--on-busy", "skip"),
    "buffer-one": ("add-lock-to-workflow", "--on-busy", "buffer-one"),
    "dedupe": ("add-dedupe", "--window-seconds", "600", "--on-duplicate", "skip"),
}
EXPECTED_BODIES = {"skip": 1, "buffer-one": 2, "dedupe": 1}
AFTER_FORMS = ("skip", "buffer-one")  # the next call after a burst runs the body


def install(root: Path, n8n: N8nInstance) -> dict[str, str]:
    """The four workflows on the test bed; form -> webhook path."""
    prepare(root, n8n)
    cli(root, "create-lock", "--include-error-handler")
    paths = {}
    for form, guard in FORMS.items():
        key = f"overlap_{form.replace('-', '_')}"
        write_template(root, bench_workflow(key))
        if guard:
            scope_flag = "--key-expression" if guard[0] == "add-dedupe" else "--scope-expression"
            cli(root, guard[0], "--workflow-key", key, scope_flag, "={{ $json.body.scope }}",
                "--ttl-seconds", "120", *guard[1:])  # fmt: skip
        paths[form] = key
    cli(root, "validate", "--env", "bench")
    push(root, activate=False)
    push(root, keys=list(paths.values()))
    return paths


def skipped(answer: Answer) -> bool:
    """Whether the caller was turned away: the guard answered `{"skipped": true}`."""
    body = answer.response.json()
    return isinstance(body, dict) and body.get("skipped") is True


def turned_away(
    n8n: N8nInstance, path: str, form: str, calls: int, scope: str
) -> list[tuple[float, bool]]:
    """(seconds, turned away) of each of `calls` simultaneous callers on `scope`."""
    hold = PLAIN_HOLD_MS if form == "plain" else GUARD_HOLD_MS
    answers = burst(n8n, path, [{"scope": scope, "hold_ms": hold}] * calls).answers
    return [(answer.seconds, skipped(answer)) for answer in answers]


def measure(version: str, rounds: int, calls: int) -> dict[str, Any]:
    run = Span()
    results: dict[str, dict[str, list[Any]]] = {
        f: {"bodies": [], "answers": [], "after": []} for f in FORMS
    }
    with running_bed(version) as bed:
        n8n, root = bed.n8n, bed.tmp / "ws"
        paths = install(root, n8n)
        calls_started = time.monotonic()
        for index in range(rounds + 1):
            order = list(FORMS)
            random.shuffle(order)
            for form in order:
                scope = f"overlap-{uuid.uuid4().hex[:10]}"
                answers = turned_away(n8n, paths[form], form, calls, scope)
                if index == 0:
                    continue  # warm-up
                if form in AFTER_FORMS:  # every caller of the burst has answered
                    body = {"scope": scope, "hold_ms": PLAIN_HOLD_MS}
                    results[form]["after"].append(call(n8n, paths[form], body).seconds)
                ran = [s for s, skipped in answers if not skipped]
                away = [s for s, skipped in answers if skipped]
                results[form]["bodies"].append(len(ran))
                results[form]["answers"] += away if form != "plain" else ran
                time.sleep(GUARD_HOLD_MS / 1000 + 1)  # the holders end before the next burst
        calls_seconds = time.monotonic() - calls_started
        nodes = breakdown(n8n, root, calls)
    return {
        "n8n": version,
        "rounds": rounds,
        "calls": calls,
        "forms": results,
        "nodes": nodes,
        "calls_seconds": calls_seconds,
        "seconds": run.seconds(),
        "load_average_1min": run.load(),
    }


START = "(n8n starts the execution)"


def breakdown(n8n: N8nInstance, root: Path, calls: int) -> dict[str, dict[str, float]]:
    """Where a turned-away caller's time goes, per guarded form: the median time of each node
    its saved executions ran (ms), and how long n8n took from starting an execution to its
    first node. The warm-up burst (each form's first `calls` executions) is left out."""
    ids = workflow_ids(root)
    result: dict[str, dict[str, float]] = {}
    for form in EXPECTED_BODIES:
        times: dict[str, list[float]] = {}
        executions = listing(n8n, ids[f"overlap_{form.replace('-', '_')}"])  # newest first
        for execution in executions[:-calls]:
            runs = (execution.get("data") or {}).get("resultData", {}).get("runData", {})
            if not any(name.endswith("Skipped") for name in runs):
                continue  # the body ran: not a turned-away caller
            started = epoch_ms(str(execution["startedAt"]))
            first = min(r[0]["startTime"] for r in runs.values())
            times.setdefault(START, []).append(first - started)
            for name, run in runs.items():
                times.setdefault(name, []).append(sum(r["executionTime"] for r in run))
        result[form] = {name: statistics.median(v) for name, v in times.items()}
    return result


def node_table(result: dict[str, Any]) -> list[str]:
    """The per-node medians of turned-away callers, nodes in the order the skip form ran them."""
    forms = list(result["nodes"])
    names = list(dict.fromkeys(n for form in forms for n in result["nodes"][form]))
    lines = [
        f"Where a turned-away caller's time goes (n8n {result['n8n']}): median ms per node over "
        "the turned-away executions of every burst (a node a form does not have: –)",
        "",
        "| node | " + " | ".join(forms) + " |",
        "|---|" + "---|" * len(forms),
    ]
    for name in names:
        cells = [result["nodes"][f].get(name) for f in forms]
        shown = ["–" if c is None else f"{c:.0f}" for c in cells]
        lines.append(f"| {name} | " + " | ".join(shown) + " |")
    return lines


def quantile(values: list[float], q: float) -> float:
    """The value at rank ⌊q·n⌋ + 1 (q in 0..1): one above the harness's nearest rank when q·n
    is whole; kept so that this bench's p90 reads as in its earlier results."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def table(result: dict[str, Any]) -> list[str]:
    lines = [
        f"n8n {result['n8n']}, {result['rounds']} bursts of {result['calls']} simultaneous calls "
        "per form",
        "",
        "| form | bodies per burst (expected) | answers timed | median | p90 | max "
        "| next call after the burst: median / max |",
        "|---|---|---|---|---|---|---|",
    ]
    for form, figures in result["forms"].items():
        answers: list[float] = figures["answers"]
        expected = EXPECTED_BODIES.get(form, result["calls"])
        timed = "every caller" if form == "plain" else "turned away"
        cells = (
            [f"{statistics.median(answers):.2f} s", f"{quantile(answers, 0.9):.2f} s",
             f"{max(answers):.2f} s"]
            if answers else ["–", "–", "–"]
        )  # fmt: skip
        after: list[float] = figures.get("after") or []
        cells.append(f"{statistics.median(after):.2f} s / {max(after):.2f} s" if after else "–")
        bodies = ",".join(str(b) for b in figures["bodies"])
        lines.append(f"| {form} | {bodies} ({expected}) | {timed} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--versions", default="2.41.1")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("-o", "--output", type=Path)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    argv = list(sys.argv[1:] if argv is None else argv)
    runs = [measure(version, args.rounds, args.calls) for version in versions(args.versions)]
    sections = [part for run in runs for part in (table(run), node_table(run))]
    for run in runs:
        print_sections([table(run), node_table(run)], run)
    intro = (__doc__ or "").split("\n\n")[0].replace("\n", " ")
    day = datetime.date.today().isoformat()
    text = report_text(command("overlap_bench", argv, python="python"), intro, sections)
    write_report(args.results, f"overlap_bench-{day}", text)
    if args.output:
        args.output.write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
