"""What the inline lock costs against a floor of three bare Redis nodes, measured side by side in
one run (issue 20). Not a test.

    .venv/bin/python -m bench.floor_bench [--versions 2.41.1] [--runs 40] [--baseline REF]
        [--form lock|rate-limit] [-o figures.json] [--results bench/results]

Per n8n version, one test bed at n8n's default settings (execution data saved), one Redis:
- plain: Webhook → Wait (10 ms) → Set, answering with the last node;
- floor: Webhook → Redis INCR → Redis GET → Redis SET → Wait → Set: three single-item Redis
  node executions on one key derived from the body's scope (no TTL: "bare");
- lock: plain wrapped by this checkout's `add-lock-to-workflow` on `={{ $json.body.scope }}`
  (with `--form rate-limit`: by `add-rate-limit` on that scope, a sliding limit too high to
  refuse, so that the table says what an allowed check costs; the report calls it "rate limit");
- baseline (with `--baseline REF`): plain wrapped by REF's own n8nlock, in a workspace of its own.
Every workflow is called uncontended in shuffled rounds: each round calls every workflow once per
scope mode ("repeated": one scope per workflow for every call; "new": a fresh uuid scope per
call) in a random order; the first rounds warm n8n up and are not counted. Reported per scope
mode: median and p90 latency, the ms added over plain, and added(lock) / added(floor) (target
≤ 2.0) with a 90 % bootstrap interval over the rounds. From the saved executions: the nodes one
call executes and the median ms per node; from the wrapped templates: the generated nodes.
Prints the tables, writes bench/results/floor_bench-<version>.md and, with -o, every figure as
JSON.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import figures
from bench.common import (
    NS,
    Run,
    chained,
    cli,
    node,
    post,
    prepare,
    print_sections,
    report_text,
    write_template,
)
from bench.designs import checkout, tree_cli, wrap_args
from bench.executions import Execution, matching, workflow_ids
from n8n_lockkit.primitives.nodekit import REDIS_CREDENTIALS
from testbed.endpoints import N8nInstance
from testbed.session import running_testbed

RESULTS = Path(__file__).parent / "results"
DEFAULT_VERSIONS = "2.41.1"
DEFAULT_RUNS = 40
WARM_UP = 5  # rounds: the first calls of a workflow compile and cache; they are not counted
TARGET = 2.0  # added(lock) / added(floor), issue 20
BOOTSTRAP = 2000  # resamples of the rounds for the ratio's interval
MODES = ("repeated", "new")
PLAIN, FLOOR, LOCK, BASELINE = "plain", "floor", "lock", "baseline"
KEYS = {PLAIN: "floor_plain", FLOOR: "floor_redis", LOCK: "floor_lock", BASELINE: "floor_base"}
REDIS = "n8n-nodes-base.redis"
STICKY = "n8n-nodes-base.stickyNote"
Figures = dict[str, Any]
Workflow = dict[str, Any]


# --- the workflows ---------------------------------------------------------------------------


def plain_body(key: str, x: int) -> list[dict[str, Any]]:
    """Wait (10 ms) → Set, from `x` on."""
    wait = node(
        key, "Wait", "n8n-nodes-base.wait", 1.1, x,
        {"resume": "timeInterval", "amount": 0.01, "unit": "seconds"},
        webhookId=str(uuid.uuid5(NS, key + "-wait")),
    )  # fmt: skip
    done = node(
        key, "Set", "n8n-nodes-base.set", 3.4, x + 220,
        {"mode": "raw", "jsonOutput": '{ "done": true }', "includeOtherFields": False,
         "options": {}},
    )  # fmt: skip
    return [wait, done]


def webhook(key: str) -> dict[str, Any]:
    parameters = {"httpMethod": "POST", "path": key, "responseMode": "lastNode", "options": {}}
    return node(
        key, "Webhook", "n8n-nodes-base.webhook", 2, 0, parameters,
        webhookId=str(uuid.uuid5(NS, key)),
    )  # fmt: skip


def plain_workflow(key: str) -> Workflow:
    """Webhook → Wait (10 ms) → Set ("lastNode" response)."""
    return chained(key, [webhook(key), *plain_body(key, 220)])


def floor_workflow(key: str) -> Workflow:
    """Webhook → Redis INCR → Redis GET → Redis SET → Wait → Set: three single-item Redis node
    executions on one key from the body's scope, with the workspace's Redis credential."""
    redis_key = "=n8nlock-floor:{{ $('Webhook').first().json.body.scope }}"
    operations: dict[str, dict[str, Any]] = {
        "Redis INCR": {"operation": "incr", "key": redis_key, "expire": False},
        "Redis GET": {"operation": "get", "propertyName": "value", "key": redis_key,
                      "keyType": "string", "options": {"dotNotation": False}},
        "Redis SET": {"operation": "set", "key": redis_key, "value": "={{ $json.value }}",
                      "keyType": "string", "expire": False},
    }  # fmt: skip
    redis_nodes = [
        node(key, name, REDIS, 1, 220 * (index + 1), parameters, credentials=REDIS_CREDENTIALS)
        for index, (name, parameters) in enumerate(operations.items())
    ]
    return chained(key, [webhook(key), *redis_nodes, *plain_body(key, 220 * 4)])


@dataclass(frozen=True)
class Target:
    """A workflow in n8n: its label, webhook path (= workflow key) and the workspace that
    pushed it."""

    label: str
    key: str
    root: Path


# What --form wraps the plain workflow with (bench.designs.wrap_args: the lock).
FORMS: dict[str, Callable[[str], list[str]]] = {
    "lock": wrap_args,
    "rate-limit": lambda key: [
        "add-rate-limit", "--workflow-key", key, "--scope-expression", "={{ $json.body.scope }}",
        "--limit", "1000000", "--window-seconds", "60",
    ],
}  # fmt: skip


def wrapped(root: Path, key: str, run: Run, form: str = "lock") -> None:
    """The plain workflow as `key`, wrapped by `run`'s n8nlock (the lock, or another
    `FORMS` entry), pushed and active."""
    write_template(root, plain_workflow(key))
    run(root, *FORMS[form](key))


def deploy(n8n: N8nInstance, tmp: Path, baseline: str | None, form: str = "lock") -> list[Target]:
    """plain, floor and lock in this checkout's workspace; baseline in REF's own."""
    root = tmp / "main"
    prepare(root, n8n, cli)
    write_template(root, plain_workflow(KEYS[PLAIN]))
    write_template(root, floor_workflow(KEYS[FLOOR]))
    wrapped(root, KEYS[LOCK], cli, form)
    cli(root, "push", "--env", "bench", "--activate")
    targets = [Target(label, KEYS[label], root) for label in (PLAIN, FLOOR, LOCK)]
    if baseline:
        run = tree_cli(checkout(baseline, tmp / "baseline-tree"))
        other = tmp / "baseline"
        prepare(other, n8n, run)
        wrapped(other, KEYS[BASELINE], run, form)
        run(other, "push", "--env", "bench", "--activate")
        targets.append(Target(BASELINE, KEYS[BASELINE], other))
    return targets


def generated(target: Target) -> dict[str, int]:
    """Node counts of the pushed template against the plain workflow's."""
    path = target.root / "workflows" / f"{target.key}.template.json"
    nodes = json.loads(path.read_text())["nodes"]
    own = {n["name"] for n in plain_workflow(target.key)["nodes"]}
    added = [n for n in nodes if n["name"] not in own]
    return {
        "nodes": sum(1 for n in nodes if n["type"] != STICKY),
        "generated_nodes": sum(1 for n in added if n["type"] != STICKY),
        "generated_redis_nodes": sum(1 for n in added if n["type"] == REDIS),
        "sticky_notes": sum(1 for n in nodes if n["type"] == STICKY),
    }


