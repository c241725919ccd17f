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

import argparse
import copy
import datetime
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import requests

from bench import floor_bench as fb
from bench.common import NS, report_text
from bench.executions import matching
from testbed.endpoints import N8nInstance
from testbed.session import running_testbed

Workflow = dict[str, Any]
Cut = Callable[[Workflow], None]


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


def api(n8n: N8nInstance, method: str, path: str, **kwargs: Any) -> Any:
    response = requests.request(
        method, f"{n8n.base_url}/api/v1{path}", timeout=60,
        headers={"X-N8N-API-KEY": n8n.api_key}, **kwargs,
    )  # fmt: skip
    response.raise_for_status()
    return response.json()


def deploy(n8n: N8nInstance, tmp: Path) -> tuple[list[fb.Target], dict[str, str]]:
    """floor_bench's targets, then the variants: targets and each variant's workflow id."""
    targets = fb.deploy(n8n, tmp, None)
    stored = {w["name"]: w["id"] for w in api(n8n, "GET", "/workflows?limit=250")["data"]}
    lock = api(n8n, "GET", f"/workflows/{stored[fb.KEYS[fb.LOCK]]}")
    ids: dict[str, str] = {}
    for label, cuts in VARIANTS.items():
        created = api(n8n, "POST", "/workflows", json=variant(lock, label, cuts))
        api(n8n, "POST", f"/workflows/{created['id']}/activate")
        ids[label] = str(created["id"])
        targets.append(fb.Target(label, label, tmp))
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
    started = time.monotonic()
    with running_testbed(version) as (n8n, _), tempfile.TemporaryDirectory() as tmp:
        os.environ["N8N_API_KEY"] = n8n.api_key
        targets, ids = deploy(n8n, Path(tmp))
        token = uuid.uuid4().hex[:8]
        fb.progress(f"n8n {version}: {runs} shuffled rounds of {len(targets)} workflows")
        load_before = os.getloadavg()[0]
        timings = fb.rounds(n8n, targets, runs, token)
        load_after = os.getloadavg()[0]
        saved = fb.saved_figures(n8n, targets[:3], token, runs)
        for mode in fb.MODES:
            for label, workflow_id in ids.items():
                found = matching(n8n, workflow_id, fb.counted(mode, token, label), runs)
                saved[mode][label] = fb.execution_figures(found[:runs])
        return {
            "n8n": version,
            "tree": fb.tree_state(),
            "timings_ms": {
                mode: {label: [s * 1000 for s in values] for label, values in by.items()}
                for mode, by in timings.items()
            },
            "executions": saved,
            "load": (load_before, load_after),
            "minutes": (time.monotonic() - started) / 60,
        }


def table(result: dict[str, Any], mode: str) -> list[str]:
    ms = result["timings_ms"][mode]
    plain = statistics.median(ms[fb.PLAIN])
    floor = statistics.median(ms[fb.FLOOR]) - plain
    lines = [
        f"| {mode} scope, n8n {result['n8n']} | median | added | added / floor (90 %) "
        "| nodes executed | Redis items | nodes' ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, values in ms.items():
        median = statistics.median(values)
        saved = result["executions"][mode].get(label, {})
        cells = [f"{median:.1f} ms", "–", "–"]
        if label != fb.PLAIN:
            low, high = fb.bootstrap(ms, label)
            cells[1:] = [
                f"+{median - plain:.1f} ms",
                f"{(median - plain) / floor:.2f}× ({low:.2f}–{high:.2f})",
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
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--versions", default=fb.DEFAULT_VERSIONS, help="n8n versions, commas")
    parser.add_argument("--runs", type=int, default=60, help="counted rounds (default 60)")
    parser.add_argument("--results", type=Path, default=fb.RESULTS, help="where the .md goes")
    args = parser.parse_args(argv)
    for version in args.versions.split(","):
        result = bench_version(version.strip(), args.runs)
        intro = (
            f"Measured {datetime.date.today()} on {os.cpu_count()} cores, n8n {version} at its "
            f"defaults, tree {result['tree']}; {args.runs} shuffled rounds after {fb.WARM_UP} to "
            f"warm up; load average {result['load'][0]:.1f} → {result['load'][1]:.1f}; "
            f"{result['minutes']:.1f} min. The lean_* rows are NOT safe locks: see the "
            "docstring of bench/lean_variants.py for what each cuts."
        )
        sections = [table(result, mode) for mode in fb.MODES]
        command = f".venv/bin/python -m bench.lean_variants {' '.join(argv or sys.argv[1:])}"
        text = report_text(command.strip(), intro, sections)
        print(text)
        (args.results / f"lean_variants-{version}.md").write_text(text)


if __name__ == "__main__":
    main()
