"""What the inline lock costs against a floor of three bare Redis nodes, measured side by side in
one run (issue 20). Not a test.

    .venv/bin/python -m bench.floor_bench [--versions 2.41.1] [--runs 40] [--baseline REF]
        [--form lock|rate-limit] [-o figures.json] [--results bench/results]

Per n8n version, one test bed at n8n's default settings (execution data saved), one Redis:
- plain: Webhook → Wait (10 ms) → Set, answering with the last node;
- floor: Webhook → Redis INCR → Redis GET → Redis SET → Wait → Set: three single-item Redis
  node executions on one key derived from the body's scope (no TTL: "bare");
- lock: plain wrapped by this checkout's `add-lock-to-workflow` on `={{ $json.body.scope }}`
  (with `--form rate-limit`: by `add-rate-limit` on that scope, a sliding limit too high to
  refuse, so that the table says what an allowed check costs; the report calls it "rate limit");
- baseline (with `--baseline REF`): plain wrapped by REF's own n8nlock, in a workspace of its own.
Every workflow is called uncontended in shuffled rounds: each round calls every workflow once per
scope mode ("repeated": one scope per workflow for every call; "new": a fresh uuid scope per
call) in a random order; the first rounds warm n8n up and are not counted. Reported per scope
mode: median and p90 latency, the ms added over plain, and added(lock) / added(floor) (target
≤ 2.0) with a 90 % bootstrap interval over the rounds. From the saved executions: the nodes one
call executes and the median ms per node; from the wrapped templates: the generated nodes.
Prints the tables, writes bench/results/floor_bench-<version>.md and, with -o, every figure as
JSON.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from bench import floor_report
from bench.floor_workflows import (
    BASELINE,
    FORMS,
    LOCK,
    MODES,
    call_body,
    counted,
    deploy,
    generated,
)
from bench.harness.calls import WARM_UP, rounds
from bench.harness.executions import matching, workflow_ids
from bench.harness.results import add_outputs, each_version, parser_for, progress_for, tree_state
from bench.harness.runs import execution_figures
from bench.harness.session import Span, running_bed
from bench.harness.stats import floor_latency
from bench.harness.workspace import Target
from testbed.endpoints import N8nInstance

DEFAULT_VERSIONS = "2.41.1"
DEFAULT_RUNS = 40
Figures = dict[str, Any]
Timings = dict[str, dict[str, list[float]]]  # mode → label → seconds, one per counted round
progress = progress_for("floor_bench")


def calls(
    n8n: N8nInstance,
    targets: Sequence[Target],
    runs: int,
    token: str,
    say: Callable[[str], None] = progress,
) -> Timings:
    """Seconds per call; a round calls every workflow once per scope mode, in a shuffled order,
    so that load on the machine hits all alike. Round i of every list is the same round."""
    made = {
        (mode, t.label): (t.key, call_body(token, mode, t.key)) for mode in MODES for t in targets
    }
    seconds = rounds(n8n, made, runs, say=say)
    return {mode: {t.label: seconds[mode, t.label] for t in targets} for mode in MODES}


def saved_figures(
    n8n: N8nInstance, targets: Sequence[Target], token: str, runs: int
) -> dict[str, Figures]:
    """mode → label → execution figures of the counted calls."""
    result: dict[str, Figures] = {mode: {} for mode in MODES}
    for target in targets:
        workflow_id = workflow_ids(target.root)[target.key]
        for mode in MODES:
            found = matching(n8n, workflow_id, counted(mode, token, target.key), runs)
            if len(found) < runs:
                progress(f"{target.label} ({mode}): {len(found)} of {runs} executions saved")
            if found:
                result[mode][target.label] = execution_figures(found[:runs])
    return result


def in_ms(timings: Timings) -> Timings:
    return {
        mode: {label: [s * 1000 for s in v] for label, v in by.items()}
        for mode, by in timings.items()
    }


def bench_version(version: str, args: argparse.Namespace, tree: str) -> Figures:
    run = Span()
    with running_bed(version) as bed:
        targets = deploy(bed.n8n, bed.tmp, args.baseline, args.form)
        token = uuid.uuid4().hex[:8]
        progress(f"n8n {version}: {args.runs} shuffled rounds (+{WARM_UP} to warm up)")
        measured = Span()
        timings = calls(bed.n8n, targets, args.runs, token)
        calls_seconds, load = measured.seconds(), measured.load()
        progress(f"n8n {version}: reading the saved executions")
        saved = saved_figures(bed.n8n, targets, token, args.runs)
        for mode, by_label in saved.items():
            for label, found in by_label.items():
                found["call_median_ms"] = statistics.median(timings[mode][label]) * 1000
        ms = in_ms(timings)
        return {
            "n8n": version,
            "tree": tree,
            "latency": {mode: floor_latency(ms[mode], (LOCK, BASELINE)) for mode in MODES},
            "executions": saved,
            "generated": {t.label: generated(t) for t in targets if t.label in (LOCK, BASELINE)},
            "timings_ms": ms,
            "calls_seconds": calls_seconds,
            "load_average_1min": load,  # other work on the machine
            "seconds": run.seconds(),
        }


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = parser_for(__doc__, DEFAULT_VERSIONS, DEFAULT_RUNS)
    parser.add_argument(
        "--baseline", help="git ref whose n8nlock also wraps the plain workflow, side by side"
    )
    parser.add_argument(
        "--form", choices=sorted(FORMS), default="lock", help="what wraps the plain workflow"
    )
    add_outputs(parser, "floor_bench-<version>.md")
    args = parser.parse_args(argv)
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    tree = tree_state()  # what this process imported: the engine as it is now
    suffix = "" if args.form == "lock" else f"-{args.form}"
    each_version(
        "floor_bench",
        argv,
        args,
        lambda version: bench_version(version, args, tree),
        lambda result: (floor_report.intro(result, args), floor_report.sections(result, args)),
        lambda version: f"floor_bench-{version}{suffix}",
    )


if __name__ == "__main__":
    main()
