"""What the healing index and the statistics cost each acquire and release. Prints figures.

    .venv/bin/python -m bench.heal_cost [--baseline REF] [--runs 60]

Two copies of the same wrapped webhook workflow run in one n8n against one Redis: one with
the primitives and wrapping of this checkout, one with those of git ref REF (default: the
commit before the index and the counters). Calls alternate between them (A B B A …), so load
on the machine hits both alike. It reports the median wall time of each and, from the saved
executions of one call, how many Redis node executions and Redis items (commands) acquire
and release ran.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import requests
from ruamel.yaml import YAML

from bench.lock_bench import bench_workflow, cli, ms, post, prepare
from tests.testbed.endpoints import N8nInstance
from tests.testbed.session import running_testbed

REPO = Path(__file__).parents[1]
BASELINE = "74b8431"  # issue 12 landed; the templates still without index and counters
PRIMITIVES = ("lock_acquisition", "lock_release")


def baseline_cli(tree: Path, root: Path, *args: str) -> None:
    """Run the n8nlock of the baseline tree (its own package, this venv's dependencies)."""
    # -m puts the working directory first on sys.path, ahead of this checkout's install.
    command = [sys.executable, "-m", "n8n_lockkit", "--workspace", str(root), *args]
    result = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"baseline n8nlock {' '.join(args)} failed:\n{result.stderr}")


def checkout(ref: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "n8n_lockkit", "templates"],
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def wrap_and_push(run: Any, root: Path, key: str) -> None:
    run(root, "create-lock", "--force-overwrite")
    run(
        root,
        "add-lock-to-workflow",
        "--workflow-key",
        key,
        "--scope-expression",
        "={{ $json.body.scope }}",
        "--ttl-seconds",
        "60",
    )
    run(root, "push", "--env", "bench", "--activate")


def setup(n8n: N8nInstance, root: Path, key: str, run: Any) -> None:
    prepare(root, n8n)
    (root / "workflows" / "bench_plain.template.json").unlink()
    (root / "workflows" / "bench_locked.template.json").unlink()
    (root / "workflows" / f"{key}.template.json").write_text(json.dumps(bench_workflow(key)))
    wrap_and_push(run, root, key)


def redis_work(n8n: N8nInstance, root: Path) -> dict[str, tuple[int, int]]:
    """(Redis node executions, Redis items) of the newest execution of each primitive."""
    env = YAML(typ="safe").load((root / "envs" / "bench.yml").read_text())
    found = {}
    headers = {"X-N8N-API-KEY": n8n.api_key}
    for key in PRIMITIVES:
        workflow_id = str(env["workflows"][key]["id"])
        listing = requests.get(
            f"{n8n.base_url}/api/v1/executions",
            params={"workflowId": workflow_id, "limit": "1", "includeData": "true"},
            headers=headers,
            timeout=30,
        ).json()["data"][0]
        workflow = requests.get(
            f"{n8n.base_url}/api/v1/workflows/{workflow_id}", headers=headers, timeout=30
        ).json()
        redis = {n["name"] for n in workflow["nodes"] if n["type"] == "n8n-nodes-base.redis"}
        runs = listing["data"]["resultData"]["runData"]
        executions = [r for name, rs in runs.items() if name in redis for r in rs]
        items = sum(len((r.get("data") or {}).get("main", [[]])[0] or []) for r in executions)
        found[key] = (len(executions), items)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help="git ref to compare with")
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    with running_testbed() as (n8n, _), tempfile.TemporaryDirectory() as tmp:
        os.environ["N8N_API_KEY"] = n8n.api_key
        tree = checkout(args.baseline, Path(tmp))
        current, base = Path(tmp) / "current", Path(tmp) / "baseline"
        setup(n8n, current, "bench_now", cli)
        setup(n8n, base, "bench_base", lambda root, *a: baseline_cli(tree, root, *a))
        timings: dict[str, list[float]] = {"bench_now": [], "bench_base": []}
        order = ["bench_now", "bench_base"]
        for run in range(args.runs + 5):
            for key in order if run % 2 == 0 else reversed(order):
                seconds = post(n8n, key, {"scope": f"cost-{uuid.uuid4().hex[:8]}", "hold_ms": 0})
                if run >= 5:  # the first calls warm n8n's caches
                    timings[key].append(seconds)
        now, then = (statistics.median(timings[k]) for k in order)
        print(f"\nn8n {n8n.version}, {args.runs} alternating calls each, uncontended:")
        print(f"  wrapped, baseline {args.baseline}: median {ms(then)}")
        print(f"  wrapped, this checkout:          median {ms(now)}")
        print(f"  added by the index and the counters: {ms(now - then)} (median difference)")
        for label, root in (("baseline", base), ("this checkout", current)):
            work = redis_work(n8n, root)
            parts = [f"{k}: {e} Redis node executions, {i} items" for k, (e, i) in work.items()]
            print(f"  {label}: " + "; ".join(parts))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
