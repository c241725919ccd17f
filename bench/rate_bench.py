"""Benchmark the rate limit in a real n8n with a real Redis: fixed vs sliding vs throttle, and
the sliding window's accuracy. Prints a markdown table per n8n version. Not a test.

    .venv/bin/python -m bench.rate_bench [--versions 2.41.1,1.123.81] [--runs 30]
        [--bursts 3] [-o figures.json]

Per n8n version, one test bed. The bench workflow (Webhook → Hold → Work) is pushed plain and
gated five ways:
- `call`: the rate_limit_check sub-workflow called by an Execute Workflow node (how
  add-rate-limit gated a workflow before the inline chain; a fixed window);
- `fixed`, `sliding`: add-rate-limit --algorithm fixed|sliding, a limit no call reaches: the
  cost of an allowed check. Shuffled rounds (P1): median added latency over plain, and the Redis
  node executions per check, counted in the saved executions;
- throttle: add-rate-limit --on-denied wait, 5 per 2 s, 20 calls at once: wall time, the most
  body starts in any 2 s, and the Redis node executions a waiting call added per second waited;
- accuracy: bursts of 8 calls just before and after a window boundary (and half a window and a
  window later) against 5 per 4 s, `--bursts` times: the most body starts in any 4 s.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import figures
from bench.common import bench_workflow, cli, node, post, prepare, write_template
from bench.executions import Execution, matching, workflow_ids
from bench.lock_bench import WARM_UP, latency, summary
from n8n_lockkit.rewrite.wrap_nodes import call
from tests.testbed.endpoints import N8nInstance
from tests.testbed.session import running_testbed

DEFAULT_VERSIONS = "2.41.1,1.123.81"
SCOPE = "={{ $json.body.scope }}"
NO_LIMIT = ("--limit", "1000000", "--window-seconds", "60")
GATES = {
    "fixed": ("--algorithm", "fixed", *NO_LIMIT),
    "sliding": ("--algorithm", "sliding", *NO_LIMIT),
    "throttle": ("--limit", "5", "--window-seconds", "2", "--on-denied", "wait",
                 "--max-wait-seconds", "120"),
    "acc_fixed": ("--algorithm", "fixed", "--limit", "5", "--window-seconds", "4"),
    "acc_sliding": ("--algorithm", "sliding", "--limit", "5", "--window-seconds", "4"),
}  # fmt: skip
THROTTLE_CALLS = 20
BURST = 8
Figures = dict[str, Any]


def called_workflow(key: str) -> dict[str, Any]:
    """The bench workflow with a call of rate_limit_check between Webhook and Hold."""
    workflow = bench_workflow(key)
    for n in workflow["nodes"]:
        if n["name"] != "Webhook":
            n["position"][0] += 220
    values = {"scope": SCOPE, "limit": 1000000, "windowSeconds": 60}
    gate = node(key, "Rate Limit", "n8n-nodes-base.executeWorkflow", 1.2, 220,
                call("rate_limit_check", values))  # fmt: skip
    workflow["nodes"].insert(1, gate)
    workflow["connections"]["Webhook"] = {"main": [[{"node": "Rate Limit", "type": "main",
                                                     "index": 0}]]}  # fmt: skip
    workflow["connections"]["Rate Limit"] = {"main": [[{"node": "Hold", "type": "main",
                                                        "index": 0}]]}  # fmt: skip
    return workflow


def build(n8n: N8nInstance, root: Path, token: str) -> dict[str, str]:
    """Design → webhook path, every workflow pushed and published."""
    prepare(root, n8n)
    cli(root, "create-lock", "--include-rate-limit")
    paths = {"plain": f"rb_plain_{token}", "call": f"rb_call_{token}"}
    write_template(root, bench_workflow(paths["plain"]))
    write_template(root, called_workflow(paths["call"]))
    for design, flags in GATES.items():
        paths[design] = f"rb_{design}_{token}"
        write_template(root, bench_workflow(paths[design]))
        cli(root, "add-rate-limit", "--workflow-key", paths[design], "--scope-expression",
            SCOPE, *flags)  # fmt: skip
    cli(root, "push", "--env", "bench", "--activate")
    return paths


def saved(n8n: N8nInstance, root: Path, key: str, scope: str, count: int) -> list[Execution]:
    def wanted(e: Execution) -> bool:
        return bool(figures.webhook_body(e).get("scope") == scope)

    return matching(n8n, workflow_ids(root)[key], wanted, count, patience=60)


def redis_runs(execution: Execution) -> int:
    return figures.redis_runs_before(execution, float("inf"))


def body_starts(executions: Sequence[Execution]) -> list[float]:
    return sorted(
        figures.start(e, figures.BODY) for e in executions if figures.BODY in figures.run_data(e)
    )


def worst_count(starts: Sequence[float], window_ms: float) -> int:
    return max((sum(1 for u in starts if t <= u < t + window_ms) for t in starts), default=0)


def fire(n8n: N8nInstance, path: str, scope: str, count: int) -> float:
    """Seconds until `count` calls made at once have all answered."""
    began = time.monotonic()
    with ThreadPoolExecutor(count) as pool:
        list(pool.map(lambda _: post(n8n, path, {"scope": scope, "hold_ms": 0}), range(count)))
    return time.monotonic() - began


def throttle(n8n: N8nInstance, root: Path, path: str, token: str) -> Figures:
    scope = f"throttle-{token}"
    wall = fire(n8n, path, scope, THROTTLE_CALLS)
    executions = saved(n8n, root, path, scope, THROTTLE_CALLS)
    uncontended = min(redis_runs(e) for e in executions)
    per_second = []
    for e in executions:
        runs = figures.run_data(e)["Rate Limit Verdict"]
        waited_ms = float(runs[-1]["data"]["main"][0][0]["json"].get("waited_ms") or 0)
        if waited_ms > 0:
            per_second.append((redis_runs(e) - uncontended) / (waited_ms / 1000))
    return {
        "wall_s": wall,
        "worst_2s": worst_count(body_starts(executions), 2000),
        "completed": len(executions),
        "redis_per_wait_second": max(per_second, default=0.0),
        "redis_per_wait_second_mean": sum(per_second) / len(per_second) if per_second else 0.0,
    }


def accuracy(n8n: N8nInstance, root: Path, path: str, token: str, bursts: int) -> Figures:
    worst = 0
    allowed = 0
    for round_number in range(bursts):
        scope = f"acc-{token}-{round_number}"
        boundary = (time.time() // 4 + 2) * 4
        for offset in (-0.8, 0.1, 2.0, 4.1):
            time.sleep(max(0.0, boundary + offset - time.time()))
            fire(n8n, path, scope, BURST)
        starts = body_starts(saved(n8n, root, path, scope, 4 * BURST))
        worst = max(worst, worst_count(starts, 4000))
        allowed += len(starts)
    return {"worst_4s": worst, "allowed": allowed, "calls": bursts * 4 * BURST}


def bench_version(version: str, args: argparse.Namespace) -> Figures:
    with running_testbed(version) as (n8n, _), tempfile.TemporaryDirectory() as tmp:
        os.environ["N8N_API_KEY"] = n8n.api_key
        token = uuid.uuid4().hex[:6]
        root = Path(tmp) / "ws"
        paths = build(n8n, root, token)
        progress(f"n8n {version}: P1, {args.runs} shuffled rounds")
        designs = ["plain", "call", "fixed", "sliding"]
        scope = f"p1-{token}"
        timings = latency(n8n, [paths[d] for d in designs], args.runs, scope)
        result: Figures = {"n8n": version}
        for design in designs:
            path = paths[design]
            executions = saved(n8n, root, path, f"{scope}-{path}", WARM_UP + args.runs)
            result[design] = {
                **summary(timings[path]),
                "redis_runs": figures.percentile([redis_runs(e) for e in executions], 50),
            }
        progress(f"n8n {version}: throttle, {THROTTLE_CALLS} calls at once")
        result["throttle"] = throttle(n8n, root, paths["throttle"], token)
        progress(f"n8n {version}: accuracy, {args.bursts} boundary bursts")
        result["accuracy"] = {
            algorithm: accuracy(n8n, root, paths[f"acc_{algorithm}"], token, args.bursts)
            for algorithm in ("fixed", "sliding")
        }
        return result


def table(result: Figures) -> list[str]:
    plain = result["plain"]["median_ms"]
    lines = [
        f"| n8n {result['n8n']} (plain {plain:.0f} ms) | median added | p90 | "
        "Redis node executions per check |",
        "|---|---|---|---|",
    ]
    labels = {
        "call": "fixed, rate_limit_check call (before)",
        "fixed": "fixed, inline",
        "sliding": "sliding, inline",
    }
    for design, label in labels.items():
        f = result[design]
        runs = "1 (in the sub-workflow)" if design == "call" else f"{f['redis_runs']:.0f}"
        lines.append(
            f"| {label} | +{f['median_ms'] - plain:.0f} ms | {f['p90_ms']:.0f} ms | {runs} |"
        )
    t = result["throttle"]
    lines.append(
        f"| throttle 5 per 2 s, {THROTTLE_CALLS} at once | all {t['completed']} ran in "
        f"{t['wall_s']:.1f} s | most starts in 2 s: {t['worst_2s']} | per waiter-second: "
        f"{t['redis_per_wait_second_mean']:.2f} mean, {t['redis_per_wait_second']:.2f} max |"
    )
    for algorithm, a in result["accuracy"].items():
        lines.append(
            f"| accuracy, {algorithm}, 5 per 4 s, boundary bursts | most starts in 4 s: "
            f"{a['worst_4s']} ({a['worst_4s'] / 5:.1f} × L) | | {a['allowed']} of "
            f"{a['calls']} calls let through |"
        )
    return lines


def progress(message: str) -> None:
    print(f"[rate_bench] {message}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", default=DEFAULT_VERSIONS)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--bursts", type=int, default=3)
    parser.add_argument("-o", "--output", type=Path)
    args = parser.parse_args()
    results = [bench_version(v.strip(), args) for v in args.versions.split(",") if v.strip()]
    load = os.getloadavg()
    day = datetime.date.today().isoformat()
    print(f"Measured {day} with `.venv/bin/python -m bench.rate_bench` ({args.runs} rounds, "
          f"{args.bursts} burst rounds); load average at the end {load[0]:.1f}.\n")  # fmt: skip
    for result in results:
        print("\n".join(table(result)) + "\n")
    if args.output:
        args.output.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
