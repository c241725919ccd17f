"""What went wrong in a stall run, from the callers' saved executions: each non-200 caller's
failure (node, message, the lines of n8n's log that name it, when it was raised against the
stops) and, for bodies that ran together when they must not, the tickets, decisions and skips
of both (tests/e2e/stalls.py reads them from the lock's nodes)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from tests.e2e.lockbed import LockBed
from tests.e2e.stalls import (
    Body,
    Failure,
    StallRun,
    caller_executions,
    decisions_of,
    failure_of,
    log_excerpt,
    n8n_log_path,
    skips_of,
    tickets_of,
)

Figures = dict[str, Any]


def wait_saved(bed: LockBed, workflow_id: str, scope: str, count: int) -> dict[int, Any]:
    """caller → its saved execution, once all `count` are saved (or after 60 s)."""
    deadline = time.monotonic() + 60
    while True:
        found = caller_executions(bed.n8n, workflow_id, scope)
        finished = {w: e for w, e in found.items() if e.get("stoppedAt")}
        if len(finished) >= count or time.monotonic() > deadline:
            return found
        time.sleep(1)


def describe(execution: dict[str, Any]) -> Figures:
    """The lock's view of one execution: its tickets, each look's decision, when it wrote
    its record (Lock Hold) and when its body started."""
    looks = []
    for decision in decisions_of(execution):
        looks.append(
            {
                k: decision.get(k)
                for k in ("_at", "state", "ticket", "head", "served", "quiet_since", "skip")
                if decision.get(k) is not None
            }
        )
    result = (execution.get("data") or {}).get("resultData") or {}
    runs = result.get("runData") or {}
    entered = [look["ticket"] for look in looks if look.get("state") == "enter"]
    return {
        "execution": str(execution.get("id")),
        "status": execution.get("status"),
        "last_node": result.get("lastNodeExecuted"),
        "lock_release_runs": len(runs.get("Lock Release", [])),
        "tickets": tickets_of(execution),
        "entered_with": entered[-1] if entered else None,
        "looks": looks,
        "lock_hold_started": [r.get("startTime") for r in runs.get("Lock Hold", [])],
        "mark_start": [r.get("startTime") for r in runs.get("Mark Start", [])],
        # Format 3: how often it read its `gone` mark after a late record, and withdrew.
        "late_checks": len(runs.get("Lock Check Skipped", [])),
        "withdrawals": len(runs.get("Lock Withdrawn", [])),
    }


def lock_summary(locks: dict[int, Figures]) -> Figures:
    """What the lock did across the callers: tickets drawn, late checks, withdrawals."""
    return {
        "callers": len(locks),
        "callers_with_more_than_one_ticket": sum(
            1 for v in locks.values() if len(v["tickets"]) > 1
        ),
        "late_checks": sum(v["late_checks"] for v in locks.values()),
        "withdrawals": sum(v["withdrawals"] for v in locks.values()),
        "looks": sum(len(v["looks"]) for v in locks.values()),
    }


def stops_between(stops: Sequence[Figures], start: float, end: float) -> list[str]:
    return [
        f"{s['seconds']:.1f} s stop {s['stopped_at_ms']}→{s['resumed_at_ms']}"
        for s in stops
        if s["stopped_at_ms"] < end and s["resumed_at_ms"] > start
    ]


def skip_story(ticket: int | None, skips: Sequence[Figures], stops: Sequence[Figures]) -> list[str]:
    """Who skipped `ticket`, after how much "quiet", and which stops fell in that quiet."""
    told = []
    for skip in skips:
        if ticket is None or skip["skipped"] != ticket:
            continue
        quiet = skip["at"] - skip["quiet_since"] if skip.get("quiet_since") else None
        within = stops_between(stops, skip.get("quiet_since") or skip["at"], skip["at"])
        told.append(
            f"ticket {ticket} skipped by caller {skip['who']} (ticket {skip['ticket']}) at "
            f"{skip['at']} after {quiet} ms of quiet, which held {within or 'no stop'}"
        )
    return told


def failure_timing(failure: Failure | None, stops: Sequence[Figures]) -> str | None:
    """When the failing node's error was raised, against the stops (epoch ms)."""
    at = ((failure.node_error or {}) if failure else {}).get("timestamp")
    if not isinstance(at, int):
        return None
    for stop in stops:
        if stop["stopped_at_ms"] <= at < stop["resumed_at_ms"]:
            return (
                f"raised at {at}, during the stop {stop['stopped_at_ms']}→{stop['resumed_at_ms']}"
            )
    before = [s for s in stops if s["resumed_at_ms"] <= at]
    if not before:
        return f"raised at {at}, before the first stop"
    last = before[-1]
    return (
        f"raised at {at}, {at - last['resumed_at_ms']} ms after the SIGCONT that ended the "
        f"{last['seconds']:.1f} s stop {last['stopped_at_ms']}→{last['resumed_at_ms']}"
    )


