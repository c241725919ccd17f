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
import statistics
import sys
import uuid
from pathlib import Path

from bench.harness.calls import Body, rounds
from bench.harness.executions import by_id, listing, workflow_ids
from bench.harness.runs import BODY, items_out, named, redis_runs, start, sub_execution_id
from bench.harness.session import running_bed
from bench.harness.workspace import (
    Run,
    bench_workflow,
    checkout,
    cli,
    prepare,
    push,
    tree_cli,
    wrap_args,
    write_template,
)
from testbed.endpoints import N8nInstance

BASELINE = "74b8431"  # issue 12 landed; the templates still without index and counters
PRIMITIVES = ("lock_acquisition", "lock_release")


def setup(n8n: N8nInstance, root: Path, key: str, run: Run) -> None:
    """The bench workflow as `key`, wrapped in a lock by `run`'s n8nlock, pushed and active."""
    prepare(root, n8n, run)
    write_template(root, bench_workflow(key))
    run(root, "create-lock", "--force-overwrite")
    run(root, *wrap_args(key))
    push(root, run)


def redis_work(n8n: N8nInstance, root: Path, key: str) -> dict[str, tuple[int, int]]:
    """(Redis node executions, Redis items) of acquire and release in the newest call of the
    wrapped workflow `key`: in the primitives' executions it called, or inline (acquire before
    the body's first node, release after)."""
    ids = workflow_ids(root)
    call = listing(n8n, ids[key])[0]
    if named(call, "Lock Acquire") and not named(call, "Lock Take Ticket"):
        subs = {k: e for w in PRIMITIVES for k, e in by_id(n8n, ids[w]).items()}
        parts = {
            "acquire": redis_runs(subs[sub_execution_id(call, "Lock Acquire")]),
            "release": redis_runs(subs[sub_execution_id(call, "Lock Release")]),
        }
    else:
        body = start(call, BODY)
        runs = redis_runs(call)
        parts = {
            "acquire": [r for r in runs if r["startTime"] < body],
            "release": [r for r in runs if r["startTime"] >= body],
        }
    return {part: (len(runs), sum(items_out(r) for r in runs)) for part, runs in parts.items()}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def fresh_scope(_: int) -> Body:
    return {"scope": f"cost-{uuid.uuid4().hex[:8]}", "hold_ms": 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help="git ref to compare with")
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    with running_bed() as bed:
        n8n = bed.n8n
        tree = checkout(args.baseline, bed.tmp)
        current, base = bed.tmp / "current", bed.tmp / "baseline"
        setup(n8n, current, "bench_now", cli)
        setup(n8n, base, "bench_base", tree_cli(tree))
        order = ["bench_now", "bench_base"]
        calls = {key: (key, fresh_scope) for key in order}
        timings = rounds(n8n, calls, args.runs, order="mirrored")
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
