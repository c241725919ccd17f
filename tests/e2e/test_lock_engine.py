"""Engine v2 through a workflow wrapped by `add-lock-to-workflow` (the inline form), in a real
n8n with a real Redis: exclusion at volume, arrival order, dead and timed-out waiters, the
lost-wake-up race, and the N-slot semaphore.

The body records its start and end in a Redis list (`engine-sink-<scope>`) that does not
depend on the lock; overlaps and orders are read from there.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import pytest

from n8n_lockkit.primitives import keys
from testbed.settings import topology
from tests.e2e.lockbed import (
    Call,
    LockBed,
    held_lanes,
    run_cli,
    stop_execution,
    tickets_drawn,
    wait_until,
)

REDIS = {
    "redis": {"id": "{{@:env:credentials.redis.id}}", "name": "{{@:env:credentials.redis.name}}"}
}


def _mark(event: str) -> dict[str, Any]:
    body = "$('Webhook').first().json.body"
    message = (
        f"={{{{ JSON.stringify({{ event: '{event}', t: Date.now(), who: {body}.who, "
        f"execution: $execution.id }}) }}}}"
    )
    return {
        "operation": "push",
        "list": f"={{{{ 'engine-sink-' + {body}.scope }}}}",
        "messageData": message,
        "tail": True,
    }


def engine_workflow(key: str) -> dict[str, Any]:
    """Webhook (answers with the last node) → Mark Start → Hold (hold_ms) → Mark End → Answer."""

    def node(
        name: str, kind: str, version: float, x: int, params: dict[str, Any], **extra: Any
    ) -> dict[str, Any]:
        return {
            "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{key}:{name}")),
            "name": name,
            "type": kind,
            "typeVersion": version,
            "position": [x, 0],
            "parameters": params,
            **extra,
        }

    hold = "={{ Math.max(0.01, ($('Webhook').first().json.body.hold_ms || 0) / 1000) }}"
    nodes = [
        node(
            "Webhook",
            "n8n-nodes-base.webhook",
            2,
            0,
            {"httpMethod": "POST", "path": key, "responseMode": "lastNode", "options": {}},
            webhookId=str(uuid.uuid5(uuid.NAMESPACE_URL, key)),
        ),
        node("Mark Start", "n8n-nodes-base.redis", 1, 220, _mark("start"), credentials=REDIS),
        node(
            "Hold",
            "n8n-nodes-base.wait",
            1.1,
            440,
            {"resume": "timeInterval", "amount": hold, "unit": "seconds"},
            webhookId=str(uuid.uuid5(uuid.NAMESPACE_URL, key + "-hold")),
        ),
        node("Mark End", "n8n-nodes-base.redis", 1, 660, _mark("end"), credentials=REDIS),
        node(
            "Answer",
            "n8n-nodes-base.set",
            3.4,
            880,
            {
                "mode": "raw",
                "jsonOutput": "={{ { who: $('Webhook').first().json.body.who } }}",
                "options": {},
            },
        ),
    ]
    chain = [n["name"] for n in nodes]
    return {
        "name": f"e2e engine ({key})",
        "nodes": nodes,
        "connections": {
            a: {"main": [[{"node": b, "type": "main", "index": 0}]]}
            for a, b in itertools.pairwise(chain)
        },
        "settings": {"executionOrder": "v1"},
    }


def ticketed_workflow(key: str) -> dict[str, Any]:
    """engine_workflow whose start mark also names the caller's ticket (Lock Decide's), so a
    test can tell the line's order (tickets) from the order the calls were sent."""
    workflow = engine_workflow(key)
    start = next(n for n in workflow["nodes"] if n["name"] == "Mark Start")
    start["parameters"]["messageData"] = start["parameters"]["messageData"].replace(
        "execution: $execution.id",
        "execution: $execution.id, ticket: $('Lock Decide').first().json.ticket",
    )
    return workflow


