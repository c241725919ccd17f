"""Benchmark lock engine v2 against the seed design in a real n8n with a real Redis; prints the
figures of issue 8 side by side. Not a test.

    .venv/bin/python -m bench.lock_bench [--versions 2.41.1,1.123.81] [--runs 60]
        [--callers 10] [--hold-ms 300] [--fairness-seconds 60] [--quick] [-o figures.json]

Per n8n version, one test bed; both designs (bench.designs) run in it against one Redis:
- P1: the bench workflow plain, wrapped by the seed and by v2, called in shuffled rounds
  (uncontended): median and p90 latency, wrapped / plain and the added ms.
- P2: `--callers` callers hold one scope for `--hold-ms` each: efficiency = N × hold / wall,
  and from the saved executions the handoff gap (lock free → next body starts) and overlaps.
- P3: six clients loop on one scope for `--fairness-seconds`: completions per client (max/min),
  overtakes among executions that waited together, Redis node executions per second waited.
- The cost of each node of one uncontended v2 call (median over the P1 calls).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import figures
from bench.designs import PLAIN, SEED_REF, seed_design, v2_design
from bench.harness.calls import WARM_UP, burst, post, uncontended
from bench.harness.executions import by_id, in_scope, matching, workflow_ids
from bench.harness.results import command, measured, progress_for, versions, write_figures
from bench.harness.runs import Execution, node_costs, webhook_body
from bench.harness.session import running_bed
from bench.harness.stats import median_p90
from bench.harness.workspace import Target
from testbed.endpoints import N8nInstance

DEFAULT_VERSIONS = "2.41.1,1.123.81"
FAIRNESS_CLIENTS = 6
LOCK_NODE = "Lock "  # the engine's nodes; the others are the bench workflow's own
QUICK = {"runs": 8, "callers": 4, "hold_ms": 300, "fairness_seconds": 8}
FULL = {"runs": 60, "callers": 10, "hold_ms": 300, "fairness_seconds": 60}
V2_BUILDS = {
    "engine": "engine.acquire/release inline, laid out by bench.designs",
    "cli": "the bench workflow wrapped by this checkout's add-lock-to-workflow",
}
Figures = dict[str, Any]
ToHolder = Callable[[Execution], figures.Holder]
progress = progress_for("lock_bench")


def contended(n8n: N8nInstance, path: str, scope: str, callers: int, hold_ms: int) -> float:
    """Efficiency = N × hold / wall for `callers` calls that all start at once."""
    calls = burst(n8n, path, [{"scope": scope, "hold_ms": hold_ms}] * callers)
    return callers * hold_ms / 1000 / calls.wall_seconds


def fairness(n8n: N8nInstance, path: str, scope: str, seconds: float, hold_ms: int) -> list[int]:
    """Completions per client of FAIRNESS_CLIENTS clients that call again as soon as answered."""
    deadline = time.monotonic() + seconds

    def client(_: int) -> int:
        done = 0
        while time.monotonic() < deadline:
            post(n8n, path, {"scope": scope, "hold_ms": hold_ms})
            done += 1
        return done

    with ThreadPoolExecutor(FAIRNESS_CLIENTS) as pool:
        return list(pool.map(client, range(FAIRNESS_CLIENTS)))


def holder_reader(n8n: N8nInstance, design: Target) -> ToHolder:
    """How to read a design's executions; a sub-workflow form's locks run in the executions
    of its primitives."""
    ids = workflow_ids(design.root)
    primitives = [ids[key] for key in ("lock_acquisition", "lock_release") if key in ids]
    subs = {key: e for workflow_id in primitives for key, e in by_id(n8n, workflow_id).items()}
    return lambda execution: figures.holder(execution, subs)


def design_figures(
    n8n: N8nInstance, design: Target, scopes: dict[str, str], counts: dict[str, int]
) -> tuple[Figures, list[Execution]]:
    """P2 and P3 figures of one design from its saved executions; also its P1 executions."""
    workflow_id = workflow_ids(design.root)[design.key]
    found = matching(n8n, workflow_id, in_scope(set(scopes.values())), sum(counts.values()))
    saved = {
        phase: [e for e in found if webhook_body(e).get("scope") == scope]
        for phase, scope in scopes.items()
    }
    to_holder = holder_reader(n8n, design)
    holders = {phase: [to_holder(e) for e in found] for phase, found in saved.items()}
    uncontended_runs = statistics.median(h.acquire_redis_runs for h in holders["p1"])
    handoff = figures.handoff(holders["p2"])
    order = figures.service_order(holders["p3"])
    p3_handoff = figures.handoff(holders["p3"])
    return {
        "p2_saved": len(holders["p2"]),
        # where P2's wall time goes: before the first body, each holder's turn, the handoffs
        "p2_first_entry_ms": first_entry(holders["p2"]),
        "p2_turn_median_ms": statistics.median(h.released_ms - h.entered_ms for h in holders["p2"]),
        "gap_median_ms": handoff.median_ms,
        "gap_p99_ms": handoff.p99_ms,
        "overlaps": handoff.overlaps,
        "p3_saved": len(holders["p3"]),
        "p3_overlaps": p3_handoff.overlaps,
        "p3_gap_median_ms": p3_handoff.median_ms,
        "inverted_pairs": order.inverted,
        "pairs_in_line_together": order.comparable,
        "inversion_fraction": order.fraction,
        "uncontended_acquire_redis_runs": uncontended_runs,
        "redis_per_wait_second": figures.redis_per_wait_second(holders["p3"], uncontended_runs),
    }, saved["p1"]


def first_entry(holders: Sequence[figures.Holder]) -> float:
    """ms from the first caller lining up to the first body starting."""
    return min(h.entered_ms for h in holders) - min(h.lined_up_ms for h in holders)


def bench_version(version: str, args: argparse.Namespace) -> Figures:
    with running_bed(version) as bed:
        n8n = bed.n8n
        designs = [seed_design(n8n, bed.tmp, args.baseline), v2_design(n8n, bed.tmp, args.v2_build)]
        token = uuid.uuid4().hex[:8]
        progress(f"n8n {version}: P1, {args.runs} shuffled rounds")
        timings = uncontended(n8n, [PLAIN, *(d.key for d in designs)], args.runs, f"p1-{token}")
        result: Figures = {"n8n": version, "plain": median_p90(timings[PLAIN])}
        efficiency: dict[str, float] = {}
        completions: dict[str, list[int]] = {}
        for design in designs:
            progress(f"n8n {version}: P2 and P3, {design.label}")
            scope = f"{design.label}-{token}"
            efficiency[design.label] = contended(
                n8n, design.key, f"p2-{scope}", args.callers, args.hold_ms
            )
            completions[design.label] = fairness(
                n8n, design.key, f"p3-{scope}", args.fairness_seconds, args.hold_ms
            )
        progress(f"n8n {version}: reading the saved executions")
        for design in designs:
            scope = f"{design.label}-{token}"
            scopes = {"p1": f"p1-{token}-{design.key}", "p2": f"p2-{scope}", "p3": f"p3-{scope}"}
            counts = {
                "p1": WARM_UP + args.runs,
                "p2": args.callers,
                "p3": sum(completions[design.label]),
            }
            found, p1_saved = design_figures(n8n, design, scopes, counts)
            calls = median_p90(timings[design.key])
            result[design.label] = {
                **calls,
                "ratio": calls["median_ms"] / result["plain"]["median_ms"],
                "added_ms": calls["median_ms"] - result["plain"]["median_ms"],
                "efficiency": efficiency[design.label],
                "completions": completions[design.label],
                "spread": figures.spread(completions[design.label]),
                **found,
            }
            if design.label == "v2":
                result["v2_node_costs_ms"] = node_costs(p1_saved[: args.runs])
        return result


# figure, target, how to read it from a design's figures, whether v2 meets the target
Row = tuple[str, str, Callable[[Figures], str], Callable[[Figures], bool] | None]


def rows(args: argparse.Namespace, plain: dict[str, float]) -> list[Row]:
    n, hold = args.callers, args.hold_ms
    plain_ms = f"plain {plain['median_ms']:.0f} / {plain['p90_ms']:.0f} ms"
    return [
        ("P1 median wrapped / plain", "≤ 1.5×", lambda f: f"{f['ratio']:.2f}×",
         lambda f: f["ratio"] <= 1.5),
        ("P1 added by the lock (median)", "≤ +80 ms", lambda f: f"+{f['added_ms']:.0f} ms",
         lambda f: f["added_ms"] <= 80),
        (f"P1 median / p90 wrapped ({plain_ms})", "",
         lambda f: f"{f['median_ms']:.0f} / {f['p90_ms']:.0f} ms", None),
        (f"P2 efficiency, N = {n}, hold {hold} ms", "≥ 0.85", lambda f: f"{f['efficiency']:.2f}",
         lambda f: f["efficiency"] >= 0.85),
        ("P2 per holder: first entry / turn (body + release) median", "",
         lambda f: f"{f['p2_first_entry_ms']:.0f} / {f['p2_turn_median_ms']:.0f} ms", None),
        ("handoff gap median / p99", "≤ 40 ms median",
         lambda f: f"{f['gap_median_ms']:.0f} / {f['gap_p99_ms']:.0f} ms",
         lambda f: f["gap_median_ms"] <= 40),
        ("overlapping bodies (P2 + P3)", "0", lambda f: f"{f['overlaps'] + f['p3_overlaps']}",
         lambda f: f["overlaps"] + f["p3_overlaps"] == 0),
        (f"P3 max/min completions, {FAIRNESS_CLIENTS} clients", "≤ 1.2",
         lambda f: f"{f['spread']:.2f} ({'/'.join(map(str, f['completions']))})",
         lambda f: f["spread"] <= 1.2),
        ("P3 served out of arrival order", "0",
         lambda f: f"{f['inversion_fraction']:.1%} of {f['pairs_in_line_together']} pairs",
         lambda f: f["inverted_pairs"] == 0),
        ("Redis node executions per waiter per second", "≤ 1",
         lambda f: f"{f['redis_per_wait_second']:.2f}", lambda f: f["redis_per_wait_second"] <= 1),
    ]  # fmt: skip


def baseline_label(args: argparse.Namespace) -> str:
    return f"seed ({SEED_REF})" if args.baseline == SEED_REF else f"before ({args.baseline})"


def baseline_text(args: argparse.Namespace) -> str:
    if args.baseline == SEED_REF:
        return f"Seed: `main` before engine v2 ({SEED_REF}: 1 s poll, sub-workflow calls)"
    return f"Before: the bench workflow wrapped by n8nlock at {args.baseline}"


def table(result: Figures, args: argparse.Namespace) -> list[str]:
    """The markdown table of one version: figure | target | seed | v2 (✓ when met)."""
    lines = [
        f"| figure (n8n {result['n8n']}) | target | {baseline_label(args)} | v2 |",
        "|---|---|---|---|",
    ]
    for label, target, show, met in rows(args, result["plain"]):
        mark = "" if met is None else (" ✓" if met(result["v2"]) else " ✗")
        lines.append(
            f"| {label} | {target} | {show(result['seed'])} | {show(result['v2'])}{mark} |"
        )
    return lines


def costs_table(results: Sequence[Figures]) -> list[str]:
    """Median ms per node of one uncontended v2 call, a column per n8n version."""
    costs: list[dict[str, float]] = [r["v2_node_costs_ms"] for r in results]
    headings = " | ".join(f"n8n {r['n8n']}" for r in results)
    lines = [f"| node of one uncontended v2 call (median ms) | {headings} |"]
    lines.append("|---|" + "---|" * len(results))
    for name in costs[0]:
        where = "" if name.startswith(LOCK_NODE) else " (workflow)"
        cells = " | ".join(f"{c[name]:.0f}" if name in c else "–" for c in costs)
        lines.append(f"| {name}{where} | {cells} |")
    totals = [sum(ms for name, ms in c.items() if name.startswith(LOCK_NODE)) for c in costs]
    lines.append("| all lock nodes | " + " | ".join(f"{t:.0f}" for t in totals) + " |")
    return lines


DEFINITIONS = """\
Handoff gap: from the end of the node that frees the lock (v2: Lock Release; seed: DEL Lock
Counter in lock_release) to the next holder's first body node, from the P2 executions. Out of
arrival order: pairs of P3 executions that were in line together and entered against the order
in which they lined up (v2: their tickets; seed: the start of Lock Acquire). Redis node
executions per waiter per second: what waiting added to an uncontended acquire's Redis node
executions, per second waited, over the P3 executions that waited."""


def report(results: list[Figures], args: argparse.Namespace, argv: Sequence[str]) -> str:
    lines = [
        f"{measured(command('lock_bench', argv))}: plain median "
        + ", ".join(f"{r['plain']['median_ms']:.0f} ms on n8n {r['n8n']}" for r in results)
        + f"; {args.runs} shuffled rounds (P1), {args.callers} callers holding "
        f"{args.hold_ms} ms (P2), {FAIRNESS_CLIENTS} clients for {args.fairness_seconds:g} s "
        f"(P3). {baseline_text(args)}; "
        f"v2: {V2_BUILDS[args.v2_build]}. ✓/✗: v2 meets the target or not.",
        "",
    ]
    for result in results:
        lines += [*table(result, args), ""]
    lines += [" ".join(DEFINITIONS.split()), "", *costs_table(results)]
    return "\n".join(lines)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--versions", default=DEFAULT_VERSIONS, help="n8n versions, commas")
    parser.add_argument("--runs", type=int, help="P1 rounds (default 60; quick 8)")
    parser.add_argument("--callers", type=int, help="P2 callers (default 10; quick 4)")
    parser.add_argument("--hold-ms", type=int, help="P2/P3 hold time (default 300)")
    parser.add_argument("--fairness-seconds", type=float, help="P3 (default 60; quick 8)")
    parser.add_argument("--quick", action="store_true", help="small numbers: a smoke run")
    builds = "; ".join(f"{key}: {text}" for key, text in V2_BUILDS.items())
    parser.add_argument("--v2-build", choices=sorted(V2_BUILDS), default="cli", help=builds)
    parser.add_argument("-o", "--output", type=Path, help="also write every figure to this JSON")
    parser.add_argument(
        "--baseline",
        default=SEED_REF,
        help=f"git ref to compare with, wrapped by its own n8nlock (default {SEED_REF}, the seed)",
    )
    args = parser.parse_args(argv)
    for name, value in (QUICK if args.quick else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    results = [bench_version(version, args) for version in versions(args.versions)]
    for result in results:
        print()
        print("\n".join(table(result, args)))
        for label in ("seed", "v2"):
            f = result[label]
            print(
                f"  P2 {label}: first body {f['p2_first_entry_ms']:.0f} ms after the first "
                f"arrival; a turn (body start → lock free) {f['p2_turn_median_ms']:.0f} ms, "
                f"then {f['gap_median_ms']:.0f} ms to the next body (medians)"
            )
    print("\nWhere one uncontended v2 call spends its time:\n")
    print("\n".join(costs_table(results)))
    print("\ndocs/performance.md text (paste as is):\n")
    print(report(results, args, argv))
    if args.output:
        write_figures(args.output, command("lock_bench", argv), args, results)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
