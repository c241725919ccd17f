"""The report of `bench.park_handoff`: one table per n8n version (a column per design, a row
per figure) and the definitions of the figures, as Markdown."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from bench.harness.results import command, measured
from bench.park_workflows import DESIGNS, LABELS, POLL_MS, RESUME_TIMEOUT_MS, RETRIES, RETRY_MS

Figures = dict[str, Any]
LOST_GAP_MS = 5000  # a handoff this slow waited for the backstop: a lost resume


def ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


Row = tuple[str, Callable[[Figures], str]]


def rows(result: Figures) -> list[Row]:
    k, hold = result["callers"], result["hold_ms"]

    Show = Callable[[Figures], str]

    def parked(show: Show, key: str = "resumes_200") -> Show:
        """A figure of the designs that park (the engine's: its parks only)."""
        return lambda f: show(f) if key in f else "–"

    return [
        ("handoff gap median / p99 (ms)",
         lambda f: f"{ms(f['gap_median_ms'])} / {ms(f['gap_p99_ms'])} ({len(f['gaps_ms'])} gaps)"),
        (f"efficiency {k} × {hold} ms / wall, median (rounds)",
         lambda f: f"{f['efficiency_median']:.2f} ("
         + ", ".join(f"{e:.2f}" for e in f["efficiency"]) + ")"),
        ("unrelated workflow alone, median (ms)", lambda f: ms(f["unrelated_alone_median_ms"])),
        ("unrelated workflow during the line, median / max (ms)",
         lambda f: f"{ms(f['unrelated_during_median_ms'])} / {ms(f['unrelated_during_max_ms'])}"
         f" ({f['unrelated_during_calls']} calls)"),
        ("Redis node executions waiting added, per waiter-second / per waiter",
         lambda f: f"{f['redis_per_waiter_second']:.2f} / {f['redis_per_waiter']:.1f}"),
        ("waiters / seconds waited (all lines)",
         lambda f: f"{f['waiters']} / {f['wait_seconds']:.1f} s"),
        ("waiters that parked (parks)",
         parked(lambda f: f"{f['parked_waiters']} ({f['parks']})", "parks")),
        ("registered, then found it need not park",
         parked(lambda f: f"{f['registered_not_parked']}")),
        ("resumes: 200 / 409 (sent again; of them before a park) / no answer",
         parked(lambda f: f"{f['resumes_200']} / {f['resumes_409']} ({f['resumes_409_early']})"
                f" / {f['resumes_unanswered']}")),
        ("resume answered in, median (ms)", parked(lambda f: ms(f["resume_answered_median_ms"]))),
        ("resume sent → resumed run's first node, median / max (ms)",
         parked(lambda f: f"{ms(f['resumed_run_started_median_ms'])} / "
                f"{ms(f['resumed_run_started_max_ms'])}")),
        ("handoffs to a waiter still parked at the release: count, gap median (ms)",
         lambda f: f"{sum(f['next_still_parked'])} of {len(f['gaps_ms'])}, "
         f"{ms(f['gap_parked_median_ms'])} (to one awake: {ms(f['gap_awake_median_ms'])})"),
        (f"handoffs over {LOST_GAP_MS // 1000} s (a lost resume) / bodies at once",
         lambda f: f"{f['gaps_over_5s']} / {f['overlaps']}"),
        ("executions read / expected", lambda f: f"{f['saved']} / {f['expected']}"),
    ]  # fmt: skip


def table(result: Figures) -> list[str]:
    lines = [
        f"| n8n {result['n8n']}, limit {result['limit']} | "
        + " | ".join(LABELS[d] for d in DESIGNS)
        + " |",
        "|---|" + "---|" * len(DESIGNS),
    ]
    for label, show in rows(result):
        lines.append(f"| {label} | " + " | ".join(show(result[d]) for d in DESIGNS) + " |")
    return lines


def report(results: Sequence[Figures], args: argparse.Namespace, argv: Sequence[str]) -> str:
    lines = [
        f"`{command('park_handoff', argv)}`",
        "",
        f"{measured()}: {args.callers} webhook callers (`responseNode`) at once on one mutex, "
        f"each holding {args.hold_ms} ms, {args.rounds} rounds, the designs' order rotating; "
        f"regular mode, `N8N_CONCURRENCY_PRODUCTION_LIMIT={args.limit}`. In the prototypes "
        f"(bench/park_handoff.py says how each waits) a waiter that polls looks every "
        f"{POLL_MS} ms; a resume refused with 409 is sent again after {RETRY_MS} ms (at most "
        f"{RETRIES} times); the resume's timeout is {RESUME_TIMEOUT_MS} ms.",
        "",
    ]
    for result in results:
        before, after = result["load_average_1min"]
        lines += [
            *table(result),
            "",
            f"n8n {result['n8n']}: calls {result['calls_seconds']:.0f} s, run "
            f"{result['seconds'] / 60:.1f} min; 1-minute load average {before:.1f} → "
            f"{after:.1f} (2 cores, other work running). A resume URL: "
            f"`{result['resume_url_example']}`.",
            "",
        ]
    lines.append(" ".join(DEFINITIONS.split()))
    return "\n".join(lines) + "\n"


DEFINITIONS = """\
Handoff gap: the end of the node that frees the lock (polling: Lock Release; prototypes:
Release, the INCR of `done`) → the next holder's first body node (Hold), from the saved
executions, within each line; a few ms below 0 when the next one saw the lock free before the
Redis node that freed it had ended (bodies at once: a body that began before that node began).
Still parked at the release: the next holder's resumed run began after the lock was free.
Efficiency: callers × hold / the line's wall time (first call made → last answer). Unrelated
workflow: a one-node webhook workflow (answers when its execution ran) called alone before each
line, then every 0.5 s while the line drains. Redis node executions waiting added: the Redis
node runs before the body of the executions that waited, minus an uncontended call's, over the
seconds they waited (lined up → body). Resumed run's first node: from the start of the HTTP
Request that got 200 to the first node the resumed execution ran (the parked Wait node: n8n
records its run when it resumes). The prototypes are lighter than the engine (no lease, no TTL,
no healing): compare them with each other for what parking costs, and the engine with
"prototype, all poll" for what its weight costs."""