def install(bed: LockBed, key: str, *flags: str, body: dict[str, Any] | None = None) -> str:
    """Wrap `body` (default: engine_workflow) with the lock, validate it and push it."""
    path = bed.root / "workflows" / f"{key}.template.json"
    path.write_text(json.dumps(body or engine_workflow(key), indent=2))
    run_cli(
        bed.root,
        "add-lock-to-workflow",
        "--workflow-key",
        key,
        "--scope-expression",
        "={{ $json.body.scope }}",
        "--ttl-seconds",
        "60",
        "--max-wait-seconds",
        "120",
        *flags,
    )
    run_cli(bed.root, "validate", "--env", "e2e")
    run_cli(bed.root, "push", "--env", "e2e", "--activate", key)
    return key


@pytest.fixture(scope="module")
def mutex(lockbed: LockBed) -> str:
    return install(lockbed, f"engine_mutex_{uuid.uuid4().hex[:6]}")


@pytest.fixture(scope="module")
def parked_mutex(lockbed: LockBed) -> str:
    """The mutex with --park: a waiter two or more places back parks, and the release two
    tickets ahead of it wakes it. Regular mode only: in queue mode n8n answers a parked
    webhook caller at once (docs/parking.md)."""
    if topology() == "queue":
        pytest.skip("queue mode answers a parked webhook caller at once, with an empty 200")
    return install(lockbed, f"engine_parked_{uuid.uuid4().hex[:6]}", "--park")


@pytest.fixture(scope="module")
def ticketed_mutex(lockbed: LockBed) -> str:
    key = f"engine_tmutex_{uuid.uuid4().hex[:6]}"
    return install(lockbed, key, body=ticketed_workflow(key))


@pytest.fixture(scope="module")
def semaphore(lockbed: LockBed) -> str:
    return install(lockbed, f"engine_sem_{uuid.uuid4().hex[:6]}", "--max-concurrent", "3")


@pytest.fixture(scope="module")
def via_subworkflow(lockbed: LockBed) -> str:
    return install(lockbed, f"engine_sub_{uuid.uuid4().hex[:6]}", "--via-subworkflow")


def call(bed: LockBed, key: str, scope: str, caller: int, **body: Any) -> Call:
    return bed.webhook(key, {"scope": scope, "who": caller, **body})


def spans(bed: LockBed, scope: str) -> dict[int, tuple[int, int]]:
    """caller -> (start, end) of its body, in ms."""
    events = [json.loads(e) for e in bed.redis.lrange(f"engine-sink-{scope}", 0, -1)]
    starts = {e["who"]: e["t"] for e in events if e["event"] == "start"}
    ends = {e["who"]: e["t"] for e in events if e["event"] == "end"}
    return {c: (starts[c], ends[c]) for c in starts if c in ends}


def most_at_once(intervals: list[tuple[int, int]]) -> int:
    edges = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    running = peak = 0
    for _, step in edges:  # an end sorts before a start at the same ms: touching is not overlap
        running += step
        peak = max(peak, running)
    return peak


@pytest.fixture
def scope(unique_name: str) -> Iterator[str]:
    yield f"engine-{unique_name}"


@pytest.mark.parametrize("form", ["mutex", "via_subworkflow"])
def test_200_contended_executions_on_one_scope_never_overlap(
    lockbed: LockBed, scope: str, form: str, request: pytest.FixtureRequest
) -> None:
    key = request.getfixturevalue(form)
    total = 200 if form == "mutex" else 60  # the sub-workflow form is slower; 60 prove it
    with ThreadPoolExecutor(20) as pool:
        calls = list(pool.map(lambda i: call(lockbed, key, scope, i, hold_ms=5), range(total)))
    assert [c.status for c in calls] == [200] * total, [c.body for c in calls if c.status != 200]
    assert sorted(c.body["who"] for c in calls) == list(range(total))
    bodies = spans(lockbed, scope)
    assert len(bodies) == total
    assert most_at_once(list(bodies.values())) == 1
    assert tickets_drawn(lockbed.redis, scope) == total
    assert held_lanes(lockbed.redis, scope) == []