# --- the calls -------------------------------------------------------------------------------

Timings = dict[str, dict[str, list[float]]]  # mode → label → seconds, one per counted round


def scope_of(token: str, mode: str, key: str) -> str:
    base = f"{mode}-{token}-{key}"
    return base if mode == "repeated" else f"{base}-{uuid.uuid4().hex}"


def rounds(
    n8n: N8nInstance,
    targets: Sequence[Target],
    runs: int,
    token: str,
    modes: Sequence[str] = MODES,
    say: Callable[[str], None] | None = None,
) -> Timings:
    """Seconds per call; a round calls every workflow once per scope mode, in a shuffled order,
    so that load on the machine hits all alike. Round i of every list is the same round.
    `say` reports progress (default: floor_bench's)."""
    say = say or progress
    timings: Timings = {mode: {t.label: [] for t in targets} for mode in modes}
    calls = [(mode, target) for mode in modes for target in targets]
    for number in range(WARM_UP + runs):
        random.shuffle(calls)
        for mode, target in calls:
            body = {"scope": scope_of(token, mode, target.key), "round": number}
            seconds = post(n8n, target.key, body)
            if number >= WARM_UP:
                timings[mode][target.label].append(seconds)
        if number + 1 == WARM_UP or (number + 1 - WARM_UP) % 10 == 0:
            say(f"round {number + 1} of {WARM_UP + runs} ({WARM_UP} to warm up)")
    return timings


