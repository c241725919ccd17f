"""What one node execution costs n8n's main process, by kind of node and of expression. Not a
test.

    .venv/bin/python -m bench.node_cost [--versions 2.41.1] [--calls 40]
        [--expression-engines default,legacy] [--at-once 10] [--out bench/results/<stem>]

One n8n (regular mode), one Redis. Per variant, a webhook workflow answering with its last
node: Webhook → a Set node (the "none" variant), or Webhook → ten nodes of one kind → that Set.
The variants' calls are sent one at a time, `--calls` each after five not counted; the n8n main
process's CPU time (user + system, /proc) per call, minus the "none" variant's, divided by ten,
is what one node of the kind costs. For debounce's design (issue 34): its event runs Set nodes
whose one expression reads other nodes (`$("X").first().json`), If nodes, and Redis nodes
whose key is an expression.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path
from typing import Any

from bench.debounce_bench import cpu_seconds
from bench.harness.calls import call
from bench.harness.results import RESULTS, command, measured, progress_for, tree_state
from bench.harness.session import Bed, Span, running_bed
from bench.harness.workspace import chained, node, prepare, push, webhook, write_template
from n8n_lockkit.primitives.nodekit import if_parameters
from testbed.runtime import needs_node24

progress = progress_for("node_cost")
REPEAT = 10
REDIS = {
    "redis": {"id": "{{@:env:credentials.redis.id}}", "name": "{{@:env:credentials.redis.name}}"}
}
Node = dict[str, Any]


def set_node(json_output: str) -> Node:
    return {
        "type": "n8n-nodes-base.set",
        "typeVersion": 3.4,
        "parameters": {"mode": "raw", "jsonOutput": json_output, "options": {}},
    }


def redis_get(key: str) -> Node:
    return {
        "type": "n8n-nodes-base.redis",
        "typeVersion": 1,
        "parameters": {"operation": "get", "propertyName": "v", "key": key, "options": {}},
        "credentials": REDIS,
    }


def if_node(condition: str) -> Node:
    """An If node true when `condition` (a JS expression, without `={{ }}`) is."""
    return {
        "type": "n8n-nodes-base.if",
        "typeVersion": 2.2,
        "parameters": if_parameters("node_cost", condition),
    }


IIFE = (
    '={{ (() => {\nconst a = $("Webhook").first().json.body;\n'
    'const b = $("Webhook").first().json.headers;\n'
    "return { chat: a.chat, n: Number(a.who) + 1, h: typeof b, at: Date.now(),"
    " s: JSON.stringify({ at: Date.now(), items: [a] }) };\n})() }}"
)
SET_REF = set_node('={{ ({ a: $("Webhook").first().json.body.chat, t: Date.now() }) }}')
REDIS_REF = redis_get('={{ "node-cost-" + $("Webhook").first().json.body.chat }}')
# kind → the nodes between Webhook and End: ten of one kind, or an answer path of n Redis nodes
# (each after a Set node whose expression reads the trigger, as debounce's keys are built)
VARIANTS: dict[str, list[Node]] = {
    "none": [],
    "set, no expression": [set_node('{"a": 1}')] * REPEAT,
    "set, $json": [set_node("={{ ({ a: 1, b: $json.a }) }}")] * REPEAT,
    "set, one node ref": [SET_REF] * REPEAT,
    "set, debounce-like IIFE": [set_node(IIFE)] * REPEAT,
    "if, one node ref": [if_node('$("Webhook").first().json.body.who >= 0')] * REPEAT,
    "redis get, fixed key": [redis_get("node-cost-fixed")] * REPEAT,
    "redis get, key from node ref": [REDIS_REF] * REPEAT,
    **{f"answer after {n} redis + {n} set": [SET_REF, REDIS_REF] * n for n in (1, 3, 4)},
}
PATHS = ["none", *(f"answer after {n} redis + {n} set" for n in (1, 3, 4))]


def workflow(key: str, chain: list[Node]) -> dict[str, Any]:
    """Webhook → `chain` → End (a Set), answering with End's item."""
    body = [
        node(key, f"N{index}", n["type"], n["typeVersion"], (index + 1) * 200, n["parameters"],
             **{k: v for k, v in n.items() if k not in ("type", "typeVersion", "parameters")})
        for index, n in enumerate(chain)
    ]  # fmt: skip
    done = set_node('{"done": true}')
    end = node(key, "End", done["type"], done["typeVersion"], (len(chain) + 1) * 200,
               done["parameters"])  # fmt: skip
    return chained(key, [webhook(key), *body, end])


def install(bed: Bed) -> dict[str, str]:
    """Every variant pushed and active: kind → webhook path."""
    root = bed.tmp / "node_cost"
    prepare(root, bed.n8n)
    tag = uuid.uuid4().hex[:6]
    paths = {}
    for number, (kind, chain) in enumerate(VARIANTS.items()):
        key = f"node_cost_{number}_{tag}"
        write_template(root, workflow(key, chain))
        paths[kind] = key
    push(root)
    return paths


