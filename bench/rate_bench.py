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
  window later) against 5 per 4 s, `--bursts` times: the most body starts in any 4 s;
- bursts: 10 calls at once against 5 per 30 s (`burst`), against 10 per 30 s at a cost of 2 each
  (`burst_cost`), and against two limits, 5 per 30 s on the scope and 6 per 30 s on a second
  scope (`burst_composed`), `--bursts` times each: how many ran their body (exactly 5 is exact).
  After each composed burst, 10 more calls to a workflow gated only by the second scope's limit:
  the 5 calls the first limit refused must not have spent its budget, so exactly 1 runs;
- the primitive (`call_burst`): the same burst of 10 at 5 per 30 s through rate_limit_check.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.harness.calls import WARM_UP, burst, uncontended
from bench.harness.executions import in_scope, matching, workflow_ids
from bench.harness.results import progress_for, versions
from bench.harness.runs import BODY, Execution, end, redis_runs, run_data, start
from bench.harness.session import running_bed
from bench.harness.stats import median_p90, percentile
from bench.harness.workspace import bench_workflow, cli, node, prepare, push, write_template
from n8n_lockkit.rewrite.wrapping.nodes import call
from testbed.endpoints import N8nInstance

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
    "burst": ("--limit", "5", "--window-seconds", "30"),
    "burst_cost": ("--limit", "10", "--window-seconds", "30", "--cost-expression", "2"),
    "burst_composed": ("--limit", "5", "--window-seconds", "30"),
    "burst_second": ("--limit", "6", "--window-seconds", "30"),
}  # fmt: skip
SECOND_SCOPE = "={{ $json.body.scope + '-second' }}"
# A second limit on another scope: the composed workflow is gated by both, burst_second by this.
SECOND = {"burst_composed": ("--limit", "6", "--window-seconds", "30")}
THROTTLE_CALLS = 20
THROTTLE_LIMIT, THROTTLE_WINDOW_S = 5, 2
BURST = 8
BURST_CALLS = 10
Figures = dict[str, Any]
progress = progress_for("rate_bench")


def called_workflow(key: str, limit: int = 1000000, window_seconds: int = 60) -> dict[str, Any]:
    """The bench workflow with a call of rate_limit_check between Webhook and Hold; a refused
    call ends at an If node before Hold."""
    workflow = bench_workflow(key)
    for n in workflow["nodes"]:
        if n["name"] != "Webhook":
            n["position"][0] += 440
    values = {"scope": SCOPE, "limit": limit, "windowSeconds": window_seconds}
    gate = node(key, "Rate Limit", "n8n-nodes-base.executeWorkflow", 1.2, 220,
                call("rate_limit_check", values))  # fmt: skip
    allowed = node(key, "Allowed?", "n8n-nodes-base.if", 2, 440, if_allowed())
    refused = node(key, "Refused", "n8n-nodes-base.noOp", 1, 660, {})
    refused["position"][1] = 200
    workflow["nodes"][1:1] = [gate, allowed, refused]
    workflow["connections"]["Webhook"] = {"main": [[{"node": "Rate Limit", "type": "main",
                                                     "index": 0}]]}  # fmt: skip
    workflow["connections"]["Rate Limit"] = {"main": [[{"node": "Allowed?", "type": "main",
                                                        "index": 0}]]}  # fmt: skip
    workflow["connections"]["Allowed?"] = {"main": [
        [{"node": "Hold", "type": "main", "index": 0}],
        [{"node": "Refused", "type": "main", "index": 0}],
    ]}  # fmt: skip
    return workflow


def if_allowed() -> dict[str, Any]:
    """If node parameters: `$json.allowed` is true."""
    operator = {"type": "boolean", "operation": "true", "singleValue": True}
    condition = {"id": "allowed", "leftValue": "={{ $json.allowed }}", "rightValue": "",
                 "operator": operator}  # fmt: skip
    return {
        "conditions": {
            "options": {"caseSensitive": True, "leftValue": "", "typeValidation": "strict"},
            "conditions": [condition],
            "combinator": "and",
        },
        "options": {},
    }


