"""How many Redis items and control nodes can an uncontended lock afford and stay ≤ 2× its floor?
(issue 20) Not a test.

    .venv/bin/python -m bench.lean_budget [--versions 2.41.1] [--runs 60] [--without-lock]
        [-o figures.json] [--results bench/results]

The lock's cost on its uncontended path comes from two things: the items its Redis nodes handle
(each at least one round trip to Redis) and the other nodes it executes (decisions, item
builders, merges: "control nodes", ~1–3 ms each). This bench measures synthetic lock-shaped
workflows that vary the two apart, side by side with floor_bench's plain and floor workflows
(the same workflows, so the figures compare), and fits a cost per item and per control node:
the design rule for a lean lock.

A lock-shaped variant (VARIANTS: Redis items per node, control nodes, merges):

    Webhook → [Ifs] → (Take Items → Take Split →) Take (Redis INCR) → [Ifs]
      → (Hold Items → Hold Split →) Hold (Redis SET) → [Ifs] → Restore (Merge: Webhook's item)
      → Wait (10 ms) → Set → [Ifs] → (Release Items → Release Split →) Release (Redis SET)
      → [Ifs] → Output (Merge: the body's item)

- a Redis node with one item runs once on one key (as the floor's do); one with n > 1 items
  gets them as the engine does: a Set (execute once) that lists them → Split Out → the Redis
  node, once per item;
- control nodes: every executed node the lock adds that is not a Redis node: the item builders
  (2 per multi-item Redis node), the merges (0, or Restore and Output) and If nodes (execute
  once, true branch) that stand in for the lock's decisions and fill up the count;
- INCR items have no TTL; SET items expire after 60 s (n8n's Redis node sends EXPIRE after the
  SET: a second round trip), as most of the lock's records do; `ttl: False` drops the TTL.

Every workflow is called uncontended in floor_bench's shuffled rounds, one scope per workflow
for every call ("repeated"); the first rounds warm n8n up and are not counted. Reported: median,
ms added over plain, added / added(floor) with floor_bench's 90 % bootstrap interval; the
executed nodes and Redis items of the last saved calls (a check that each variant runs what its
row says); a least-squares fit added ≈ base + per_item · items + per_control · control nodes
over the lock-shaped variants, with 90 % intervals from resampling the rounds, and the control
nodes each item count can afford under 2× the floor. With the lock (this checkout's
`add-lock-to-workflow`, unless --without-lock) measured alongside, the fit's prediction for the
lock's own items and control nodes is set against its measured cost.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.floor_bench import DEFAULT_VERSIONS
from bench.floor_report import node_cell, ratio_cell
from bench.floor_workflows import LOCK, call_body, counted, floor_workflow, plain_workflow, wrapped
from bench.harness.calls import WARM_UP, rounds
from bench.harness.executions import newest, workflow_ids
from bench.harness.results import (
    add_outputs,
    each_version,
    measured,
    parser_for,
    progress_for,
    tree_state,
)
from bench.harness.runs import execution_figures
from bench.harness.session import Span, running_bed
from bench.harness.stats import BOOTSTRAP, FLOOR, PLAIN, TARGET, floor_latency
from bench.harness.workspace import Target, cli, prepare, push, write_template
from bench.lean_fit import fit_figures
from bench.lean_shapes import (
    TTL_SECONDS,
    VARIANTS,
    Variant,
    check_variants,
    fitted,
    variant_workflow,
)
from testbed.endpoints import N8nInstance

DEFAULT_RUNS = 60
MODE = "repeated"  # uncontended, one scope per workflow for every call
CHECKED = 5  # the last saved calls per workflow whose nodes and items are read back
Figures = dict[str, Any]
progress = progress_for("lean_budget")


# --- the run ---------------------------------------------------------------------------------


def deploy(n8n: N8nInstance, root: Path, variants: Sequence[Variant], lock: bool) -> list[Target]:
    """plain and floor (floor_bench's own workflows), the variants and, with `lock`, the plain
    workflow wrapped by this checkout; one workspace, pushed and active."""
    prepare(root, n8n, cli)
    keys = {PLAIN: "budget_plain", FLOOR: "budget_floor", LOCK: "budget_lock"}
    write_template(root, plain_workflow(keys[PLAIN]))
    write_template(root, floor_workflow(keys[FLOOR]))
    for v in variants:
        write_template(root, variant_workflow(v))
    if lock:
        wrapped(root, keys[LOCK], cli)
    push(root)
    labels = [PLAIN, FLOOR, *(v.name for v in variants), *([LOCK] if lock else [])]
    by_label = keys | {v.name: v.key for v in variants}
    return [Target(label, by_label[label], root) for label in labels]


def executed(n8n: N8nInstance, targets: Sequence[Target], token: str) -> dict[str, Figures]:
    """label → floor_bench's execution figures of its last counted calls, plus the control
    nodes: executed nodes other than Webhook, Wait, Set and the Redis nodes."""
    ids = workflow_ids(targets[0].root)
    result: dict[str, Figures] = {}
    for target in targets:
        found = newest(n8n, ids[target.key], counted(MODE, token, target.key), CHECKED)
        if not found:
            progress(f"{target.label}: no saved executions")
            continue
        f = execution_figures(found)
        f["control_nodes"] = f["nodes_executed"] - 3 - len(f["redis_node_items"])
        result[target.label] = f
    return result


def bench_version(version: str, args: argparse.Namespace, tree: str) -> Figures:
    run = Span()
    with running_bed(version) as bed:
        targets = deploy(bed.n8n, bed.tmp / "main", VARIANTS, not args.without_lock)
        token = uuid.uuid4().hex[:8]
        progress(f"n8n {version}: {len(targets)} workflows, {args.runs} shuffled rounds")
        calls = Span()
        made = {t.label: (t.key, call_body(token, MODE, t.key)) for t in targets}
        timings = rounds(bed.n8n, made, args.runs, say=progress)
        calls_seconds, load = calls.seconds(), calls.load()
        progress(f"n8n {version}: reading the last saved calls")
        saved = executed(bed.n8n, targets, token)
    ms = {label: [s * 1000 for s in values] for label, values in timings.items()}
    return {
        "n8n": version,
        "tree": tree,
        "variants": [asdict(v) for v in VARIANTS],
        "latency": floor_latency(ms, set(ms) - {PLAIN}),
        "fit": fit_figures(ms, saved),
        "executions": saved,
        "timings_ms": ms,
        "calls_seconds": calls_seconds,
        "load_average_1min": load,
        "seconds": run.seconds(),
    }


# --- the report ------------------------------------------------------------------------------


def variant_row(v: Variant, result: Figures) -> str:
    f = result["latency"][v.name]
    predicted = result["fit"]["predicted_added_ms"][v.name]
    floor = result["fit"]["floor_added_ms"]
    seen = result["executions"].get(v.name)
    check = "–"
    if seen:
        expected = (3 + 3 + v.control, v.total_items)
        got = (seen["nodes_executed"], seen["redis_items"])
        check = "✓" if got == expected else f"✗ {got[0]:g} nodes, {got[1]:g} items"
    notes = [] if v.ttl else ["SET without TTL"]
    notes += [] if v.fitted else ["not fitted"]
    name = v.name + (f" ({', '.join(notes)})" if notes else "")
    return (
        f"| {name} | {'/'.join(map(str, v.items))} = {v.total_items} | {v.control} = {v.ifs} + "
        f"{v.builders} + {v.merges} | {f['median_ms']:.1f} | +{f['added_ms']:.1f} | "
        f"{ratio_cell(f)} | {predicted / floor:.2f}× | {check} |"
    )


def variants_table(result: Figures) -> list[str]:
    lines = [
        f"| workflow (n8n {result['n8n']}, repeated scope) | Redis items (Take/Hold/Release) | "
        "control nodes = If + builders + merges | median ms | added ms | added / floor "
        "(90 % interval) | fit | nodes and items checked |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, text in ((PLAIN, "plain (Webhook → Wait 10 ms → Set)"),
                        (FLOOR, "floor (+ Redis INCR, GET, SET)")):  # fmt: skip
        f = result["latency"][label]
        added = "–" if label == PLAIN else f"+{f['added_ms']:.1f}"
        ratio = "–" if label == PLAIN else "1.00×"
        items, control = ("–", "–") if label == PLAIN else ("1/1/1 = 3 (bare)", "0")
        lines.append(
            f"| {text} | {items} | {control} | {f['median_ms']:.1f} | {added} | {ratio} | – | – |"
        )
    lines += [variant_row(v, result) for v in VARIANTS]
    if LOCK in result["latency"]:
        f = result["latency"][LOCK]
        lock = result["fit"].get("lock")
        shape = f"{lock['items']:g} | {lock['control']:g}" if lock else "? | ?"
        fit = (
            f"{lock['predicted_added_ms'] / result['fit']['floor_added_ms']:.2f}×" if lock else "–"
        )
        lines.append(
            f"| lock (this checkout, {result['tree']}) | {shape} | {f['median_ms']:.1f} | "
            f"+{f['added_ms']:.1f} | {ratio_cell(f)} | {fit} | (read back) |"
        )
    return lines


def fit_lines(result: Figures) -> list[str]:
    fit = result["fit"]
    floor = fit["floor_added_ms"]

    def cost(name: str) -> str:
        low, high = fit[f"{name}_90"]
        return f"{fit[name]:.2f} ms (90 %: {low:.2f}–{high:.2f})"

    points = len(fitted())
    lines = [
        f'Fitted over the {points} lock-shaped variants not marked "not fitted" '
        f"(least squares on their added medians; intervals: the same fit on {BOOTSTRAP} "
        "resamples of the rounds):",
        "",
        f"- **per Redis item: {cost('per_item_ms')}** = {fit['per_item_ms'] / floor:.3f} of "
        "the floor",
        f"- **per control node: {cost('per_control_ms')}** = "
        f"{fit['per_control_ms'] / floor:.3f} of the floor",
        f"- base (the intercept: three Redis node executions and the shape, beyond their items "
        f"and control nodes): {cost('base_ms')}",
        f"- **the rule: {fit['per_item_ms'] / floor:.3f} · items + "
        f"{fit['per_control_ms'] / floor:.3f} · control nodes ≤ "
        f"{TARGET - fit['base_ms'] / floor:.2f}** (floor units; ≤ 2× the floor)",
        f"- floor (3 bare single-item Redis nodes) in this run: +{floor:.1f} ms; ≤ 2× is "
        f"≤ +{TARGET * floor:.1f} ms",
        f"- one Redis item costs about {fit['item_in_control_nodes']:.1f} control nodes; "
        f"residuals of the fit: {fit['residual_rms_ms']:.1f} ms RMS",
    ]
    if "lock" in fit:
        lock = fit["lock"]
        lines.append(
            f"- the lock's own shape ({lock['items']:g} items, {lock['control']:g} control "
            f"nodes): predicted +{lock['predicted_added_ms']:.1f} ms, measured "
            f"+{lock['added_ms']:.1f} ms: its nodes cost "
            f"{lock['added_ms'] - lock['predicted_added_ms']:+.1f} ms beyond the stand-ins'"
        )
    lines += [
        "",
        "| Redis items | control nodes affordable at ≤ 2× the floor (fit) | 90 % interval |",
        "|---|---|---|",
    ]
    for items, budget in fit["affordable_control"].items():
        low, high = budget["nodes_90"]
        lines.append(f"| {items} | {budget['nodes']:.1f} | {low:.1f}–{high:.1f} |")
    return lines


def redis_lines(result: Figures) -> list[str]:
    """The Redis nodes' median ms in the stand-in for the lock's shape and in the lock itself:
    where the lock's cost beyond its stand-ins sits."""
    lines = []
    for label in ("today", LOCK):
        f = result["executions"].get(label)
        if not f:
            continue
        cells = ", ".join(
            f"{name} {node_cell(f, name)}" for name in f["node_ms"] if name in f["redis_node_items"]
        )
        rest = f["node_time_sum_ms"] - sum(f["node_ms"][n] for n in f["redis_node_items"])
        lines.append(
            f"- {label}: Redis nodes {cells} ms; every other node together {rest:.0f} ms "
            f"(Wait included); span {f['span_ms']:.0f} ms"
        )
    if lines:
        lines.insert(0, f"Node ms (medians of the last {CHECKED} saved calls; ×n: items):")
        lines.insert(1, "")
    return lines


def intro(result: Figures, args: argparse.Namespace) -> str:
    before, after = result["load_average_1min"]
    lock = (
        "" if args.without_lock else
        " lock: floor_bench's plain workflow wrapped by this checkout's `add-lock-to-workflow` "
        "(floor_bench's arguments); its items and control nodes read from its saved calls."
    )  # fmt: skip
    return (
        f"{measured()}, n8n {result['n8n']} at its default "
        f"settings (execution data saved), one process, local Redis: {args.runs} shuffled "
        f"rounds after {WARM_UP} to warm up, each calling every workflow once, uncontended, "
        "one scope per workflow for every call (repeated). plain and floor: floor_bench's "
        "workflows. The variants: lock-shaped workflows (Take INCR, Hold SET, Release SET "
        f"around the body; SET items with a {TTL_SECONDS} s TTL; see the docstring of "
        "bench/lean_budget.py), control nodes = If stand-ins + item builders (Set → Split Out "
        "before a multi-item Redis node) + merges (Restore, Output). Added: median minus "
        "plain's median. The ratio's interval: 5th–95th percentile over "
        f"{BOOTSTRAP} resamples of the rounds. fit: the fitted added ms / the floor's. "
        f"Checked: nodes executed and Redis items of the last {CHECKED} saved calls match the "
        f"row.{lock} The calls took {result['calls_seconds']:.0f} s (1-minute load average "
        f"{before:.1f} before, {after:.1f} after), the whole run "
        f"{result['seconds'] / 60:.1f} min."
    )


def sections(result: Figures) -> list[list[str]]:
    return [variants_table(result), fit_lines(result), redis_lines(result)]


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = parser_for(__doc__, DEFAULT_VERSIONS, DEFAULT_RUNS)
    parser.add_argument(
        "--without-lock", action="store_true", help="do not measure this checkout's lock too"
    )
    add_outputs(parser, "lean_budget-<version>.md")
    args = parser.parse_args(argv)
    if args.runs < CHECKED:
        parser.error(f"--runs must be at least {CHECKED}")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    check_variants(VARIANTS)
    tree = tree_state()
    each_version(
        "lean_budget",
        argv,
        args,
        lambda version: bench_version(version, args, tree),
        lambda result: (intro(result, args), sections(result)),
        lambda version: f"lean_budget-{version}",
    )


if __name__ == "__main__":
    main()