def latency_figures(timings: dict[str, list[float]]) -> Figures:
    """Median, p90 and ms added over plain per workflow; added(x) / added(floor) for the locks,
    with a 90 % interval from resampling the rounds (paired: one round's calls stay together)."""
    ms = {label: [s * 1000 for s in values] for label, values in timings.items()}
    plain = statistics.median(ms[PLAIN])
    result: Figures = {}
    for label, values in ms.items():
        median = statistics.median(values)
        result[label] = {
            "median_ms": median,
            "p90_ms": figures.percentile(values, 90),
            "added_ms": median - plain,
        }
    for label in (LOCK, BASELINE):
        if label in ms:
            added = result[label]["added_ms"]
            result[label]["floor_ratio"] = ratio(added, result[FLOOR]["added_ms"])
            result[label]["floor_ratio_90"] = bootstrap(ms, label)
    return result


def added_ratio(ms: dict[str, list[float]], label: str, picks: Sequence[int]) -> float:
    def median(of: str) -> float:
        return statistics.median(ms[of][i] for i in picks)

    plain = median(PLAIN)
    return ratio(median(label) - plain, median(FLOOR) - plain)


def ratio(added: float, floor: float) -> float:
    """added / floor; infinite when the floor added nothing (too few rounds to tell)."""
    return added / floor if floor > 0 else math.inf


def bootstrap(ms: dict[str, list[float]], label: str) -> list[float]:
    """5th and 95th percentiles of added(label) / added(floor) over resampled rounds."""
    rng = random.Random(20)
    count = len(ms[PLAIN])
    ratios = [
        added_ratio(ms, label, [rng.randrange(count) for _ in range(count)])
        for _ in range(BOOTSTRAP)
    ]
    return [figures.percentile(ratios, 5), figures.percentile(ratios, 95)]


# --- the saved executions --------------------------------------------------------------------


def counted(mode: str, token: str, key: str) -> Callable[[Execution], bool]:
    """The counted (not warm-up) calls of one workflow in one scope mode."""
    prefix = f"{mode}-{token}-{key}"

    def wanted(execution: Execution) -> bool:
        body = figures.webhook_body(execution)
        scope = str(body.get("scope", ""))
        ours = scope == prefix or scope.startswith(prefix + "-")
        return ours and int(body.get("round", -1)) >= WARM_UP

    return wanted


def ends(execution: Execution) -> tuple[float, float]:
    runs = [r for node_runs in figures.run_data(execution).values() for r in node_runs]
    first = min(float(r["startTime"]) for r in runs)
    last = max(float(r["startTime"]) + float(r.get("executionTime") or 0) for r in runs)
    return first, last


def items_out(run: dict[str, Any]) -> int:
    outputs = (run.get("data") or {}).get("main") or [[]]
    return len(outputs[0] or [])


def redis_items(execution: Execution) -> dict[str, int]:
    """Items each Redis node handled in one call (its runs summed): a round trip each."""
    names = figures.redis_nodes(execution)
    runs = figures.run_data(execution)
    return {name: sum(map(items_out, runs[name])) for name in names if name in runs}


def redis_runs(execution: Execution) -> int:
    names = figures.redis_nodes(execution)
    return sum(len(runs) for name, runs in figures.run_data(execution).items() if name in names)


def node_time(execution: Execution) -> float:
    runs = figures.run_data(execution).values()
    return sum(float(r.get("executionTime") or 0) for node_runs in runs for r in node_runs)


