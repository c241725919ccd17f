"""The operator commands' text output, as lines (the CLI prints them)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from n8n_lockkit.ops import compat
from n8n_lockkit.ops.debounce import WAITER_STALE, KeyStats, OpenBurst
from n8n_lockkit.ops.locks import execution_url
from n8n_lockkit.ops.reap import Decision
from n8n_lockkit.ops.snapshot import Lane, Scan, describe_copy
from n8n_lockkit.ops.stats import EVENTS, QUANTILES, ScopeStats
from n8n_lockkit.primitives.keys import DEBOUNCE_STALE_MS, SKIP_GRACE_SECONDS, WAIT_BUCKETS

NOT_TRACKED = "-"
WAITING_NOTE = (
    "WAITING counts the callers in line for the scope; one whose execution died counts until "
    f"the caller behind it skips it ({SKIP_GRACE_SECONDS} s after its turn)"
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


def holder(lane: Lane) -> str:
    meta = lane.meta or {}
    return f"{meta.get('workflow_name', 'unknown')} ({meta.get('workflow_id', 'unknown')})"


def lane_label(lane: Lane) -> str:
    """`k/N` for a lane of a semaphore; a mutex has one lane, so nothing to tell."""
    return f"{lane.lane}/{lane.slots}" if lane.slots > 1 else NOT_TRACKED


def expires_in(lane: Lane) -> str:
    return "never (!)" if lane.record_pttl_ms == -1 else duration(lane.ttl_seconds)


def locks_lines(scan: Scan, n8n_url: str) -> list[str]:
    headers = ("SCOPE", "LANE", "HOLDER", "EXECUTION", "LOCK ID", "FENCE", "HELD FOR",
               "EXPIRES IN", "WAITING", "LINK")  # fmt: skip
    rows = [
        (
            lane.scope,
            lane_label(lane),
            holder(lane),
            str((lane.meta or {}).get("execution_id", NOT_TRACKED)),
            str((lane.meta or {}).get("lock_id", NOT_TRACKED)),
            str(lane.ticket if lane.ticket is not None else NOT_TRACKED),
            duration(lane.age_seconds),
            expires_in(lane),
            str(state.waiting),
            execution_url(n8n_url, lane.meta) or NOT_TRACKED,
        )
        for state in scan.states
        for lane in state.held
    ]
    lines = table(headers, rows) if rows else []
    for state in scan.states:
        for lane in state.held:
            if lane.record_pttl_ms == -1:
                lines.append(
                    f"! {lane.scope}: the record of lane {lane.lane} has no TTL and never "
                    "expires; `n8nlock reap` frees it once its holder has ended"
                )
            if lane.copy_is_stale:
                lines.append(stale_copy_line(lane))
        if state.waiting and not state.held:
            lines.append(
                f"! {state.scope}: {state.waiting} caller(s) in line and no lane held: the next "
                f"is entering, or died and is skipped {SKIP_GRACE_SECONDS} s after its turn"
            )
    return lines


def stale_copy_line(lane: Lane) -> str:
    """A format-3 holder whose lane copy (what compat.COPY_READERS read) is not its record."""
    where = f"! {lane.scope}: lane {lane.lane}'s holder is ticket {lane.ticket} ({lane.record_key})"
    if lane.meta_raw is None:
        return f"{where}, and {lane.key} has no copy of it: {compat.COPY_READERS} do not see it"
    return (
        f"{where}; its copy {lane.key} names {describe_copy(lane.copy)} (a late write of a "
        f"caller that was skipped while it stalled, or a write under way): "
        f"{compat.COPY_READERS} read that copy"
    )


def release_lines(lane: Lane, n8n_url: str) -> list[str]:
    meta = lane.meta or {}
    where = f"lane {lane.lane} of {lane.slots} of " if lane.slots > 1 else ""
    return [
        f"lock on {where}scope {lane.scope!r}:",
        f"  holder     {holder(lane)}",
        f"  execution  {meta.get('execution_id')}  {execution_url(n8n_url, meta)}",
        f"  lock id    {meta.get('lock_id')}",
        f"  locked at  {meta.get('locked_at')} ({duration(lane.age_seconds)} ago), "
        f"ticket {lane.ticket}",
        f"  expires in {expires_in(lane)}",
        f"  releases   {lane.record_key} (marked released), {lane.served_key} := {lane.ticket}"
        + _copy_release(lane),
    ]


def _copy_release(lane: Lane) -> str:
    """What a release of a format-3 holder does to its lane's copy (scripts.RELEASE_IF_HOLDER:
    it marks the copy when it names the holder, or is absent)."""
    if lane.holder is None:
        return ""
    if lane.meta_raw is not None and not lane.copy_names_holder:
        return f", not its lane's copy {lane.key} ({describe_copy(lane.copy)})"
    return f", {lane.key} (its lane's copy, marked released)"


def reap_lines(decisions: Sequence[Decision]) -> list[str]:
    width = max((len(d.action) for d in decisions), default=0)
    return [f"{d.action:>{width}}  {where(d)}  {d.reason}" for d in decisions]


def where(decision: Decision) -> str:
    """The scope, and the lane when it is not a mutex's only one."""
    if decision.lane is None or decision.slots == 1:
        return decision.scope
    return f"{decision.scope} lane {decision.lane}"


def wait_bound(bound: float | None) -> str:
    if bound is None:
        return NOT_TRACKED
    if math.isinf(bound):
        return f">{WAIT_BUCKETS[-1]:g}s"
    return f"<={bound:g}s"


_SHORT_HEADERS = {"force_released": "FORCED"}  # the others: the event, upper case


def stats_lines(stats: Sequence[ScopeStats]) -> list[str]:
    headers = (
        "SCOPE",
        *(_SHORT_HEADERS.get(event, event.upper()) for event in EVENTS),
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


def debounce_lines(bursts: Sequence[OpenBurst]) -> list[str]:
    """`locks`: the debounce key values with events waiting in their open burst."""
    headers = ("WORKFLOW", "KEY", "WAITING", "TICKETS", "WAITER", "BURST AGE", "QUIET FOR")
    rows = [
        (
            burst.where.workflow_key,
            burst.where.key,
            str(len(burst.waiting)),
            _tickets(burst),
            burst.waiter,
            duration(burst.age_seconds),
            duration(burst.quiet_seconds),
        )
        for burst in bursts
    ]
    lines = table(headers, rows)
    for burst in bursts:
        if burst.waiter == WAITER_STALE:
            lines.append(
                f"! {burst.where.label}: its waiter has not looked for "
                f"{duration((burst.watched_ms_ago or 0) / 1000)} (dead after "
                f"{DEBOUNCE_STALE_MS / 1000:g} s): the key's next event takes the burst over"
            )
    return lines


def _tickets(burst: OpenBurst) -> str:
    tickets = [event.ticket for event in burst.waiting]
    return str(tickets[0]) if len(tickets) == 1 else f"{tickets[0]}-{tickets[-1]}"


def debounce_stats_lines(stats: Sequence[KeyStats]) -> list[str]:
    """`stats`: per debounce key value, events stored and bursts cut."""
    headers = ("WORKFLOW", "KEY", "EVENTS", "BURSTS")
    rows = [
        (entry.where.workflow_key, entry.where.key, str(entry.events), str(entry.bursts))
        for entry in stats
    ]
    return table(headers, rows)