def build(n8n: N8nInstance, root: Path, token: str) -> dict[str, str]:
    """Design → webhook path, every workflow pushed and published."""
    prepare(root, n8n)
    cli(root, "create-lock", "--include-rate-limit")
    paths = {d: f"rb_{d}_{token}" for d in ("plain", "call", "call_burst")}
    write_template(root, bench_workflow(paths["plain"]))
    write_template(root, called_workflow(paths["call"]))
    write_template(root, called_workflow(paths["call_burst"], 5, 30))
    for design, flags in GATES.items():
        paths[design] = f"rb_{design}_{token}"
        write_template(root, bench_workflow(paths[design]))
        scope = SECOND_SCOPE if design == "burst_second" else SCOPE
        cli(root, "add-rate-limit", "--workflow-key", paths[design], "--scope-expression",
            scope, *flags)  # fmt: skip
        if design in SECOND:
            cli(root, "add-rate-limit", "--workflow-key", paths[design], "--scope-expression",
                SECOND_SCOPE, *SECOND[design])  # fmt: skip
    push(root)
    return paths


def saved(n8n: N8nInstance, root: Path, key: str, scope: str, count: int) -> list[Execution]:
    return matching(n8n, workflow_ids(root)[key], in_scope({scope}), count, patience=60)


def gate_to_body_ms(execution: Execution) -> float:
    """From the end of the chain's last look at the clock (Rate Limit Outcome, or Woken after
    a sleep) to the body's start: what the slots' margin must cover."""
    runs = run_data(execution)
    gates = [end(execution, name) for name in ("Rate Limit Outcome", "Rate Limit Woken")
             if name in runs]  # fmt: skip
    return start(execution, BODY) - max(gates)


def body_starts(executions: Sequence[Execution]) -> list[float]:
    return sorted(start(e, BODY) for e in executions if BODY in run_data(e))


def worst_count(starts: Sequence[float], window_ms: float) -> int:
    return max((sum(1 for u in starts if t <= u < t + window_ms) for t in starts), default=0)


def fire(n8n: N8nInstance, path: str, scope: str, count: int) -> float:
    """Seconds until `count` calls made at once have all answered."""
    return burst(n8n, path, [{"scope": scope, "hold_ms": 0}] * count).wall_seconds


