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
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

from bench.common import bench_workflow, cli, prepare, print_sections, report_text, write_template
from bench.executions import listing, workflow_ids
from testbed.endpoints import N8nInstance
from testbed.session import running_testbed

RESULTS = Path(__file__).parent / "results"
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
    for form, command in FORMS.items():
        key = f"overlap_{form.replace('-', '_')}"
        write_template(root, bench_workflow(key))
        if command:
            scope_flag = "--key-expression" if command[0] == "add-dedupe" else "--scope-expression"
            cli(root, command[0], "--workflow-key", key, scope_flag, "={{ $json.body.scope }}",
                "--ttl-seconds", "120", *command[1:])  # fmt: skip
        paths[form] = key
    cli(root, "validate", "--env", "bench")
    cli(root, "push", "--env", "bench")
    cli(root, "push", "--env", "bench", "--activate", *paths.values())
    return paths


def call(n8n: N8nInstance, path: str, body: dict[str, Any]) -> tuple[float, bool]:
    """Seconds until the answer, and whether it was a skipped one."""
    start = time.monotonic()
    response = requests.post(f"{n8n.base_url}/webhook/{path}", json=body, timeout=600)
    response.raise_for_status()
    seconds = time.monotonic() - start
    answer = response.json()
    return seconds, isinstance(answer, dict) and answer.get("skipped") is True


def burst(
    n8n: N8nInstance, path: str, form: str, calls: int, scope: str
) -> list[tuple[float, bool]]:
    hold = PLAIN_HOLD_MS if form == "plain" else GUARD_HOLD_MS
    with ThreadPoolExecutor(calls) as pool:
        return list(pool.map(lambda _: call(n8n, path, {"scope": scope, "hold_ms": hold}),
                             range(calls)))  # fmt: skip


def measure(version: str, rounds: int, calls: int) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    results: dict[str, dict[str, list[Any]]] = {
        f: {"bodies": [], "answers": [], "after": []} for f in FORMS
    }
    with running_testbed(version) as (n8n, _), tempfile.TemporaryDirectory() as tmp:
        os.environ["N8N_API_KEY"] = n8n.api_key
        paths = install(Path(tmp) / "ws", n8n)
        calls_started = time.monotonic()
        for index in range(rounds + 1):
            order = list(FORMS)
            random.shuffle(order)
            for form in order:
                scope = f"overlap-{uuid.uuid4().hex[:10]}"
                answers = burst(n8n, paths[form], form, calls, scope)
                if index == 0:
                    continue  # warm-up
                if form in AFTER_FORMS:  # every caller of the burst has answered
                    body = {"scope": scope, "hold_ms": PLAIN_HOLD_MS}
                    results[form]["after"].append(call(n8n, paths[form], body)[0])
                ran = [s for s, skipped in answers if not skipped]
                away = [s for s, skipped in answers if skipped]
                results[form]["bodies"].append(len(ran))
                results[form]["answers"] += away if form != "plain" else ran
                time.sleep(GUARD_HOLD_MS / 1000 + 1)  # the holders end before the next burst
        calls_seconds = time.monotonic() - calls_started
        nodes = breakdown(n8n, Path(tmp) / "ws", calls)
    return {
        "n8n": version,
        "rounds": rounds,
        "calls": calls,
        "forms": results,
        "nodes": nodes,
        "calls_seconds": calls_seconds,
        "seconds": time.monotonic() - started,
        "load_average_1min": [load_before, os.getloadavg()[0]],
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
            started = _epoch_ms(str(execution["startedAt"]))
            first = min(r[0]["startTime"] for r in runs.values())
            times.setdefault(START, []).append(first - started)
            for name, run in runs.items():
                times.setdefault(name, []).append(sum(r["executionTime"] for r in run))
        result[form] = {name: statistics.median(v) for name, v in times.items()}
    return result


def _epoch_ms(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", default="2.41.1")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("-o", "--output", type=Path)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    command = "python -m bench.overlap_bench " + " ".join(argv or sys.argv[1:])
    runs = [measure(v, args.rounds, args.calls) for v in args.versions.split(",")]
    sections = [part for run in runs for part in (table(run), node_table(run))]
    for run in runs:
        print_sections([table(run), node_table(run)], run)
    intro = (__doc__ or "").split("\n\n")[0].replace("\n", " ")
    day = datetime.date.today().isoformat()
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / f"overlap_bench-{day}.md").write_text(report_text(command, intro, sections))
    if args.output:
        args.output.write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