def bench_version(version: str, engine: str, args: argparse.Namespace) -> dict[str, Any]:
    span = Span()
    settings = {} if engine == "default" else {"N8N_EXPRESSION_ENGINE": engine}
    with running_bed(version, topology="single", n8n_settings=settings) as bed:
        paths = install(bed)
        body = {"chat": "c", "who": 1}
        cpu: dict[str, float] = {}
        latency: dict[str, float] = {}
        # interleaved rounds: every variant once per round, so that drift hits all alike
        for path in paths.values():
            for _ in range(5):
                call(bed.n8n, path, body)
        spent = dict.fromkeys(paths, 0.0)
        seconds: dict[str, list[float]] = {kind: [] for kind in paths}
        for _ in range(args.calls):
            for kind, path in paths.items():
                before = cpu_seconds(bed)
                seconds[kind].append(call(bed.n8n, path, body).seconds)
                time.sleep(0.05)  # n8n finishes the execution after it answered
                after = cpu_seconds(bed)
                if before is None or after is None:
                    raise SystemExit("no local n8n process: CPU time cannot be read")
                spent[kind] += after - before
        for kind in paths:
            cpu[kind] = round(spent[kind] * 1000 / args.calls, 2)
            latency[kind] = round(statistics.median(seconds[kind]) * 1000, 1)
        progress(f"{version} {engine}: {cpu}")
        at_once = {kind: at_once_answers(bed, paths[kind], args) for kind in PATHS}
    base = cpu["none"]
    return {
        "n8n": version,
        "expression_engine": engine if needs_node24(version) else "legacy",
        "load_average_1min": span.load(),
        "cpu_per_call_ms": cpu,
        "cpu_per_node_ms": {
            kind: round((ms - base) / REPEAT, 2)
            for kind, ms in cpu.items()
            if len(VARIANTS[kind]) == REPEAT
        },
        "median_answer_ms": latency,
        "at_once": args.at_once,
        "at_once_answer_ms": at_once,
    }


def at_once_answers(bed: Bed, path: str, args: argparse.Namespace) -> dict[str, float]:
    """`--at-once` callers, each sending 3 calls 0.3 s apart, all starting together (the load
    of debounce_bench's "keys at once"): the answers' median and max, in ms."""

    def one_caller(number: int) -> list[float]:
        seconds = []
        for who in range(3):
            if who:
                time.sleep(0.3)
            seconds.append(call(bed.n8n, path, {"chat": f"a{number}", "who": who}).seconds)
        return seconds

    time.sleep(1)
    with ThreadPoolExecutor(args.at_once) as pool:
        ms = [s * 1000 for seconds in pool.map(one_caller, range(args.at_once)) for s in seconds]
    return {"median": round(statistics.median(ms)), "max": round(max(ms))}


def report(results: list[dict[str, Any]], argv: Sequence[str], tree: str) -> str:
    lines = [
        "# What one node execution costs n8n's main process",
        "",
        measured(command("node_cost", argv)),
        "",
        f"Code: {tree}. CPU time of the n8n main process (user + system) per call, calls one "
        f"at a time; per node = (variant − none) / {REPEAT}.",
        "",
        "| n8n | expressions | kind | CPU per call | CPU per node | median answer |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        for kind, ms in r["cpu_per_call_ms"].items():
            per_node = r["cpu_per_node_ms"].get(kind)
            lines.append(
                f"| {r['n8n']} | {r['expression_engine']} | {kind} | {ms:.1f} ms | "
                f"{'—' if per_node is None else f'{per_node:.2f} ms'} | "
                f"{r['median_answer_ms'][kind]:.0f} ms |"
            )
    lines += [
        "",
        f"Answers when {results[0]['at_once']} callers call at once, 3 calls each 0.3 s apart "
        "(debounce_bench's ten keys at once), median / max:",
        "",
        "| n8n | expressions | " + " | ".join(PATHS) + " |",
        "|---|---|" + "---|" * len(PATHS),
    ]
    for r in results:
        lines.append(
            f"| {r['n8n']} | {r['expression_engine']} | "
            + " | ".join(
                f"{r['at_once_answer_ms'][k]['median']} / {r['at_once_answer_ms'][k]['max']} ms"
                for k in PATHS
            )
            + " |"
        )
    loads = ", ".join(f"{label(r)}: {r['load_average_1min']}" for r in results)
    lines += ["", f"Load average (1 min) before and after each run: {loads}"]
    return "\n".join(lines) + "\n"


def label(result: dict[str, Any]) -> str:
    return f"{result['n8n']} {result['expression_engine']}"


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--versions", default="2.41.1")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--expression-engines", default="default")
    parser.add_argument("--at-once", type=int, default=10)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    results = []
    for version in args.versions.split(","):
        for engine in args.expression_engines.split(","):
            if engine != "default" and not needs_node24(version):
                continue
            results.append(bench_version(version, engine, args))
    text = report(results, argv, tree_state())
    print(text)
    stem = args.out or RESULTS / f"node_cost-{date.today().isoformat()}"
    stem.with_suffix(".md").write_text(text)
    stem.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
