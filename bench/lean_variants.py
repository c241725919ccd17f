"""What would the inline lock cost without some of its items and If nodes? (issue 20, format 4)
Not a test.

    .venv/bin/python -m bench.lean_variants [--versions 2.41.1] [--runs 60]
        [--results bench/results]

floor_bench's plain, floor and lock workflows, and beside them variants of the lock as pushed,
each with parts cut out of it (JSON surgery on the workflow n8n stored, pushed as a new
workflow through the public API). The variants are NOT safe locks: they measure what a part
costs on the uncontended path, so that a leaner key layout (format 4) is designed against
numbers. What each cut removes:

- meta: the lane's copy of the holder record (Lock Hold and Lock Release write one item fewer;
  the operator commands and format-2 callers read it today);
- arrived: the `arrived` counter on Lock Take Ticket (one item fewer, and no item expires, so
  the node's TTL is a constant: one expression per item fewer);
- index: the cleanup handler's index of the execution's locks (Lock Hold: one item fewer);
- ifs: Lock Input Valid? and Lock Waited? (the true path, resp. the false path, linked
  straight through: two If nodes fewer; 44baa4e also had Lock Release In Time?, which the
  release has no more).

Every workflow is called in floor_bench's shuffled rounds, both scope modes; each variant is
called once before the rounds and must answer as the lock does. Reported per scope mode: median,
ms added over plain, added / added(floor) with floor_bench's 90 % bootstrap interval, and from
the saved executions the nodes executed, Redis items and the nodes' summed ms.
"""

from __future__ import annotations

import copy
import re
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import requests

from bench.floor_bench import DEFAULT_VERSIONS, calls, in_ms, saved_figures
from bench.floor_workflows import KEYS, LOCK, MODES, counted, deploy
from bench.harness.calls import WARM_UP
from bench.harness.executions import matching
from bench.harness.results import (
    add_outputs,
    command,
    measured,
    parser_for,
    progress_for,
    report_text,
    tree_state,
    versions,
    write_report,
)
from bench.harness.runs import execution_figures
from bench.harness.session import Span, running_bed
from bench.harness.stats import PLAIN, floor_latency
from bench.harness.workspace import NS, Target
from testbed.client import N8nClient
from testbed.endpoints import N8nInstance

Workflow = dict[str, Any]
Cut = Callable[[Workflow], None]
progress = progress_for("lean_variants")


def _node(workflow: Workflow, name: str) -> dict[str, Any]:
    return next(n for n in workflow["nodes"] if n["name"] == name)


def _replace(workflow: Workflow, name: str, field: str, pattern: str) -> None:
    """Removes `pattern` (a regular expression) from node `name`'s parameter `field`."""
    parameters = _node(workflow, name)["parameters"]
    parameters[field], count = re.subn(pattern, "", parameters[field])
    if count != 1:
        raise SystemExit(f"lean_variants: {name} no longer has {pattern!r}: update the cut")


def _bypass(workflow: Workflow, name: str, output: int) -> None:
    """Removes node `name`; what linked to it links to what its `output` linked to."""
    connections = workflow["connections"]
    onward = connections.pop(name, {}).get("main", [])
    targets = onward[output] if output < len(onward) else []
    for links in connections.values():
        for outputs in links.get("main", []):
            if outputs and any(link["node"] == name for link in outputs):
                outputs[:] = [x for x in outputs if x["node"] != name] + copy.deepcopy(targets)
    workflow["nodes"] = [n for n in workflow["nodes"] if n["name"] != name]


def cut_meta(workflow: Workflow) -> None:
    # Lock Decide also reads the copy (read.js, inlined): only the write goes.
    written = r"\{ key: `\$\{ctx\.base\}:meta:\$\{look[^\n]*\},"
    _replace(workflow, "Lock Decide", "jsonOutput", written)
    _replace(workflow, "Lock Release Verdict", "jsonOutput", r"\{ key: `\$\{base\}:meta:[^\n]*\},")


def cut_arrived(workflow: Workflow) -> None:
    _replace(
        workflow, "Lock Context", "jsonOutput", r"\{ key: `n8nlock:stats:[^\n]*:arrived:[^\n]*\},"
    )
    parameters = _node(workflow, "Lock Take Ticket")["parameters"]
    parameters["expire"] = False
    parameters.pop("ttl", None)


def cut_index(workflow: Workflow) -> None:
    _replace(workflow, "Lock Decide", "jsonOutput", r"\{ key: ctx\.index_key, [^\n]*\},")


def cut_ifs(workflow: Workflow) -> None:
    _bypass(workflow, "Lock Input Valid?", 0)
    _bypass(workflow, "Lock Waited?", 1)


VARIANTS: dict[str, tuple[Cut, ...]] = {
    "lean_meta": (cut_meta,),
    "lean_items": (cut_meta, cut_arrived, cut_index),
    "lean_ifs": (cut_ifs,),
    "lean_all": (cut_meta, cut_arrived, cut_index, cut_ifs),
}


