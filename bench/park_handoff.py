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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from bench import figures
from bench.harness.calls import burst, call
from bench.harness.executions import in_scope, matching, workflow_ids
from bench.harness.results import command, measured, progress_for, versions, write_report
from bench.harness.runs import (
    REDIS,
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
    chained,
    cli,
    node,
    prepare,
    push,
    webhook,
    wrap_args,
    write_template,
)
from n8n_lockkit.primitives.nodekit import if_parameters
from testbed.client import N8nClient
from testbed.endpoints import N8nInstance

RESULTS = Path(__file__).parent / "results"
PARK_LIMIT_S = 120  # the parked Wait's "Limit Wait Time": the backstop for a lost resume
POLL_MS = 25  # hybrids: how often the one next in line looks at `done`
RETRY_MS = 25  # a resume refused with 409 (not parked yet) is sent again after this
RETRIES = 40  # at most this many times (about a second)
RESUME_TIMEOUT_MS = 2000  # the HTTP Request's timeout; a timed-out resume may still land
PROBE_EVERY_S = 0.5  # the unrelated workflow is called this often while a line drains
ALONE_CALLS = 5  # and this many times alone, before each line
LOST_GAP_MS = 5000  # a handoff this slow waited for the backstop: a lost resume
Figures = dict[str, Any]
progress = progress_for("park_handoff")

BODY = "$('Webhook').first().json.body"
BASE = f"('pk:' + {BODY}.scope + ':')"  # the prototype's keys of a scope
TICKET = "Object.values($('Ticket').first().json)[0]"


# ---------------------------------------------------------------------------------------------
# The workflows.


def body_nodes(key: str, x: int) -> list[dict[str, Any]]:
    """Hold (Wait hold_ms) → Work (Code) → Respond (its item), from x on."""
    hold = f"={{{{ Math.max(0.01, {BODY}.hold_ms / 1000) }}}}"
    return [
        node(
            key, "Hold", "n8n-nodes-base.wait", 1.1, x,
            {"resume": "timeInterval", "amount": hold, "unit": "seconds"},
            webhookId=str(uuid.uuid5(uuid.NAMESPACE_URL, key + "-hold")),
        ),
        node(
            key, "Work", "n8n-nodes-base.code", 2, x + 220,
            {"jsCode": "return [{ json: { done: Date.now() } }];"},
        ),
        node(
            key, "Respond", "n8n-nodes-base.respondToWebhook", 1.1, x + 440,
            {"respondWith": "firstIncomingItem", "options": {}},
        ),
    ]  # fmt: skip


def responding_webhook(key: str) -> dict[str, Any]:
    hook = webhook(key)
    hook["parameters"]["responseMode"] = "responseNode"
    return hook


def polling_workflow(key: str) -> dict[str, Any]:
    """The body alone; `add-lock-to-workflow` wraps it."""
    return chained(key, [responding_webhook(key), *body_nodes(key, 220)])


def unrelated_workflow(key: str) -> dict[str, Any]:
    """One Webhook node that answers with its own item once its execution ran."""
    return chained(key, [webhook(key)])


def _redis(
    key: str, name: str, x: int, parameters: dict[str, Any], credential: dict[str, str]
) -> dict[str, Any]:
    return node(key, name, REDIS, 1, x, parameters, credentials={"redis": credential})


def _if(key: str, name: str, x: int, test: str) -> dict[str, Any]:
    return node(key, name, "n8n-nodes-base.if", 2.2, x, if_parameters(key + name, test))


def _wait(key: str, name: str, x: int, parameters: dict[str, Any]) -> dict[str, Any]:
    webhook_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{key}-{name}"))
    return node(key, name, "n8n-nodes-base.wait", 1.1, x, parameters, webhookId=webhook_id)


@dataclass(frozen=True)
class Prototype:
    """How a prototype waits and hands over. `parks`: waiters park (else every waiter polls);
    `polls`: the one next in line stays awake and looks every POLL_MS; `wake_at`: who resumes a
    parked waiter, the releaser after its release (`release`) or a holder as it enters, before
    its body (`entry`); `step`: it resumes its own ticket + step."""

    parks: bool
    polls: bool
    wake_at: str = "release"
    step: int = 1


PROTOTYPES = {
    "polled": Prototype(parks=False, polls=True),
    "parked": Prototype(parks=True, polls=False),
    "hybrid_entry": Prototype(parks=True, polls=True, wake_at="entry"),
    "hybrid_release": Prototype(parks=True, polls=True, step=2),
}
DESIGNS = ("polling", *PROTOTYPES)
LABELS = {
    "polling": "polling (today's engine)",
    "polled": "prototype, all poll",
    "parked": "parked",
    "hybrid_entry": "hybrid, woken at entry",
    "hybrid_release": "hybrid, woken after release",
}


