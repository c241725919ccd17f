"""How fast a lock hands over when its waiters park (issue 33): today's polling engine against
parked and hybrid prototypes, on one mutex, in one n8n with a concurrency limit. Not a test.

    .venv/bin/python -m bench.park_handoff [--versions 2.41.1[,1.123.81]] [--callers 8]
        [--hold-ms 300] [--rounds 3] [--limit 4] [-o park_handoff.json]

Regular mode, `N8N_CONCURRENCY_PRODUCTION_LIMIT` = `--limit`, one Redis. Every design runs the
same body: Webhook (`responseNode`) → Hold (Wait `hold_ms`) → Work (Code) → Respond to Webhook.

- polling (today): that workflow wrapped by this checkout's `add-lock-to-workflow`; every
  waiter is a running execution that sleeps in memory and looks at Redis again.
- prototype, all poll: a prototype ticket mutex (`prototype`): INCR a ticket, GET `done`
  (tickets out); ticket t enters when t = done + 1, else it looks again after `POLL_MS`. It
  writes no lease (no TTL, no healing): the baseline that isolates what parking costs.
- parked: the prototype, but a waiter writes its `$execution.resumeUrl` to `park:<t>`, reads
  `done` once more (it may be its turn already: then it deletes `park:<t>` and does not park)
  and parks in a Wait "On Webhook Call" (limit `PARK_LIMIT_S`). The releaser INCRs `done`,
  GETs `park:<t + 1>` and POSTs to it (HTTP Request, `neverError`, on error continue); while
  n8n answers 409 (not parked yet) it reads `park:<t + 1>` again after `RETRY_MS` and resends.
- hybrid, woken at entry: the one next in line (t = done + 2) stays awake and looks every
  `POLL_MS`; the rest park. A holder, as it enters and before its body, resumes t + 1, the new
  next in line (the resume is on the path from the lock's release to the body).
- hybrid, woken after release: the same, but the releaser of ticket r resumes r + 2, who
  becomes the next in line as r + 1 enters (the resume is off that path, but starts later).

Each of `--rounds` rounds runs every design once (the order rotates, so that load on the
machine hits all alike): one uncontended call (it also warms up), an unrelated one-node webhook
workflow called alone, then `--callers` callers at once while the unrelated workflow is called
every `PROBE_EVERY_S`. From the saved executions: the handoff gap (the end of the node that
frees the lock → the next body's first node; polling: Lock Release, prototypes: Release),
efficiency = callers × hold / wall, Redis node executions that waiting added (over an
uncontended acquire's) per waiter-second, and the prototypes' resumes (409s, timeouts, how long
a resume took to answer and to start the resumed run).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import redis

from bench import figures
from bench.harness.calls import burst, call
from bench.harness.executions import in_scope, matching, workflow_ids
from bench.harness.results import command, progress_for, versions, write_report
from bench.harness.runs import (
    Execution,
    end,
    first_output,
    named,
    redis_runs,
    run_data,
    start,
)
from bench.harness.session import Bed, Span, running_bed
from bench.harness.stats import percentile
from bench.harness.workspace import (
    cli,
    prepare,
    push,
    wrap_args,
    write_template,
)
from bench.park_report import LOST_GAP_MS, report
from bench.park_workflows import (
    ENGINE_DESIGNS,
    PROTOTYPES,
    polling_workflow,
    prototype,
    unrelated_workflow,
)
from testbed.client import N8nClient
from testbed.endpoints import N8nInstance

RESULTS = Path(__file__).parent / "results"
PROBE_EVERY_S = 0.5  # the unrelated workflow is called this often while a line drains
ALONE_CALLS = 5  # and this many times alone, before each line
Figures = dict[str, Any]
progress = progress_for("park_handoff")


# ---------------------------------------------------------------------------------------------
# The test bed and the calls.


@dataclass(frozen=True)
class Design:
    name: str
    path: str  # its webhook path (= workflow key)
    workflow_id: str


@dataclass(frozen=True)
class Line:
    """One design's line in one round: the scopes of its uncontended call and of its line,
    the line's wall time, and the unrelated workflow's answer times alone and during it."""

    design: str
    round: int
    solo_scope: str
    scope: str
    wall_s: float
    alone_s: list[float]
    during_s: list[float]


def install(bed: Bed, tag: str) -> tuple[list[Design], str]:
    """The designs and the unrelated workflow in the bed's n8n; the latter's path."""
    root = bed.tmp / "polling"
    prepare(root, bed.n8n)
    cli(root, "create-lock", "--force-overwrite")
    keys = {name: f"park_{name}_{tag}" for name in ENGINE_DESIGNS}
    for name, key in keys.items():
        write_template(root, polling_workflow(key))
        cli(root, *wrap_args(key), *ENGINE_DESIGNS[name])
    push(root)
    ids = workflow_ids(root)
    designs = [Design(name, key, ids[key]) for name, key in keys.items()]
    api = N8nClient(bed.n8n)
    try:
        created = api.create_redis_credential()
        credential = {"id": str(created["id"]), "name": str(created["name"])}
        workflows = [(m, prototype(f"park_{m}_{tag}", m, credential)) for m in PROTOTYPES]
        unrelated = f"park_unrelated_{tag}"
        for name, workflow in [*workflows, ("unrelated", unrelated_workflow(unrelated))]:
            workflow_id = str(api.create_workflow(workflow)["id"])
            api.activate_and_wait(workflow_id, workflow["name"], "POST")
            if name != "unrelated":
                designs.append(Design(name, workflow["name"], workflow_id))
    finally:
        api.close()
    return designs, unrelated


def while_running(
    n8n: N8nInstance, path: str, work: Callable[[], float]
) -> tuple[float, list[float]]:
    """`work()` (it gives a wall time) while the webhook at `path` is called every
    PROBE_EVERY_S, each call on its own: the wall time, and each call's answer time."""
    stop = threading.Event()
    with ThreadPoolExecutor(64) as pool:
        calls: list[Future[float]] = []

        def probe() -> None:
            while not stop.is_set():
                calls.append(pool.submit(lambda: call(n8n, path, {}).seconds))
                stop.wait(PROBE_EVERY_S)

        prober = threading.Thread(target=probe)
        prober.start()
        try:
            wall = work()
        finally:
            stop.set()
            prober.join()
        return wall, [c.result() for c in calls]