def violations(run: StallRun, limit: int, locks: dict[int, Figures]) -> list[tuple[Body, ...]]:
    """Bodies that must not have run together: for a mutex every overlapping pair; for a
    semaphore every overlapping pair in one lane (entering ticket mod N), and every moment
    with more than N bodies (N = `limit`)."""
    if limit == 1:
        return list(run.overlaps())

    def lane(body: Body) -> int | None:
        ticket = locks.get(body.who, {}).get("entered_with")
        return None if ticket is None else int(ticket) % limit

    same = [p for p in run.overlaps() if lane(p[0]) is not None and lane(p[0]) == lane(p[1])]
    return [*same, *(tuple(moment) for moment in run.crowded(limit))]


def diagnose(
    bed: LockBed, workflow_id: str, run: StallRun, limit: int, stops: list[Figures]
) -> Figures:
    """Every non-200 caller's saved failure, and the tickets, skips and looks of the bodies
    that ran together when they must not."""
    log = n8n_log_path(bed.n8n)
    executions = wait_saved(bed, workflow_id, run.scope, len(run.answers))
    locks = {who: describe(e) for who, e in executions.items()}
    skips = [{"who": who, **skip} for who, e in executions.items() for skip in skips_of(e)]
    failures = []
    for answer in run.failed():
        execution = executions.get(answer.who)
        entry: Figures = {"who": answer.who, "status": answer.status, "body": answer.body[:200]}
        if execution is None:
            entry["execution"] = None
        else:
            failure = failure_of(execution)
            entry["failure"] = failure.as_dict() if failure else None
            entry["lock"] = locks[answer.who]
            entry["timing"] = failure_timing(failure, stops)
            if log is not None:
                needles = [f"execution {execution['id']}", f'"executionId":"{execution["id"]}"',
                           f"executionId: {execution['id']}"]  # fmt: skip
                if failure and failure.message:
                    needles.append(failure.message[:80])
                entry["log"] = log_excerpt(log, needles, context=3, limit=80)
        failures.append(entry)
    found: list[Figures] = []
    for group in violations(run, limit, locks):
        story = [
            line
            for body in group
            for line in skip_story(locks.get(body.who, {}).get("entered_with"), skips, stops)
        ]
        found.append(
            {
                "bodies": [
                    asdict(b)
                    | {
                        "ticket": locks.get(b.who, {}).get("entered_with"),
                        "tickets": locks.get(b.who, {}).get("tickets"),
                    }
                    for b in group
                ],
                "skips": story,
            }
        )
    # Every caller's lock story only where something went wrong; otherwise the totals.
    involved = {int(f["who"]) for f in failures}
    for together in found:
        involved |= {int(body["who"]) for body in together["bodies"]}
    return {
        "failures": failures,
        "violations": found,
        "skips": skips,
        "lock_summary": lock_summary(locks),
        "locks": {who: v for who, v in locks.items() if who in involved},
    }