def decide_expression(shape: Prototype) -> str:
    """The prototypes' Decide: enter, poll (next in line, or anyone when nobody parks),
    register the resume URL, park, or (registered, then found it need not park) unregister
    first, so that whoever would resume it stops sending resumes that n8n refuses."""
    if not shape.parks:
        return (
            f"={{{{ (() => {{ const t = {TICKET}; const done = Number($json.done ?? 0); "
            "const ahead = t - done - 1; const state = ahead <= 0 ? 'enter' : 'poll'; "
            "return { ticket: t, done, ahead, state }; })() }}"
        )
    poll = "ahead === 1 ? 'poll' : " if shape.polls else ""
    return (
        f"={{{{ (() => {{ const t = {TICKET}; const done = Number($json.done ?? 0); "
        "const ahead = t - done - 1; const registered = $('Register').isExecuted; "
        f"let state = ahead <= 0 ? 'enter' : {poll}(registered ? 'park' : 'register'); "
        "if (state !== 'park' && registered && !$('Park').isExecuted "
        "&& !$('Unregister').isExecuted) state = 'unregister'; "
        "return { ticket: t, done, ahead, state }; })() }}"
    )


def wake_nodes(key: str, x: int, step: int, credential: dict[str, str]) -> list[dict[str, Any]]:
    """Next (GET the resume URL of ticket + `step`) → Parked? → Resume (POST it) → Refused?
    (409: not parked yet) → Retry (a short Wait) → Next again."""
    return [
        _redis(key, "Next", x, {
            "operation": "get", "propertyName": "url",
            "key": f"={{{{ {BASE} + 'park:' + ({TICKET} + {step}) }}}}",
            "keyType": "string", "options": {"dotNotation": False},
        }, credential),
        _if(key, "Parked?", x + 220, "$json.url !== null"),
        node(key, "Resume", "n8n-nodes-base.httpRequest", 4.2, x + 440, {
            "method": "POST", "url": "={{ $('Next').first().json.url }}",
            "options": {
                "timeout": RESUME_TIMEOUT_MS,
                "response": {"response": {"neverError": True, "fullResponse": True}},
            },
        }, onError="continueRegularOutput"),
        _if(key, "Refused?", x + 660, f"$json.statusCode === 409 && $runIndex < {RETRIES}"),
        _wait(key, "Retry", x + 880, {
            "resume": "timeInterval", "amount": RETRY_MS / 1000, "unit": "seconds",
        }),
    ]  # fmt: skip


def waiting_nodes(key: str, shape: Prototype, credential: dict[str, str]) -> list[dict[str, Any]]:
    """Register (SET `park:<t>` to the resume URL), Park (Wait "On Webhook Call") and
    Unregister (DEL `park:<t>`), and Poll (a short Wait), as the prototype has them; each goes
    back to Look."""
    register = _redis(key, "Register", 1100, {
        "operation": "set", "key": f"={{{{ {BASE} + 'park:' + $json.ticket }}}}",
        "value": "={{ $execution.resumeUrl }}", "keyType": "string", "expire": True, "ttl": 600,
    }, credential)  # fmt: skip
    park = _wait(key, "Park", 1100, {
        "resume": "webhook", "httpMethod": "POST", "limitWaitTime": True,
        "limitType": "afterTimeInterval", "resumeAmount": PARK_LIMIT_S, "resumeUnit": "seconds",
        "options": {},
    })  # fmt: skip
    unregister = _redis(key, "Unregister", 1100, {
        "operation": "delete", "key": f"={{{{ {BASE} + 'park:' + $json.ticket }}}}",
    }, credential)  # fmt: skip
    poll = _wait(
        key, "Poll", 1100, {"resume": "timeInterval", "amount": POLL_MS / 1000, "unit": "seconds"}
    )
    parking = [register, park, unregister] if shape.parks else []
    return [*parking, *([poll] if shape.polls else [])]