def line(
    n8n: N8nInstance, design: Design, unrelated: str, scope: str, number: int,
    args: argparse.Namespace,
) -> Line:  # fmt: skip
    """One uncontended call, the unrelated workflow alone, then the line."""
    solo = f"{scope}-solo"
    call(n8n, design.path, {"scope": solo, "hold_ms": args.hold_ms})
    alone = []
    for _ in range(ALONE_CALLS):
        alone.append(call(n8n, unrelated, {}).seconds)
        time.sleep(0.1)
    bodies = [{"scope": scope, "hold_ms": args.hold_ms}] * args.callers
    wall, during = while_running(
        n8n, unrelated, lambda: burst(n8n, design.path, bodies).wall_seconds
    )
    return Line(design.name, number, solo, scope, wall, alone, during)


# ---------------------------------------------------------------------------------------------
# The figures, from the saved executions.


def holder(design: str, execution: Execution) -> figures.Holder:
    """When an execution lined up, entered and freed the lock, whether it waited, and the Redis
    node executions before its body."""
    if design in ENGINE_DESIGNS:
        engine = figures.v2_holder(execution)
        return replace(engine, waited=engine.waited or "Lock Park" in run_data(execution))
    entered = start(execution, "Hold")
    runs = run_data(execution)
    return figures.Holder(
        execution_id=str(execution["id"]),
        order=float(next(iter(first_output(execution, "Ticket").values()))),
        lined_up_ms=start(execution, "Ticket"),
        entered_ms=entered,
        released_ms=end(execution, "Release"),
        waited="Park" in runs or "Poll" in runs,
        acquire_redis_runs=len(redis_runs(execution, entered)),
    )


def handoffs(design: str, executions: Sequence[Execution]) -> tuple[list[float], list[bool], int]:
    """One line's handoffs in the order the holders entered: the gaps (release node's end →
    next body; slightly negative when the next one saw the lock free before the node that
    freed it had ended), whether the next one was still parked when the lock was freed (its
    resumed run began later), and the bodies that began before the release node began (two
    holders at once)."""
    line = sorted(((holder(design, e), e) for e in executions), key=lambda p: p[0].entered_ms)
    gaps: list[float] = []
    parked: list[bool] = []
    overlaps = 0
    for (a, before), (b, after) in itertools.pairwise(line):
        gaps.append(b.entered_ms - a.released_ms)
        engine = design in ENGINE_DESIGNS
        release = named(before, "Lock Release") if engine else "Release"
        overlaps += b.entered_ms < start(before, release)
        parks = run_data(after).get("Lock Park" if engine else "Park", [])
        parked.append(bool(parks) and float(parks[-1]["startTime"]) > a.released_ms)
    return gaps, parked, overlaps