def throttle(n8n: N8nInstance, root: Path, path: str, token: str) -> Figures:
    scope = f"throttle-{token}"
    wall = fire(n8n, path, scope, THROTTLE_CALLS)
    executions = saved(n8n, root, path, scope, THROTTLE_CALLS)
    uncontended = min(len(redis_runs(e)) for e in executions)
    per_second = []
    for e in executions:
        runs = run_data(e)["Rate Limit Verdict"]
        waited_ms = float(runs[-1]["data"]["main"][0][0]["json"].get("waited_ms") or 0)
        if waited_ms > 0:
            per_second.append((len(redis_runs(e)) - uncontended) / (waited_ms / 1000))
    starts = body_starts(executions)
    rounds = -(-THROTTLE_CALLS // THROTTLE_LIMIT) - 1
    lags = [gate_to_body_ms(e) for e in executions if BODY in run_data(e)]
    return {
        "gate_to_body_ms": {"p50": percentile(lags, 50), "max": max(lags, default=0.0)},
        "wall_s": wall,
        "span_s": (starts[-1] - starts[0]) / 1000 if starts else 0.0,
        "ideal_span_s": rounds * THROTTLE_WINDOW_S,
        "worst_2s": worst_count(starts, THROTTLE_WINDOW_S * 1000),
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


def bodies(n8n: N8nInstance, root: Path, path: str, scope: str, count: int) -> int:
    """How many of `count` calls made at once with `scope` ran their body."""
    fire(n8n, path, scope, count)
    return len(body_starts(saved(n8n, root, path, scope, count)))


def bursts(n8n: N8nInstance, root: Path, paths: dict[str, str], token: str, rounds: int) -> Figures:
    """Bodies run per burst of BURST_CALLS, for each burst design (a fresh scope each)."""
    result: Figures = {}
    for design in ("burst", "burst_cost", "burst_composed", "call_burst"):
        ran = []
        spent = []
        for round_number in range(rounds):
            scope = f"{design}-{token}-{round_number}"
            ran.append(bodies(n8n, root, paths[design], scope, BURST_CALLS))
            if design == "burst_composed":
                spent.append(bodies(n8n, root, paths["burst_second"], scope, BURST_CALLS))
        result[design] = {"ran": ran, "calls": BURST_CALLS}
        if spent:
            result[design]["second_after"] = spent
    return result


def bench_version(version: str, args: argparse.Namespace) -> Figures:
    with running_bed(version) as bed:
        n8n, token, root = bed.n8n, uuid.uuid4().hex[:6], bed.tmp / "ws"
        paths = build(n8n, root, token)
        result: Figures = {"n8n": version}
        progress(f"n8n {version}: bursts of {BURST_CALLS}, {args.bursts} rounds")
        result["bursts"] = bursts(n8n, root, paths, token, args.bursts)
        progress(f"n8n {version}: throttle, {THROTTLE_CALLS} calls at once")
        result["throttle"] = throttle(n8n, root, paths["throttle"], token)
        if args.only_limits:
            return result
        progress(f"n8n {version}: P1, {args.runs} shuffled rounds")
        designs = ["plain", "call", "fixed", "sliding"]
        scope = f"p1-{token}"
        timings = uncontended(n8n, [paths[d] for d in designs], args.runs, scope)
        for design in designs:
            path = paths[design]
            executions = saved(n8n, root, path, f"{scope}-{path}", WARM_UP + args.runs)
            result[design] = {
                **median_p90(timings[path]),
                "redis_runs": percentile([len(redis_runs(e)) for e in executions], 50),
            }
        progress(f"n8n {version}: accuracy, {args.bursts} boundary bursts")
        result["accuracy"] = {
            algorithm: accuracy(n8n, root, paths[f"acc_{algorithm}"], token, args.bursts)
            for algorithm in ("fixed", "sliding")
        }
        return result


def limits_table(result: Figures) -> list[str]:
    """The throttle and the bursts: how close to the limit's own speed and count."""
    t = result["throttle"]
    lines = [
        f"| n8n {result['n8n']} | figure | target |",
        "|---|---|---|",
        f"| throttle {THROTTLE_LIMIT} per {THROTTLE_WINDOW_S} s, {THROTTLE_CALLS} at once "
        f"(on-denied wait) | first to last body start {t['span_s']:.1f} s (ideal "
        f"{t['ideal_span_s']:.0f} s, {t['span_s'] / t['ideal_span_s']:.2f} ×); all "
        f"{t['completed']} answered in {t['wall_s']:.1f} s; most starts in "
        f"{THROTTLE_WINDOW_S} s: {t['worst_2s']}; Redis node executions per second waited: "
        f"{t['redis_per_wait_second_mean']:.2f} mean, {t['redis_per_wait_second']:.2f} max; "
        f"last look at the clock to body start {t['gate_to_body_ms']['p50']:.0f} ms median, "
        f"{t['gate_to_body_ms']['max']:.0f} ms max | "
        f"≤ 1.25 × ideal, ≤ {THROTTLE_LIMIT} in any {THROTTLE_WINDOW_S} s |",
    ]
    labels = {
        "burst": "5 per 30 s",
        "burst_cost": "10 per 30 s, cost 2 each",
        "burst_composed": "5 per 30 s and 6 per 30 s on a second scope",
        "call_burst": "5 per 30 s, the rate_limit_check primitive",
    }
    for design, label in labels.items():
        b = result["bursts"][design]
        ran = ", ".join(str(n) for n in b["ran"])
        extra = ""
        if "second_after" in b:
            after = ", ".join(str(n) for n in b["second_after"])
            extra = f"; then {b['calls']} calls on the second scope alone ran: {after} (exact: 1)"
        lines.append(
            f"| burst of {b['calls']} at once, {label} | bodies run: {ran}{extra} | exactly 5 |"
        )
    return lines


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
    for algorithm, a in result["accuracy"].items():
        lines.append(
            f"| accuracy, {algorithm}, 5 per 4 s, boundary bursts | most starts in 4 s: "
            f"{a['worst_4s']} ({a['worst_4s'] / 5:.1f} × L) | | {a['allowed']} of "
            f"{a['calls']} calls let through |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", default=DEFAULT_VERSIONS)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--bursts", type=int, default=3)
    parser.add_argument("-o", "--output", type=Path)
    only = "only the throttle and the bursts (no latency, no accuracy)"
    parser.add_argument("--only-limits", action="store_true", help=only)
    args = parser.parse_args()
    results = [bench_version(version, args) for version in versions(args.versions)]
    load = os.getloadavg()
    day = datetime.date.today().isoformat()
    rounds = "" if args.only_limits else f"{args.runs} rounds, "
    print(f"Measured {day} with `.venv/bin/python -m bench.rate_bench` ({rounds}"
          f"{args.bursts} burst rounds); load average at the end {load[0]:.1f}.\n")  # fmt: skip
    for result in results:
        print("\n".join(limits_table(result)) + "\n")
        if not args.only_limits:
            print("\n".join(table(result)) + "\n")
    if args.output:
        args.output.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