def execution_figures(executions: Sequence[Execution]) -> Figures:
    """Per call (medians): nodes executed, node executions, Redis node executions and their
    items, the sum of the nodes' executionTime and the span first node start → last node end;
    per node: median ms (its runs in one call summed) and, for Redis nodes, median items."""

    def median(of: Callable[[Execution], float]) -> float:
        return statistics.median(of(e) for e in executions)

    items = [redis_items(e) for e in executions]
    per_node = {name for found in items for name in found}
    return {
        "saved": len(executions),
        "nodes_executed": median(lambda e: len(figures.run_data(e))),
        "nodes_executed_range": sorted({len(figures.run_data(e)) for e in executions}),
        "node_executions": median(lambda e: sum(map(len, figures.run_data(e).values()))),
        "redis_node_executions": median(redis_runs),
        "redis_items": statistics.median(sum(found.values()) for found in items),
        "node_time_sum_ms": median(node_time),
        "span_ms": median(lambda e: ends(e)[1] - ends(e)[0]),
        "node_ms": figures.node_costs(executions),
        "redis_node_items": {
            name: statistics.median(found[name] for found in items if name in found)
            for name in sorted(per_node)
        },
    }


def saved_figures(
    n8n: N8nInstance, targets: Sequence[Target], token: str, runs: int
) -> dict[str, Figures]:
    """mode → label → execution figures of the counted calls."""
    result: dict[str, Figures] = {mode: {} for mode in MODES}
    for target in targets:
        workflow_id = workflow_ids(target.root)[target.key]
        for mode in MODES:
            found = matching(n8n, workflow_id, counted(mode, token, target.key), runs)
            if len(found) < runs:
                progress(f"{target.label} ({mode}): {len(found)} of {runs} executions saved")
            if found:
                result[mode][target.label] = execution_figures(found[:runs])
    return result


# --- one version -----------------------------------------------------------------------------


def tree_state() -> str:
    """This checkout's commit, and the engine's files that differ from it (git status)."""
    git = ["git", "-C", str(Path(__file__).parents[1])]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    changed = subprocess.run(
        [*git, "status", "--porcelain", "--", "n8n_lockkit", "templates"],
        capture_output=True,
        text=True,
    )
    paths = [line.strip() for line in changed.stdout.splitlines() if line.strip()]
    return head.stdout.strip() + (f" + uncommitted: {', '.join(paths)}" if paths else "")


def bench_version(version: str, args: argparse.Namespace, tree: str) -> Figures:
    started = time.monotonic()
    with running_testbed(version) as (n8n, _), tempfile.TemporaryDirectory() as tmp:
        os.environ["N8N_API_KEY"] = n8n.api_key
        targets = deploy(n8n, Path(tmp), args.baseline, args.form)
        token = uuid.uuid4().hex[:8]
        progress(f"n8n {version}: {args.runs} shuffled rounds (+{WARM_UP} to warm up)")
        measured, load_before = time.monotonic(), os.getloadavg()[0]
        timings = rounds(n8n, targets, args.runs, token)
        calls_seconds, load_after = time.monotonic() - measured, os.getloadavg()[0]
        progress(f"n8n {version}: reading the saved executions")
        saved = saved_figures(n8n, targets, token, args.runs)
        for mode, by_label in saved.items():
            for label, found in by_label.items():
                found["call_median_ms"] = statistics.median(timings[mode][label]) * 1000
        return {
            "n8n": version,
            "tree": tree,
            "latency": {mode: latency_figures(timings[mode]) for mode in MODES},
            "executions": saved,
            "generated": {t.label: generated(t) for t in targets if t.label in (LOCK, BASELINE)},
            "timings_ms": {
                mode: {label: [s * 1000 for s in values] for label, values in by_label.items()}
                for mode, by_label in timings.items()
            },
            "calls_seconds": calls_seconds,
            "load_average_1min": [load_before, load_after],  # other work on the machine
            "seconds": time.monotonic() - started,
        }


def progress(message: str) -> None:
    print(f"[floor_bench] {message}", file=sys.stderr, flush=True)


# --- the report ------------------------------------------------------------------------------


def names(args: argparse.Namespace) -> dict[str, str]:
    base = {
        PLAIN: "plain (Webhook → Wait 10 ms → Set)",
        FLOOR: "floor (+ Redis INCR, GET, SET)",
        LOCK: f"{what(args)} (this checkout)",
    }
    if args.baseline:
        base[BASELINE] = f"{what(args)} ({args.baseline})"
    return base


