"""The operator commands' text output, as lines (the CLI prints them)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from n8n_lockkit.ops.locks import execution_url
from n8n_lockkit.ops.reap import Decision
from n8n_lockkit.ops.stats import QUANTILES, ScopeStats
from n8n_lockkit.ops.store import LockState
from n8n_lockkit.primitives.keys import WAIT_BUCKETS

NOT_TRACKED = "-"
WAITING_NOTE = (
    "WAITING counts executions that wait for the scope; one whose process died stays counted "
    "until the scope has been quiet for its max wait + TTL"
)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return NOT_TRACKED
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d{whole % 86400 // 3600:02d}h"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    return [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (headers, *rows)
    ]


def holder(state: LockState) -> str:
    meta = state.meta
    if meta is None:
        reason = "no meta" if state.meta_raw is None else "unreadable meta"
        return f"holder unknown ({reason})"
    return f"{meta.get('workflow_name', 'unknown')} ({meta.get('workflow_id', 'unknown')})"


def ttl_left(state: LockState) -> str:
    return "none (!)" if state.counter_pttl_ms == -1 else duration(state.ttl_seconds)


def locks_lines(
    states: Sequence[LockState], n8n_url: str, waiting: dict[str, int] | None = None
) -> list[str]:
    headers = ("SCOPE", "HOLDER", "EXECUTION", "AGE", "TTL LEFT", "FENCE", "WAITING", "LINK")
    rows = [
        (
            state.scope,
            holder(state),
            str((state.meta or {}).get("execution_id", NOT_TRACKED)),
            duration(state.age_seconds),
            ttl_left(state),
            str((state.meta or {}).get("fence", NOT_TRACKED)),
            str((waiting or {}).get(state.scope, NOT_TRACKED)),
            execution_url(n8n_url, state.meta) or NOT_TRACKED,
        )
        for state in states
    ]
    lines = table(headers, rows)
    for state in states:
        if state.has_no_ttl:
            when = "once its holder has ended" if state.meta else "after its grace period"
            lines.append(
                f"! {state.scope}: a key has no TTL and never expires; `n8nlock reap` frees it "
                + when
            )
    return lines


def release_lines(state: LockState, n8n_url: str) -> list[str]:
    meta = state.meta or {}
    lines = [f"lock on scope {state.scope!r}:", f"  holder     {holder(state)}"]
    if meta:
        lines.append(f"  execution  {meta.get('execution_id')}  {execution_url(n8n_url, meta)}")
        lines.append(
            f"  locked at  {meta.get('locked_at')} ({duration(state.age_seconds)} ago), "
            f"fence {meta.get('fence')}"
        )
    lines.append(f"  TTL left   {ttl_left(state) if state.held else 'no counter'}")
    lines.append(f"  deletes    {', '.join(state.keys_present)}")
    return lines


def reap_lines(decisions: Sequence[Decision]) -> list[str]:
    width = max((len(d.action) for d in decisions), default=0)
    return [f"{d.action:>{width}}  {d.scope}  {d.reason}" for d in decisions]


def wait_bound(bound: float | None) -> str:
    if bound is None:
        return NOT_TRACKED
    if math.isinf(bound):
        return f">{WAIT_BUCKETS[-1]:g}s"
    return f"<={bound:g}s"


def stats_lines(stats: Sequence[ScopeStats]) -> list[str]:
    headers = (
        "SCOPE",
        "ACQUIRED",
        "WAITED",
        "TIMEOUT",
        "BUSY",
        "FORCED",
        "REAPED",
        "HEALED",
        *(f"WAIT P{round(q * 100)}" for q in QUANTILES),
    )
    rows = [
        (
            entry.scope,
            *(str(count) for count in entry.counts.values()),
            *(wait_bound(entry.quantile(q)) for q in QUANTILES),
        )
        for entry in stats
    ]
    return table(headers, rows)