def test_waiters_that_arrive_at_spaced_times_are_served_in_that_order(
    lockbed: LockBed, ticketed_mutex: str, scope: str
) -> None:
    """The line is the tickets' order: a caller's place is where n8n has run its Lock Take
    Ticket. Calls sent 0.15 s apart reached it out of order on CI (6 before 5, in regular and
    in queue mode): n8n's own start of an execution varies by more than that on a loaded
    machine. So bodies must follow the tickets exactly, and calls 0.5 s apart their sending."""
    with ThreadPoolExecutor(8) as pool:
        first = pool.submit(call, lockbed, ticketed_mutex, scope, 0, hold_ms=4000)
        wait_until(lambda: 0 in starts(lockbed, scope), 20, "the first caller holds the lock")
        waiters = []
        for caller in range(1, 7):
            waiters.append(pool.submit(call, lockbed, ticketed_mutex, scope, caller, hold_ms=50))
            time.sleep(0.5)  # each arrives well after the one before, while 0 still holds
        results = [first.result(), *(w.result() for w in waiters)]
    assert [r.status for r in results] == [200] * 7
    events = [json.loads(e) for e in lockbed.redis.lrange(f"engine-sink-{scope}", 0, -1)]
    started = [(e["who"], int(e["ticket"])) for e in events if e["event"] == "start"]
    assert [ticket for _, ticket in started] == sorted(t for _, t in started), started
    in_body_order = [who for who, _ in started]
    if topology() == "queue":
        # A ticket is drawn when a worker runs the job: two workers may start jobs sent close
        # together in either order, so there only the tickets' order is the line's.
        assert sorted(in_body_order) == list(range(7))
    else:
        assert in_body_order == list(range(7))


def saved_runs(bed: LockBed, key: str, scope: str, callers: int) -> dict[int, dict[str, Any]]:
    """caller -> the run data (node name -> runs) of its saved execution."""
    found: dict[int, dict[str, Any]] = {}

    def saved() -> bool:
        for execution in bed.executions(bed.workflow_id(key), with_data=True):
            runs = ((execution.get("data") or {}).get("resultData") or {}).get("runData") or {}
            if "Webhook" not in runs:
                continue
            body = runs["Webhook"][0]["data"]["main"][0][0]["json"]["body"]
            if body.get("scope") == scope:
                found[body["who"]] = runs
        return len(found) == callers

    wait_until(saved, 20, f"the {callers} executions on {scope} are saved")
    return found


def line_reads(bed: LockBed, key: str, scope: str, callers: int) -> dict[int, int]:
    """caller -> how many times its execution read the line (ran Lock Read Line)."""
    runs = saved_runs(bed, key, scope, callers)
    return {caller: len(run.get("Lock Read Line", [])) for caller, run in runs.items()}


def test_an_arrival_right_after_the_last_release_enters_without_reading_the_line(
    lockbed: LockBed, mutex: str, scope: str
) -> None:
    """The fast path: the ticket's INCR node also tells the last ticket out, so the next
    ticket enters at once. The first arrival on a new scope reads (it also looks for a holder
    of format 1)."""
    for caller in range(3):
        assert call(lockbed, mutex, scope, caller).status == 200
    assert line_reads(lockbed, mutex, scope, 3) == {0: 1, 1: 0, 2: 0}
    assert lockbed.redis.get(keys.SCHEMA.fast_key(scope)) == str(3 * keys.FAST_SCALE)


def test_an_arrival_while_a_fast_path_holder_holds_reads_the_line_and_waits(
    lockbed: LockBed, mutex: str, scope: str
) -> None:
    assert call(lockbed, mutex, scope, 0).status == 200  # the scope's first: the long way
    with ThreadPoolExecutor(2) as pool:
        holder = pool.submit(call, lockbed, mutex, scope, 1, hold_ms=1500)
        wait_until(lambda: 1 in starts(lockbed, scope), 20, "the fast-path caller holds")
        waiter = call(lockbed, mutex, scope, 2, hold_ms=10)
        assert holder.result().status == 200 and waiter.status == 200
    bodies = spans(lockbed, scope)
    assert bodies[2][0] >= bodies[1][1], "the arrival entered beside the fast-path holder"
    reads = line_reads(lockbed, mutex, scope, 3)
    assert reads[1] == 0 and reads[2] >= 1