def what(args: argparse.Namespace) -> str:
    """What the report calls the wrapped workflow: lock, or rate limit."""
    return str(args.form).replace("-", " ")


def latency_table(result: Figures, args: argparse.Namespace) -> list[str]:
    header = " | ".join(f"{mode} scope: median / p90 | added" for mode in MODES)
    lines = [f"| workflow (n8n {result['n8n']}) | {header} |", "|---|" + "---|---|" * len(MODES)]
    for label, name in names(args).items():
        cells = []
        for mode in MODES:
            f = result["latency"][mode][label]
            added = "–" if label == PLAIN else f"+{f['added_ms']:.1f} ms"
            cells.append(f"{f['median_ms']:.1f} / {f['p90_ms']:.1f} ms | {added}")
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return lines


def ratio_table(result: Figures, args: argparse.Namespace) -> list[str]:
    lines = [
        f"| added({what(args)}) / added(floor), n8n {result['n8n']} | target | "
        + " | ".join(f"{mode} scope (90 % interval)" for mode in MODES)
        + " |",
        "|---|---|" + "---|" * len(MODES),
    ]
    for label in (LOCK, BASELINE):
        if label == BASELINE and not args.baseline:
            continue
        cells = []
        for mode in MODES:
            f = result["latency"][mode][label]
            low, high = f["floor_ratio_90"]
            mark = "✓" if f["floor_ratio"] <= TARGET else "✗"
            cells.append(f"{f['floor_ratio']:.2f}× {mark} ({low:.2f}–{high:.2f})")
        lines.append(f"| {names(args)[label]} | ≤ {TARGET:.1f}× | {' | '.join(cells)} |")
    return lines


def columns(result: Figures, args: argparse.Namespace) -> list[tuple[str, Figures]]:
    """(heading, execution figures) for the lock(s) and the floor in both scope modes."""
    labels = [LOCK, *([BASELINE] if args.baseline else []), FLOOR]
    short = {LOCK: what(args), BASELINE: f"{what(args)} {args.baseline}", FLOOR: "floor"}
    saved = result["executions"]
    return [
        (f"{short[label]}, {mode}", saved[mode][label])
        for label in labels
        for mode in MODES
        if label in saved[mode]
    ]