def resumes(executions: Sequence[Execution], step: int) -> Figures:
    """The prototypes' parking and resumes over one line's executions: who parked, what the
    resumes got, and how long after a resume's start the resumed run's first node started."""
    by_ticket = {int(holder("parked", e).order): e for e in executions}
    statuses: list[int | None] = []
    answered_ms: list[float] = []
    woke_ms: list[float] = []
    early = 0  # 409s to a waiter that parked afterwards (the others: it took its turn itself)
    for ticket, execution in by_ticket.items():
        sent = run_data(execution).get("Resume", [])
        target = by_ticket.get(ticket + step)
        for run in sent:
            output = ((run.get("data") or {}).get("main") or [[]])[0] or [{}]
            status = output[0].get("json", {}).get("statusCode")
            statuses.append(status)
            if status == 409 and target is not None and "Park" in run_data(target):
                early += 1
            if status == 200:
                answered_ms.append(float(run.get("executionTime") or 0))
                if target is not None:
                    after = [
                        float(r["startTime"])
                        for node_runs in run_data(target).values()
                        for r in node_runs
                        if float(r["startTime"]) >= float(run["startTime"])
                    ]
                    if after:
                        woke_ms.append(min(after) - float(run["startTime"]))
    runs = [run_data(e) for e in executions]
    return {
        "parked_waiters": sum(1 for r in runs if "Park" in r),
        "parks": sum(len(r.get("Park", [])) for r in runs),
        "registered_not_parked": sum(1 for r in runs if "Register" in r and "Park" not in r),
        "resumes_200": statuses.count(200),
        "resumes_409": statuses.count(409),
        "resumes_409_early": early,
        "resumes_unanswered": sum(1 for s in statuses if s is None),
        "resumes_other": sum(1 for s in statuses if s not in (200, 409, None)),
        "resume_answered_ms": answered_ms,
        "resumed_run_started_ms": woke_ms,
    }


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def design_figures(
    design: str, lines: Sequence[Line], saved: Sequence[Execution], callers: int, hold_ms: int
) -> Figures:
    """One design's figures over its rounds."""
    by_scope: dict[str, list[Execution]] = {}
    for execution in saved:
        scope = first_output(execution, "Webhook").get("body", {}).get("scope")
        by_scope.setdefault(str(scope), []).append(execution)
    gaps: list[float] = []
    from_park: list[bool] = []
    overlaps = 0
    holders: list[figures.Holder] = []
    solo_runs: list[int] = []
    parking: list[Figures] = []
    for each in lines:
        found = [holder(design, e) for e in by_scope.get(each.scope, [])]
        holders += found
        line_gaps, line_parked, line_overlaps = handoffs(design, by_scope.get(each.scope, []))
        gaps += line_gaps
        from_park += line_parked
        overlaps += line_overlaps
        solo_runs += [
            holder(design, e).acquire_redis_runs for e in by_scope.get(each.solo_scope, [])
        ]
        if design in PROTOTYPES and PROTOTYPES[design].parks:
            parking.append(resumes(by_scope.get(each.scope, []), PROTOTYPES[design].step))
        if design == "engine_parked":
            runs = [run_data(e) for e in by_scope.get(each.scope, [])]
            parking.append({
                "parked_waiters": sum(1 for r in runs if "Lock Park" in r),
                "parks": sum(len(r.get("Lock Park", [])) for r in runs),
            })  # fmt: skip
    uncontended = statistics.median(solo_runs)
    waiters = [h for h in holders if h.waited]
    extra = sum(h.acquire_redis_runs - uncontended for h in waiters)
    alone = [s * 1000 for each in lines for s in each.alone_s]
    during = [s * 1000 for each in lines for s in each.during_s]
    efficiency = [callers * hold_ms / 1000 / each.wall_s for each in lines]
    pairs = list(zip(gaps, from_park, strict=True))
    result: Figures = {
        "saved": len(holders),
        "expected": callers * len(lines),
        "gaps_ms": gaps,
        "gap_median_ms": median(gaps),
        "gap_p99_ms": percentile(gaps, 99) if gaps else None,
        "gaps_over_5s": sum(1 for g in gaps if g > LOST_GAP_MS),
        "next_still_parked": from_park,
        "gap_awake_median_ms": median([g for g, p in pairs if not p]),
        "gap_parked_median_ms": median([g for g, p in pairs if p]),
        "overlaps": overlaps,
        "efficiency": efficiency,
        "efficiency_median": median(efficiency),
        "unrelated_alone_median_ms": median(alone),
        "unrelated_during_median_ms": median(during),
        "unrelated_during_max_ms": max(during) if during else None,
        "unrelated_during_calls": len(during),
        "uncontended_acquire_redis_runs": uncontended,
        "waiters": len(waiters),
        "wait_seconds": sum(h.entered_ms - h.lined_up_ms for h in waiters) / 1000,
        "redis_per_waiter_second": figures.redis_per_wait_second(holders, uncontended),
        "redis_per_waiter": extra / len(waiters) if waiters else None,
    }
    if parking:
        summed = {k: sum(p[k] for p in parking) for k in parking[0] if not k.endswith("_ms")}
        answered = [ms for p in parking for ms in p.get("resume_answered_ms", [])]
        woke = [ms for p in parking for ms in p.get("resumed_run_started_ms", [])]
        result |= summed
        if design in PROTOTYPES:
            result |= {
                "resume_answered_median_ms": median(answered),
                "resumed_run_started_median_ms": median(woke),
                "resumed_run_started_max_ms": max(woke) if woke else None,
            }
    return result