def test_waiters_sleep_until_their_expected_turn_before_their_first_read(
    lockbed: LockBed, mutex: str, scope: str
) -> None:
    """A waiter's ticket INCR node also says how many tickets are ahead, the hold average and
    when the holder entered, so it sleeps until its expected turn before it reads the line,
    and is still served in its turn."""
    assert call(lockbed, mutex, scope, 0, hold_ms=600).status == 200  # an average, a release
    with ThreadPoolExecutor(4) as pool:
        holder = pool.submit(call, lockbed, mutex, scope, 1, hold_ms=600)
        wait_until(lambda: 1 in starts(lockbed, scope), 20, "the first caller holds the lock")
        waiters = []
        for caller in (2, 3, 4):
            # FIFO is by ticket: the next caller comes once this one has drawn its own (a
            # fixed pause let an execution that n8n started late draw after the next one).
            waiters.append(pool.submit(call, lockbed, mutex, scope, caller, hold_ms=600))
            wait_until(partial(has_drawn, lockbed, scope, caller + 1), 20, "the caller's ticket")
        assert [f.result().status for f in (holder, *waiters)] == [200] * 4
    bodies = spans(lockbed, scope)
    assert sorted(bodies, key=lambda c: bodies[c][0]) == [0, 1, 2, 3, 4]
    assert most_at_once(list(bodies.values())) == 1
    runs = saved_runs(lockbed, mutex, scope, 5)
    for caller in (2, 3, 4):
        first_sleep = runs[caller]["Lock Sleep"][0]["startTime"]
        assert first_sleep < runs[caller]["Lock Read Line"][0]["startTime"], caller
    # The third in line sleeps past the first waiter's turn before it looks at all.
    assert runs[4]["Lock Read Line"][0]["startTime"] >= bodies[2][0] - 100


def has_drawn(bed: LockBed, scope: str, tickets: int) -> bool:
    return tickets_drawn(bed.redis, scope) >= tickets


def starts(bed: LockBed, scope: str) -> set[int]:
    events = [json.loads(e) for e in bed.redis.lrange(f"engine-sink-{scope}", 0, -1)]
    return {e["who"] for e in events if e["event"] == "start"}


@pytest.mark.parametrize("lock", ["mutex", "parked_mutex"])
def test_a_waiter_that_died_in_line_is_skipped_within_the_grace(
    lockbed: LockBed, lock: str, scope: str, request: pytest.FixtureRequest
) -> None:
    """A ticket drawn by a waiter whose execution then died (it never enters, never leaves a
    mark) holds up the line for the skip grace (5 s) at most. With --park the live caller
    behind it parks (two tickets ahead): the holder's release wakes it, and it passes the dead
    one as an awake waiter would (when the next in line woke the one behind it, this caller
    slept 52.7 s, until its backstop)."""
    mutex = request.getfixturevalue(lock)
    with ThreadPoolExecutor(2) as pool:
        holder = pool.submit(call, lockbed, mutex, scope, 0, hold_ms=1000)
        wait_until(lambda: 0 in starts(lockbed, scope), 20, "the first caller holds the lock")
        lockbed.redis.incr(f"n8n-lock-{scope}:ticket")  # the dead waiter's ticket
        start = time.monotonic()
        live = call(lockbed, mutex, scope, 2, hold_ms=10)
        waited = time.monotonic() - start
        assert holder.result().status == 200
    assert live.status == 200
    assert waited < 1.0 + 5.0 + 2.5, waited  # the holder's rest + the grace + n8n's overhead
    assert waited > 5.0 - 1.0, "the dead ticket must be skipped only after the grace"


def listed_waiter(bed: LockBed, scope: str, ticket: int) -> str | None:
    """The execution id whose cleanup index lists `ticket` of `scope`, if one does."""
    for key in bed.redis.scan_iter(match=keys.SCHEMA.index_key("*", "*")):
        entry = bed.redis.hget(key, scope)
        if entry is not None and json.loads(entry)["ticket"] == ticket:
            return str(key).rsplit(":", 1)[1]
    return None