def nodes_table(result: Figures, args: argparse.Namespace) -> list[str]:
    """Generated nodes (from the template) and executed nodes (median of the saved calls)."""
    cols = columns(result, args)
    lines = [
        "| one uncontended call | " + " | ".join(h for h, _ in cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    rows: list[tuple[str, Callable[[Figures], str]]] = [
        ("nodes executed", lambda f: f"{f['nodes_executed']:g}"),
        ("node executions", lambda f: f"{f['node_executions']:g}"),
        ("Redis node executions", lambda f: f"{f['redis_node_executions']:g}"),
        ("items through Redis nodes (≥ 1 round trip each)", lambda f: f"{f['redis_items']:g}"),
        ("sum of the nodes' ms", lambda f: f"{f['node_time_sum_ms']:.0f}"),
        ("first node start → last node end, ms", lambda f: f"{f['span_ms']:.0f}"),
        ("call (HTTP) median, ms", lambda f: f"{f['call_median_ms']:.0f}"),
        (
            "call outside the nodes (call − span), ms",
            lambda f: f"{f['call_median_ms'] - f['span_ms']:.0f}",
        ),
    ]
    for name, show in rows:
        lines.append(f"| {name} | " + " | ".join(show(f) for _, f in cols) + " |")
    return lines


def generated_lines(result: Figures, args: argparse.Namespace) -> list[str]:
    lines = []
    for label, g in result["generated"].items():
        lines.append(
            f"- {names(args)[label]}: {g['nodes']} nodes, {g['generated_nodes']} generated by "
            f"wrapping ({g['generated_redis_nodes']} Redis), {g['sticky_notes']} sticky notes"
        )
    return lines


def node_ms_table(result: Figures, args: argparse.Namespace) -> list[str]:
    """Median ms per node, a column per workflow and scope mode, slowest first in the first."""
    cols = columns(result, args)
    order: list[str] = []
    for _, f in cols:
        order += [name for name in f["node_ms"] if name not in order]
    lines = [
        "| node (median ms) | " + " | ".join(h for h, _ in cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for name in order:
        cells = " | ".join(node_cell(f, name) for _, f in cols)
        lines.append(f"| {name} | {cells} |")
    return lines


def node_cell(f: Figures, name: str) -> str:
    """Median ms; for a Redis node also the items it handled: "24 (×3)"."""
    if name not in f["node_ms"]:
        return "–"
    items = f["redis_node_items"].get(name)
    return f"{f['node_ms'][name]:.0f}" + ("" if items is None else f" (×{items:g})")


def command(argv: Sequence[str]) -> str:
    return " ".join([".venv/bin/python -m bench.floor_bench", *argv])


def intro(result: Figures, args: argparse.Namespace) -> str:
    today = datetime.date.today().isoformat()
    before, after = result["load_average_1min"]
    baseline = (
        f"; {what(args)} ({args.baseline}): the same plain workflow wrapped by n8nlock at "
        f"{args.baseline}, in a workspace of its own"
        if args.baseline
        else ""
    )
    return (
        f"Measured {today} on {os.cpu_count()} cores, n8n {result['n8n']} at its default "
        f"settings (execution data saved), one process, local Redis: {args.runs} shuffled "
        f"rounds after {WARM_UP} to warm up, each calling every workflow once per scope mode "
        '("repeated": one scope per workflow; "new": a fresh uuid scope per call), uncontended. '
        "Added: median minus plain's median in the same mode. The ratio's interval: 5th–95th "
        f"percentile over {BOOTSTRAP} resamples of the rounds. {what(args)}: the plain "
        f"workflow wrapped by this checkout ({result['tree']}) with "
        f"`{' '.join(FORMS[args.form]('KEY')[:1] + FORMS[args.form]('KEY')[3:])}`"
        f"{baseline}. Node figures from the saved executions of the counted calls "
        "(runData executionTime, medians); (×n): the items a Redis node handled, each at least "
        f"one round trip to Redis. The calls took {result['calls_seconds']:.0f} s (1-minute load "
        f"average {before:.1f} before, {after:.1f} after: other work on the machine slows all "
        f"workflows alike, but widens the spread), the whole run {result['seconds'] / 60:.1f} min."
    )


def sections(result: Figures, args: argparse.Namespace) -> list[list[str]]:
    generated = ["Generated nodes (the wrapped template):", "", *generated_lines(result, args)]
    return [
        ratio_table(result, args),
        latency_table(result, args),
        generated,
        nodes_table(result, args),
        node_ms_table(result, args),
    ]


def report(result: Figures, args: argparse.Namespace, argv: Sequence[str]) -> str:
    return report_text(command(argv), intro(result, args), sections(result, args))


def show(result: Figures, args: argparse.Namespace) -> None:
    print_sections(sections(result, args), result)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--versions", default=DEFAULT_VERSIONS, help="n8n versions, commas")
    parser.add_argument(
        "--runs", type=int, default=DEFAULT_RUNS, help=f"counted rounds (default {DEFAULT_RUNS})"
    )
    parser.add_argument(
        "--baseline", help="git ref whose n8nlock also wraps the plain workflow, side by side"
    )
    parser.add_argument(
        "--form", choices=sorted(FORMS), default="lock", help="what wraps the plain workflow"
    )
    parser.add_argument("-o", "--output", type=Path, help="also write every figure to this JSON")
    parser.add_argument(
        "--results", type=Path, default=RESULTS, help="where floor_bench-<version>.md goes"
    )
    args = parser.parse_args(argv)
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    return args


def jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON: {value!r}")


def versions(text: str) -> Iterable[str]:
    return (v.strip() for v in text.split(",") if v.strip())


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    tree = tree_state()  # what this process imported: the engine as it is now
    results = []
    for version in versions(args.versions):
        result = bench_version(version, args, tree)
        results.append(result)
        show(result, args)
        suffix = "" if args.form == "lock" else f"-{args.form}"
        path = args.results / f"floor_bench-{version}{suffix}.md"
        path.write_text(report(result, args, argv))
        progress(f"wrote {path}")
    if args.output:
        document = {"command": command(argv), "arguments": vars(args) | {"output": None}}
        text = json.dumps({**document, "results": results}, indent=2, default=jsonable)
        args.output.write_text(text + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