def prototype(key: str, design: str, credential: dict[str, str]) -> dict[str, Any]:
    """A ticket mutex around the body, waiting and handing over as PROTOTYPES[design] says:
    Webhook → Ticket → Look → Decide → Route → (enter) [wake at entry] Hold → Work → Respond →
    Release [wake after release]; Route's other outputs wait and go back to Look."""
    shape = PROTOTYPES[design]
    waiting = waiting_nodes(key, shape, credential)
    routes = ["enter", *(n["name"].lower() for n in waiting)]
    index = ", ".join(f"{state}: {i}" for i, state in enumerate(routes))
    at_entry = shape.parks and shape.wake_at == "entry"
    after_release = shape.parks and shape.wake_at == "release"
    nodes = [
        responding_webhook(key),
        _redis(key, "Ticket", 220, {
            "operation": "incr", "key": f"={{{{ {BASE} + 'ticket' }}}}", "expire": True,
            "ttl": 600,
        }, credential),
        _redis(key, "Look", 440, {
            "operation": "get", "propertyName": "done", "key": f"={{{{ {BASE} + 'done' }}}}",
            "keyType": "string", "options": {"dotNotation": False},
        }, credential),
        node(key, "Decide", "n8n-nodes-base.set", 3.4, 660, {
            "mode": "raw", "jsonOutput": decide_expression(shape), "includeOtherFields": False,
            "options": {},
        }),
        node(key, "Route", "n8n-nodes-base.switch", 3.2, 880, {
            "mode": "expression", "numberOutputs": len(routes),
            "output": f"={{{{ ({{ {index} }})[$json.state] ?? 0 }}}}",
        }),
        *waiting,
        *(wake_nodes(key, 1320, shape.step, credential) if at_entry else []),
        *body_nodes(key, 2420 if at_entry else 1320),
        _redis(key, "Release", 3080 if at_entry else 1980, {
            "operation": "incr", "key": f"={{{{ {BASE} + 'done' }}}}", "expire": True,
            "ttl": 600,
        }, credential),
        *(wake_nodes(key, 2200, shape.step, credential) if after_release else []),
    ]  # fmt: skip
    connections: dict[str, Any] = {}

    def link(source: str, *outputs: list[dict[str, Any]]) -> None:
        connections[source] = {"main": list(outputs)}

    def to(target: str) -> list[dict[str, Any]]:
        return [{"node": target, "type": "main", "index": 0}]

    body = ["Hold", "Work", "Respond", "Release", *(["Next"] if after_release else [])]
    for source, target in itertools.pairwise(["Webhook", "Ticket", "Look", "Decide", "Route"]):
        link(source, to(target))
    for source, target in itertools.pairwise(body):
        link(source, to(target))
    link("Route", to("Next" if at_entry else "Hold"), *(to(n["name"]) for n in waiting))
    for waiter in waiting:
        link(waiter["name"], to("Look"))
    if shape.parks:  # when Parked? or Refused? says no: the body, or nothing after release
        then = to("Hold") if at_entry else []
        link("Next", to("Parked?"))
        link("Parked?", to("Resume"), then)
        link("Resume", to("Refused?"))
        link("Refused?", to("Retry"), then)
        link("Retry", to("Next"))  # it may have unregistered meanwhile
    return {
        "name": key,
        "nodes": nodes,
        "connections": connections,
        "settings": {"executionOrder": "v1"},
    }


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
    """The three designs and the unrelated workflow in the bed's n8n; the latter's path."""
    key = f"park_polling_{tag}"
    root = bed.tmp / "polling"
    prepare(root, bed.n8n)
    write_template(root, polling_workflow(key))
    cli(root, "create-lock", "--force-overwrite")
    cli(root, *wrap_args(key))
    push(root)
    designs = [Design("polling", key, workflow_ids(root)[key])]
    api = N8nClient(bed.n8n)
    try:
        created = api.create_redis_credential()
        credential = {"id": str(created["id"]), "name": str(created["name"])}
        workflows = [(m, prototype(f"park_{m}_{tag}", m, credential)) for m in DESIGNS[1:]]
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
    if design == "polling":
        return figures.v2_holder(execution)
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
        release = named(before, "Lock Release") if design == "polling" else "Release"
        overlaps += b.entered_ms < start(before, release)
        parks = run_data(after).get("Park", [])
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
        answered = [ms for p in parking for ms in p["resume_answered_ms"]]
        woke = [ms for p in parking for ms in p["resumed_run_started_ms"]]
        result |= summed | {
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


def ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


Row = tuple[str, Callable[[Figures], str]]


def rows(result: Figures) -> list[Row]:
    k, hold = result["callers"], result["hold_ms"]

    def parked(show: Callable[[Figures], str]) -> Callable[[Figures], str]:
        return lambda f: show(f) if "parks" in f else "–"

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
         parked(lambda f: f"{f['parked_waiters']} ({f['parks']})")),
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