@pytest.mark.parametrize("flags", [(), ("--park",)], ids=["awake", "parked"])
def test_a_waiter_stopped_in_line_is_passed_at_once_by_the_cleanup_handler(
    lockbed: LockBed, scope: str, flags: tuple[str, ...]
) -> None:
    """A waiter lists its ticket in its execution's cleanup index before its first sleep. When
    its user stops it, n8n 2.x runs the cleanup handler of a workflow wrapped with
    --lock-on-error, which marks that ticket gone: the caller behind enters as soon as the
    holder leaves, not a 5 s grace after (as it did before issue 33; n8n 1.x runs no error
    workflow for a stopped execution, and the grace still applies there). With --park the
    caller behind parks, and the holder's release wakes it (when the stopped waiter was to
    wake it, it slept 43 s, until its backstop)."""
    if lockbed.n8n.version.startswith("1."):
        pytest.skip("n8n 1.x runs no error workflow for a stopped execution")
    if topology() == "queue":
        # Seen in CI (56442ab): the cleanup marked ticket 2, yet the next body began 7.6 s
        # after the holder's end. Not diagnosed yet (issue 33's notes).
        pytest.skip("queue mode: the handoff after a stopped waiter is not yet explained")
    key = install(lockbed, f"engine_heal_{uuid.uuid4().hex[:6]}", "--lock-on-error", *flags)
    with ThreadPoolExecutor(3) as pool:
        holder = pool.submit(call, lockbed, key, scope, 0, hold_ms=4000)
        wait_until(lambda: 0 in starts(lockbed, scope), 20, "the first caller holds the lock")
        stopped = pool.submit(call, lockbed, key, scope, 1, hold_ms=10)
        wait_until(lambda: listed_waiter(lockbed, scope, 2) is not None, 20, "ticket 2 listed")
        behind = pool.submit(call, lockbed, key, scope, 2, hold_ms=10)
        wait_until(lambda: has_drawn(lockbed, scope, 3), 20, "the caller behind drew ticket 3")
        stop_execution(lockbed.n8n, str(listed_waiter(lockbed, scope, 2)))
        marked = keys.SCHEMA.gone_key(scope, 2)
        wait_until(lambda: lockbed.redis.exists(marked) == 1, 20, "the cleanup marked ticket 2")
        assert holder.result().status == 200 and behind.result().status == 200
        stopped.result()  # answered (n8n's answer to a stopped execution)
    bodies = spans(lockbed, scope)
    assert 1 not in bodies
    handoff = bodies[2][0] - bodies[0][1]
    assert handoff < 2000, f"the stopped waiter's ticket held up the line {handoff} ms"


def failing_workflow(key: str) -> dict[str, Any]:
    """engine_workflow whose last node fails the execution when the caller asks (`fail`),
    after the body's end mark."""
    workflow = engine_workflow(key)
    answer = next(n for n in workflow["nodes"] if n["name"] == "Answer")
    answer["parameters"]["jsonOutput"] = (
        "={{ (() => { if ($('Webhook').first().json.body.fail) throw new Error('e2e: failing on "
        "purpose'); return { who: $('Webhook').first().json.body.who }; })() }}"
    )
    return workflow


def test_a_holder_that_fails_leaves_no_parked_waiter_asleep(lockbed: LockBed, scope: str) -> None:
    """--park, --lock-on-error: the cleanup handler frees a holder whose execution failed: no
    release of its own runs, so none wakes the waiter parked two behind it. The next in line's
    entry does (the holder's record says healed): the parked waiter's body follows the next in
    line's, not its backstop (10 s, up to a minute more with n8n's WaitTracker)."""
    if topology() == "queue":
        pytest.skip("queue mode answers a parked webhook caller at once, with an empty 200")
    key = f"engine_fails_{uuid.uuid4().hex[:6]}"
    install(lockbed, key, "--lock-on-error", "--park", body=failing_workflow(key))
    with ThreadPoolExecutor(3) as pool:
        holder = pool.submit(call, lockbed, key, scope, 0, hold_ms=3000, fail=True)
        wait_until(lambda: 0 in starts(lockbed, scope), 20, "the first caller holds the lock")
        first = pool.submit(call, lockbed, key, scope, 1, hold_ms=500)
        wait_until(partial(has_drawn, lockbed, scope, 2), 20, "the next in line's ticket")
        second = pool.submit(call, lockbed, key, scope, 2, hold_ms=10)
        wait_until(partial(has_drawn, lockbed, scope, 3), 20, "the second in line's ticket")
        holder.result()
        assert first.result().status == 200 and second.result().status == 200
    bodies = spans(lockbed, scope)
    assert most_at_once(list(bodies.values())) == 1
    gap = bodies[2][0] - bodies[1][1]
    assert gap < 3000, f"the waiter parked behind the next in line slept {gap} ms past its turn"


