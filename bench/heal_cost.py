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
import os
import statistics
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from bench import figures
from bench.common import bench_workflow, cli, ms, post, prepare, write_template
from bench.designs import checkout, tree_cli, wrap_args
from bench.executions import Execution, by_id, listing, workflow_ids
from testbed.endpoints import N8nInstance
from testbed.session import running_testbed

BASELINE = "74b8431"  # issue 12 landed; the templates still without index and counters
PRIMITIVES = ("lock_acquisition", "lock_release")


def wrap_and_push(run: Any, root: Path, key: str) -> None:
    run(root, "create-lock", "--force-overwrite")
    run(root, *wrap_args(key))
    run(root, "push", "--env", "bench", "--activate")


def setup(n8n: N8nInstance, root: Path, key: str, run: Any) -> None:
    prepare(root, n8n, run)
    write_template(root, bench_workflow(key))
    wrap_and_push(run, root, key)


def redis_work(n8n: N8nInstance, root: Path, key: str) -> dict[str, tuple[int, int]]:
    """(Redis node executions, Redis items) of acquire and release in the newest call of the
    wrapped workflow `key`: in the primitives' executions it called, or inline (acquire before
    the body's first node, release after)."""
    ids = workflow_ids(root)
    call = listing(n8n, ids[key])[0]
    if figures.named(call, "Lock Acquire") and not figures.named(call, "Lock Take Ticket"):
        subs = {k: e for w in PRIMITIVES for k, e in by_id(n8n, ids[w]).items()}
        parts = {
            "acquire": redis_runs(subs[figures.sub_execution_id(call, "Lock Acquire")]),
            "release": redis_runs(subs[figures.sub_execution_id(call, "Lock Release")]),
        }
    else:
        body = figures.start(call, figures.BODY)
        runs = redis_runs(call)
        parts = {
            "acquire": [r for r in runs if r["startTime"] < body],
            "release": [r for r in runs if r["startTime"] >= body],
        }
    return {part: (len(runs), sum(items(r) for r in runs)) for part, runs in parts.items()}


def redis_runs(execution: Execution) -> list[dict[str, Any]]:
    names = figures.redis_nodes(execution)
    return [r for name, rs in figures.run_data(execution).items() if name in names for r in rs]


def items(run: dict[str, Any]) -> int:
    return len(((run.get("data") or {}).get("main") or [[]])[0] or [])


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
        setup(n8n, base, "bench_base", tree_cli(tree))
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
        print(f"  this checkout - baseline: {ms(now - then)} (median difference)")
        for label, root, key in (("baseline", base, "bench_base"),
                                 ("this checkout", current, "bench_now")):  # fmt: skip
            work = redis_work(n8n, root, key)
            parts = [f"{k}: {e} Redis node executions, {i} items" for k, (e, i) in work.items()]
            print(f"  {label}: " + "; ".join(parts))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