def example_url(bed: Bed) -> str | None:
    """A resume URL as a parked waiter wrote it (its signature shortened)."""
    client = redis.Redis.from_url(bed.redis.url, decode_responses=True)
    try:
        key = next(iter(client.scan_iter("pk:*:park:*", count=1000)), None)
        url = client.get(key) if key else None
    finally:
        client.close()
    if not isinstance(url, str):
        return None
    head, _, signature = url.partition("signature=")
    return head + (f"signature=<{len(signature)} characters>" if signature else "")


def bench_version(version: str, args: argparse.Namespace) -> Figures:
    run = Span()
    settings = {"N8N_CONCURRENCY_PRODUCTION_LIMIT": str(args.limit)}
    with running_bed(version, topology="single", n8n_settings=settings) as bed:
        tag = uuid.uuid4().hex[:6]
        designs, unrelated = install(bed, tag)
        lines: list[Line] = []
        calls = Span()
        for number in range(args.rounds):
            turn = number % len(designs)  # each design leads a round in turn
            for design in designs[turn:] + designs[:turn]:
                progress(f"n8n {version}: round {number + 1} of {args.rounds}, {design.name}")
                scope = f"{design.name}-{number}-{tag}"
                lines.append(line(bed.n8n, design, unrelated, scope, number, args))
        result: Figures = {
            "n8n": version,
            "limit": args.limit,
            "callers": args.callers,
            "hold_ms": args.hold_ms,
            "rounds": args.rounds,
            "calls_seconds": calls.seconds(),
        }
        progress(f"n8n {version}: reading the saved executions")
        for design in designs:
            mine = [each for each in lines if each.design == design.name]
            scopes = {s for each in mine for s in (each.scope, each.solo_scope)}
            count = len(mine) * (args.callers + 1)
            saved = matching(bed.n8n, design.workflow_id, in_scope(scopes), count)
            found = design_figures(design.name, mine, saved, args.callers, args.hold_ms)
            result[design.name] = found | {"lines": [vars(each) for each in mine]}
        result["resume_url_example"] = example_url(bed)
    result["seconds"] = run.seconds()
    result["load_average_1min"] = run.load()
    return result


# ---------------------------------------------------------------------------------------------
# The report.


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--versions", default="2.41.1", help="n8n versions, commas")
    parser.add_argument("--callers", type=int, default=8, help="callers in a line (8)")
    parser.add_argument("--hold-ms", type=int, default=300, help="each body's hold (300)")
    parser.add_argument("--rounds", type=int, default=3, help="lines per design (3)")
    parser.add_argument("--limit", type=int, default=4, help="N8N_CONCURRENCY_PRODUCTION_LIMIT")
    parser.add_argument("-o", "--output", type=Path, help="also write every figure to this JSON")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where the .md goes")
    parser.add_argument("--stem", default=f"park_handoff-{time.strftime('%Y-%m-%d')}")
    args = parser.parse_args(argv)
    results = [bench_version(version, args) for version in versions(args.versions)]
    text = report(results, args, argv)
    print(text)
    progress(f"wrote {write_report(args.results, args.stem, text)}")
    if args.output:
        document = {"command": command("park_handoff", argv), "results": results}
        args.output.write_text(json.dumps(document, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