def test_a_waiter_that_timed_out_leaves_the_line_at_once(
    lockbed: LockBed, mutex: str, scope: str
) -> None:
    impatient_key = install(lockbed, f"engine_1s_{uuid.uuid4().hex[:6]}", "--max-wait-seconds", "1")
    with ThreadPoolExecutor(3) as pool:
        holder = pool.submit(call, lockbed, mutex, scope, 0, hold_ms=3000)
        wait_until(lambda: 0 in starts(lockbed, scope), 20, "the first caller holds the lock")
        impatient = pool.submit(call, lockbed, impatient_key, scope, 1, hold_ms=10)
        time.sleep(0.3)
        patient = pool.submit(call, lockbed, mutex, scope, 2, hold_ms=10)
        assert holder.result().status == 200
        released = time.time() * 1000
        gave_up, after = impatient.result(), patient.result()
    assert gave_up.status >= 400 or "timed out" in json.dumps(gave_up.body)
    assert after.status == 200
    bodies = spans(lockbed, scope)
    assert 1 not in bodies
    # The patient waiter looks at least every second (the fallback when the holder overruns
    # its average), then skips the marked ticket at once: never the 5 s grace of a dead one.
    assert bodies[2][0] - bodies[0][1] < 2000, "the timed-out ticket held up the line"
    assert bodies[2][0] <= released + 2000


def test_a_caller_that_queues_as_the_holder_releases_still_gets_the_lock_promptly(
    lockbed: LockBed, mutex: str, scope: str
) -> None:
    """The lost-wake-up race: arrivals timed around the release never sleep past it by more
    than one look (at most 1 s)."""
    late: list[float] = []
    for round_ in range(12):
        with ThreadPoolExecutor(2) as pool:
            holder = pool.submit(call, lockbed, mutex, scope, 2 * round_, hold_ms=150)
            time.sleep(0.1 + 0.01 * round_)  # from well before to just after the release
            start = time.monotonic()
            waiter = call(lockbed, mutex, scope, 2 * round_ + 1, hold_ms=1)
            late.append(time.monotonic() - start)
            assert holder.result().status == 200 and waiter.status == 200
    bodies = spans(lockbed, scope)
    gaps = [bodies[2 * r + 1][0] - bodies[2 * r][1] for r in range(12)]
    assert all(gap < 1000 for gap in gaps), gaps
    assert most_at_once(list(bodies.values())) == 1


def test_a_semaphore_of_three_holds_three_at_once_and_never_more(
    lockbed: LockBed, semaphore: str, scope: str
) -> None:
    with ThreadPoolExecutor(12) as pool:
        calls = list(pool.map(lambda i: call(lockbed, semaphore, scope, i, hold_ms=600), range(12)))
    assert [c.status for c in calls] == [200] * 12
    bodies = spans(lockbed, scope)
    assert len(bodies) == 12
    assert most_at_once(list(bodies.values())) == 3
    assert held_lanes(lockbed.redis, scope) == []


def test_fail_fast_on_a_held_scope_names_it_and_does_not_block_the_line(
    lockbed: LockBed, scope: str
) -> None:
    key = install(lockbed, f"engine_ff_{uuid.uuid4().hex[:6]}", "--fail-fast")
    with ThreadPoolExecutor(2) as pool:
        holder = pool.submit(call, lockbed, key, scope, 0, hold_ms=1500)
        wait_until(lambda: 0 in starts(lockbed, scope), 20, "the first caller holds the lock")
        refused = call(lockbed, key, scope, 1)
        assert holder.result().status == 200
    assert refused.status >= 400 or "fail-fast" in json.dumps(refused.body)
    start = time.monotonic()
    assert call(lockbed, key, scope, 2).status == 200
    assert time.monotonic() - start < 2.5, "the refused ticket held up the line"