def variant(lock: Workflow, key: str, cuts: Sequence[Cut]) -> Workflow:
    """The lock as n8n stored it, renamed to `key` (its webhook path too), with `cuts` made."""
    workflow = copy.deepcopy({k: lock[k] for k in ("nodes", "connections")})
    workflow |= {"name": key, "settings": {"executionOrder": "v1"}}
    for node in workflow["nodes"]:
        node["id"] = str(uuid.uuid5(NS, f"{key}:{node['name']}"))
        if node["type"] == "n8n-nodes-base.webhook":
            node["parameters"]["path"] = key
        if "webhookId" in node:
            node["webhookId"] = str(uuid.uuid5(NS, f"{key}:{node['name']}:hook"))
    for cut in cuts:
        cut(workflow)
    return workflow


def deploy_variants(n8n: N8nInstance, tmp: Path) -> tuple[list[Target], dict[str, str]]:
    """floor_bench's targets, then the variants: targets and each variant's workflow id."""
    targets = deploy(n8n, tmp, None)
    client = N8nClient(n8n)
    try:
        stored = {w["name"]: w["id"] for w in client.api("GET", "/workflows?limit=250")["data"]}
        lock = client.api("GET", f"/workflows/{stored[KEYS[LOCK]]}")
        ids: dict[str, str] = {}
        for label, cuts in VARIANTS.items():
            created = client.create_workflow(variant(lock, label, cuts))
            client.api("POST", f"/workflows/{created['id']}/activate")
            ids[label] = str(created["id"])
            targets.append(Target(label, label, tmp))
    finally:
        client.close()
    for label in ids:  # n8n registers a new webhook a moment after its activation
        for _ in range(20):
            answer = requests.post(f"{n8n.base_url}/webhook/{label}", json={"scope": "check"})
            if answer.status_code != 404:
                break
            time.sleep(0.5)
        if answer.status_code != 200:
            raise SystemExit(f"lean_variants: {label} answered {answer.status_code}")
    return targets, ids


def bench_version(version: str, runs: int) -> dict[str, Any]:
    run = Span()
    with running_bed(version) as bed:
        targets, ids = deploy_variants(bed.n8n, bed.tmp)
        token = uuid.uuid4().hex[:8]
        progress(f"n8n {version}: {runs} shuffled rounds of {len(targets)} workflows")
        load = Span()
        timings = calls(bed.n8n, targets, runs, token, progress)
        load_after = load.load()
        saved = saved_figures(bed.n8n, targets[:3], token, runs)
        for mode in MODES:
            for label, workflow_id in ids.items():
                found = matching(bed.n8n, workflow_id, counted(mode, token, label), runs)
                saved[mode][label] = execution_figures(found[:runs])
        return {
            "n8n": version,
            "tree": tree_state(),
            "timings_ms": in_ms(timings),
            "executions": saved,
            "load": tuple(load_after),
            "minutes": run.seconds() / 60,
        }


def table(result: dict[str, Any], mode: str) -> list[str]:
    ms = result["timings_ms"][mode]
    latency = floor_latency(ms, set(ms) - {PLAIN})
    lines = [
        f"| {mode} scope, n8n {result['n8n']} | median | added | added / floor (90 %) "
        "| nodes executed | Redis items | nodes' ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, f in latency.items():
        saved = result["executions"][mode].get(label, {})
        cells = [f"{f['median_ms']:.1f} ms", "–", "–"]
        if label != PLAIN:
            low, high = f["floor_ratio_90"]
            cells[1:] = [
                f"+{f['added_ms']:.1f} ms",
                f"{f['floor_ratio']:.2f}× ({low:.2f}–{high:.2f})",
            ]
        counts = [
            saved.get("nodes_executed"),
            saved.get("redis_items"),
            saved.get("node_time_sum_ms"),
        ]
        cells += ["–" if c is None else f"{c:.0f}" for c in counts]
        lines.append(f"| {label} | {' | '.join(cells)} |")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = parser_for(__doc__, DEFAULT_VERSIONS, 60)
    add_outputs(parser, "the .md", figures=False)
    args = parser.parse_args(argv)
    for version in versions(args.versions):
        result = bench_version(version, args.runs)
        intro = (
            f"{measured()}, n8n {version} at its "
            f"defaults, tree {result['tree']}; {args.runs} shuffled rounds after {WARM_UP} to "
            f"warm up; load average {result['load'][0]:.1f} → {result['load'][1]:.1f}; "
            f"{result['minutes']:.1f} min. The lean_* rows are NOT safe locks: see the "
            "docstring of bench/lean_variants.py for what each cuts."
        )
        sections = [table(result, mode) for mode in MODES]
        text = report_text(command("lean_variants", argv), intro, sections)
        print(text)
        write_report(args.results, f"lean_variants-{version}", text)


if __name__ == "__main__":
    main()
