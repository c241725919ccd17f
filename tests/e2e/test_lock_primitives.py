"""The lock primitives in a real n8n with a real Redis (ids from lock-design.md §2.7).

Every test owns its scope (`unique_name`) and waits on conditions, not on sleeps.
"""

from __future__ import annotations

import itertools
import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import pytest

from n8n_lockkit.primitives import engine, keys
from tests.e2e.lockbed import (
    REGISTERED_SCOPE,
    LockBed,
    acquired,
    held_lanes,
    run_cli,
    stat,
    tickets_drawn,
    wait_until,
)

MARGIN = 2.5  # n8n's own overhead per call on a 2-core machine, with room to spare
LOOK = engine.MAX_POLL_MS / 1000  # the longest a waiter sleeps between two looks at the line
GRACE = keys.SKIP_GRACE_SECONDS


def _record(lockbed: LockBed, key: str) -> dict[str, Any] | None:
    raw = lockbed.redis.get(key)
    return None if raw is None else dict(json.loads(raw))


def _max_overlap(lockbed: LockBed, scope: str) -> int:
    """The most critical sections of `scope` that ran at one moment, from the sink."""
    moves = sorted((e["t"], 1 if e["event"] == "start" else -1) for e in lockbed.sink(scope))
    # an end and a start at the same millisecond: the end comes first (-1 sorts before 1)
    return max(itertools.accumulate(move for _, move in moves), default=0)


def test_l01_uncontended_acquire_and_release_leave_only_the_lines_scalars(
    lockbed: LockBed, unique_name: str
) -> None:
    call = lockbed.lock(unique_name)
    acquire = acquired(call)
    assert call.body["release"] == {
        "released": True,
        "idempotent": False,
        "scope": unique_name,
        "lock_id": acquire["lock_id"],
    }
    base = f"n8n-lock-{unique_name}"
    assert (acquire["ticket_key"], acquire["meta_key"]) == (f"{base}:ticket", f"{base}:meta:0")
    assert (acquire["ticket"], acquire["fence"], acquire["slots"], acquire["lane"]) == (1, 1, 1, 0)
    # The ticket (also the fence) and the lane's `served` never expire: they must not go back.
    assert lockbed.redis.get(f"{base}:ticket") == "1" and lockbed.redis.ttl(f"{base}:ticket") == -1
    assert lockbed.redis.get(f"{base}:served:0") == "1"
    assert lockbed.redis.ttl(f"{base}:served:0") == -1
    # The ticket's own record (the lease) and the lane's copy both say released, for 5 s.
    assert acquire["holder_key"] == f"{base}:holder:1"
    for record_key in (f"{base}:holder:1", f"{base}:meta:0"):
        released = _record(lockbed, record_key)
        assert released is not None and released["released"] is True, (record_key, released)
        assert 0 < lockbed.redis.ttl(record_key) <= keys.RELEASED_META_TTL_SECONDS
    assert held_lanes(lockbed.redis, unique_name) == []
    index_key = f"n8nlock:exec:{acquire['workflow_id']}:{acquire['execution_id']}"
    entry = json.loads(lockbed.redis.hget(index_key, unique_name) or "null")
    assert entry == {"lock_id": acquire["lock_id"], "ticket": 1, "slots": 1, "format": keys.FORMAT}
    assert 3600 < lockbed.redis.ttl(index_key) <= 3600 + 60
    assert [e["event"] for e in lockbed.sink(unique_name)] == ["start", "end"]
    assert stat(lockbed, "arrived", unique_name) == 1
    assert stat(lockbed, "waited", unique_name) == 0
    assert acquire["waited_ms"] < 1000, acquire


def test_l02_fail_fast_on_a_held_lock_stops_with_a_message_naming_scope_and_holder(
    lockbed: LockBed, unique_name: str
) -> None:
    holder = acquired(lockbed.lock(unique_name, release=False))
    call = lockbed.lock(unique_name, wait=False)
    assert call.body["acquired"] is False, call.body
    error = call.body["error"]
    assert error.startswith(
        f"Lock acquisition failed (fail-fast): scope '{unique_name}' is held by e2e: lock caller "
        f"(workflow {holder['workflow_id']}, execution {holder['execution_id']})"
    ), error
    assert error.endswith("Caller passed wait_till_lock_released=false."), error
    assert call.seconds < MARGIN
    assert stat(lockbed, "busy", unique_name) == 1
    assert _record(lockbed, holder["meta_key"]) is not None
    assert held_lanes(lockbed.redis, unique_name) == [holder["holder_key"], holder["meta_key"]]


def test_l02b_a_fail_fast_caller_takes_a_lock_freed_after_another_gave_up(
    lockbed: LockBed, unique_name: str
) -> None:
    holder = acquired(lockbed.lock(unique_name, release=False))
    assert lockbed.lock(unique_name, wait=False).body["acquired"] is False
    assert lockbed.release(unique_name, holder["lock_id"]).body["released"] is True
    # The line is empty: the ticket that gave up must not stand in the next caller's way.
    started = time.monotonic()
    later = acquired(lockbed.lock(unique_name, wait=False))
    assert time.monotonic() - started < MARGIN
    assert later["fence"] == holder["fence"] + 2


def test_l03_ten_concurrent_holders_never_overlap(lockbed: LockBed, unique_name: str) -> None:
    start = time.monotonic()
    with ThreadPoolExecutor(10) as pool:
        calls = list(pool.map(lambda _: lockbed.lock(unique_name, hold_ms=300), range(10)))
    wall = time.monotonic() - start
    assert all(acquired(c) for c in calls)
    events = lockbed.sink(unique_name)
    starts = {e["lock_id"]: e["t"] for e in events if e["event"] == "start"}
    ends = {e["lock_id"]: e["t"] for e in events if e["event"] == "end"}
    assert len(starts) == len(ends) == 10
    intervals = sorted((starts[k], ends[k]) for k in starts)
    overlaps = [(a, b) for a, b in itertools.pairwise(intervals) if b[0] < a[1]]
    assert overlaps == [], f"overlapping critical sections: {overlaps}"
    assert wall > 10 * 0.3, "the calls ran one after another: contention was not real"
    assert stat(lockbed, "arrived", unique_name) == 10
    assert stat(lockbed, "waited", unique_name) >= 8  # all but the first (or two, in a race)
    fences = sorted(c.body["acquire"]["fence"] for c in calls)
    assert fences == list(range(1, 11))


def test_l04_three_slots_and_nine_callers_never_run_more_than_three_bodies(
    lockbed: LockBed, unique_name: str
) -> None:
    # Bodies of 2 s: under CI's load (stage 1 of make test, 2 cores) three holders of 0.6 s never
    # overlapped once, the third entering after the first had left (max overlap 2).
    with ThreadPoolExecutor(9) as pool:
        calls = list(
            pool.map(lambda _: lockbed.lock(unique_name, hold_ms=2000, max_concurrent=3), range(9))
        )
    holders = [acquired(c) for c in calls]
    assert all(c.body["release"]["released"] is True for c in calls), calls
    assert _max_overlap(lockbed, unique_name) == 3
    assert sorted(h["fence"] for h in holders) == list(range(1, 10))
    assert all((h["slots"], h["lane"]) == (3, h["ticket"] % 3) for h in holders)
    assert held_lanes(lockbed.redis, unique_name) == []


def test_l05_max_wait_timeout_fires_on_time(lockbed: LockBed, unique_name: str) -> None:
    acquired(lockbed.lock(unique_name, release=False))
    call = lockbed.lock(unique_name, max_wait=3)
    assert call.body["acquired"] is False, call.body
    assert call.body["error"].startswith(
        f"Lock acquisition timed out after 3s waiting for scope '{unique_name}' (held by e2e:"
    ), call.body
    assert 3 <= call.seconds <= 3 + LOOK + MARGIN, call.seconds
    assert stat(lockbed, "timeout", unique_name) == 1


def test_l07_a_holder_that_never_releases_expires_after_its_ttl(
    lockbed: LockBed, unique_name: str
) -> None:
    ttl = GRACE + 1  # longer than the grace, so that the TTL decides when the waiter enters
    holder = acquired(lockbed.lock(unique_name, ttl=ttl, release=False))
    started = time.monotonic()
    waiter = acquired(lockbed.lock(unique_name))
    waited = time.monotonic() - started
    assert waiter["fence"] == holder["fence"] + 1
    assert ttl - 1 <= waited <= ttl + LOOK + MARGIN, waited


def _iso_seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_l08_contention_does_not_extend_a_dead_holders_ttl(
    lockbed: LockBed, unique_name: str
) -> None:
    ttl = GRACE + 1
    holder = acquired(lockbed.lock(unique_name, ttl=ttl, release=False))
    with ThreadPoolExecutor(16) as pool:
        waiter = pool.submit(lockbed.lock, unique_name)
        arrivals, ttls = [], []
        for _ in range(2 * ttl):
            arrivals.append(pool.submit(lockbed.lock, unique_name, wait=False))
            # The lane's record key is the next holder's too: sample it while it is the dead one's.
            if (_record(lockbed, holder["meta_key"]) or {}).get("lock_id") == holder["lock_id"]:
                ttls.append(lockbed.redis.ttl(holder["meta_key"]))
            if waiter.done():
                break
            time.sleep(1)
        entered = acquired(waiter.result())
    winners = [entered] + [
        a.result().body["acquire"] for a in arrivals if a.result().body.get("acquired") is not False
    ]
    # The dead holder's record must expire on time whoever comes by: the waiter is in by TTL +
    # one look at the line.
    waited = _iso_seconds(entered["locked_at"]) - _iso_seconds(holder["locked_at"])
    assert waited <= ttl + LOOK + MARGIN, (waited, ttls)
    held = [t for t in ttls if t > 0]
    assert held == sorted(held, reverse=True), f"the holder's TTL went up: {ttls}"
    assert all(w["fence"] > holder["fence"] for w in winners)


def test_l09_a_foreign_lock_id_is_a_logic_error_and_nothing_changes(
    lockbed: LockBed, unique_name: str
) -> None:
    holder = acquired(lockbed.lock(unique_name, release=False))
    before = lockbed.redis.get(holder["meta_key"])
    call = lockbed.release(unique_name, "not-the-holder")
    assert call.body["error"].startswith(f"LOGIC ERROR: lock '{unique_name}' is held by e2e:")
    assert holder["lock_id"] in call.body["error"]
    assert lockbed.redis.get(holder["meta_key"]) == before
    assert lockbed.redis.get(holder["served_key"]) is None
    assert lockbed.release(unique_name, holder["lock_id"]).body["released"] is True
    assert lockbed.redis.get(holder["served_key"]) == str(holder["ticket"])


def test_l10_a_late_release_changes_nothing_of_the_new_holder(
    lockbed: LockBed, unique_name: str
) -> None:
    first = acquired(lockbed.lock(unique_name, ttl=2, release=False))
    second = acquired(lockbed.lock(unique_name, release=False))
    before = lockbed.redis.get(second["meta_key"]), lockbed.redis.get(second["served_key"])
    late = lockbed.release(unique_name, first["lock_id"])
    assert late.body["error"].startswith("LOGIC ERROR:"), late.body
    assert second["lock_id"] in late.body["error"]
    assert (
        lockbed.redis.get(second["meta_key"]),
        lockbed.redis.get(second["served_key"]),
    ) == before
    assert second["fence"] > first["fence"]
    assert lockbed.release(unique_name, second["lock_id"]).body["released"] is True


def test_l11_a_second_release_is_idempotent_and_changes_nothing(
    lockbed: LockBed, unique_name: str
) -> None:
    holder = acquired(lockbed.lock(unique_name, release=False))
    assert lockbed.release(unique_name, holder["lock_id"]).body["released"] is True
    served = lockbed.redis.get(holder["served_key"])
    again = lockbed.release(unique_name, holder["lock_id"])
    assert again.body == {
        "released": False,
        "idempotent": True,
        "reason": "released",
        "scope": unique_name,
        "lock_id": holder["lock_id"],
    }
    never = lockbed.release(f"{unique_name}-never", "whoever")
    assert never.body["reason"] == "absent" and never.body["idempotent"] is True, never.body
    assert lockbed.redis.get(holder["served_key"]) == served
    assert lockbed.redis.keys(f"n8n-lock-{unique_name}-never*") == []


def _healed(lockbed: LockBed, scope: str) -> bool:
    """The handler's release: no lane held, and lane 0 served up to the last ticket drawn."""
    served = lockbed.redis.get(f"n8n-lock-{scope}:served:0")
    return held_lanes(lockbed.redis, scope) == [] and served == str(
        tickets_drawn(lockbed.redis, scope)
    )


def test_l12_the_error_handler_releases_registered_scopes(
    lockbed: LockBed, unique_name: str
) -> None:
    failed = lockbed.lock(REGISTERED_SCOPE, fail=True, ttl=120)
    assert failed.status >= 400 or "error" in str(failed.body)
    wait_until(
        lambda: _healed(lockbed, REGISTERED_SCOPE),
        5,
        "the registered lock is released by the error handler",
    )


def test_l12b_a_dynamic_scope_heals_within_seconds_after_a_failure(
    lockbed: LockBed, unique_name: str
) -> None:
    failed = lockbed.lock(unique_name, fail=True, ttl=600)
    assert failed.status >= 400 or "error" in str(failed.body)
    healed = wait_until(
        lambda: _healed(lockbed, unique_name),
        5,
        "the failed execution's unregistered scope is released by the error handler",
    )
    record = _record(lockbed, f"n8n-lock-{unique_name}:meta:0")
    assert record is not None and record["released"] is True and record["ticket"] == 1
    started = time.monotonic()
    acquired(lockbed.lock(unique_name))
    assert time.monotonic() - started < MARGIN, "the next call for the scope waited"
    print(f"healed {healed:.2f} s after the failed call answered")
    assert stat(lockbed, "healed", unique_name) == 1


def test_l12c_both_scopes_of_a_failed_execution_heal_and_no_other_lock_is_touched(
    lockbed: LockBed, unique_name: str
) -> None:
    other = acquired(lockbed.lock(f"{unique_name}-other", release=False, ttl=120))
    before = lockbed.redis.get(other["meta_key"])
    failed = lockbed.webhook("e2e-two-locks", {"scope": unique_name})
    assert failed.status >= 400 or "error" in str(failed.body)
    scopes = [f"{unique_name}-a", f"{unique_name}-b"]
    wait_until(lambda: all(_healed(lockbed, s) for s in scopes), 5, "both scopes are released")
    assert lockbed.redis.get(other["meta_key"]) == before
    assert lockbed.redis.get(other["served_key"]) is None
    index = lockbed.redis.hgetall(f"n8nlock:exec:{other['workflow_id']}:{other['execution_id']}")
    assert {s: json.loads(v) for s, v in index.items()} == {
        other["scope"]: {
            "lock_id": other["lock_id"],
            "ticket": 1,
            "slots": 1,
            "format": keys.FORMAT,
        }
    }
    assert lockbed.release(other["scope"], other["lock_id"]).body["released"] is True


def test_l12d_the_handler_leaves_a_lock_its_execution_no_longer_holds(
    lockbed: LockBed, unique_name: str
) -> None:
    holder = acquired(lockbed.lock(unique_name, release=False, ttl=120))
    # Another execution's record now holds the lane (as if the first released and lost it);
    # the index of the first still names the scope, with the old lock_id.
    foreign = '{"lock_id": "someone-else", "execution_id": "1", "ticket": 2}'
    lockbed.redis.set(holder["meta_key"], foreign, ex=120)
    index_key = f"n8nlock:exec:{holder['workflow_id']}:{holder['execution_id']}"
    assert (
        json.loads(lockbed.redis.hget(index_key, unique_name) or "{}")["lock_id"]
        == (holder["lock_id"])
    )
    failed = lockbed.lock(f"{unique_name}-x", fail=True, ttl=120)
    assert failed.status >= 400 or "error" in str(failed.body)
    wait_until(
        lambda: _healed(lockbed, f"{unique_name}-x"),
        5,
        "the failing execution's own scope is released",
    )
    assert lockbed.redis.get(holder["meta_key"]) == foreign
    assert lockbed.redis.get(holder["served_key"]) is None


def test_l13_a_release_inside_the_margin_before_expiry_leaves_the_lane_to_the_caller_behind(
    lockbed: LockBed, unique_name: str
) -> None:
    """The lane (`served`, its copy) is left alone, since the TTL may run out before the
    write; only the ticket's own record says it left, so that the caller behind skips it at
    once."""
    holder = acquired(lockbed.lock(unique_name, ttl=3, release=False))
    expires = _iso_seconds(holder["expires_at"])
    time.sleep(max(0.0, expires - 2 - time.time()) + 0.2)  # inside the 2 s margin
    call = lockbed.release(unique_name, holder["lock_id"])
    assert call.body["released"] is False and call.body["reason"] == "expired", call.body
    assert lockbed.redis.get(holder["served_key"]) is None
    record = _record(lockbed, holder["meta_key"])
    assert (record is None and time.time() > expires) or (record or {}).get("released") is None
    own = _record(lockbed, holder["holder_key"]) or {}
    assert own.get("released") is True and own.get("ticket") == holder["ticket"], own


def test_l15_a_ticket_whose_waiter_died_before_entering_is_skipped_after_the_grace(
    lockbed: LockBed, unique_name: str
) -> None:
    # A waiter drew ticket 1 and died (no record, no give-up mark): the next caller skips it.
    lockbed.redis.incr(f"n8n-lock-{unique_name}:ticket")
    started = time.monotonic()
    holder = acquired(lockbed.lock(unique_name))
    waited = time.monotonic() - started
    assert holder["ticket"] == 2
    assert GRACE - 0.5 <= waited <= GRACE + LOOK + MARGIN, waited
    assert lockbed.redis.get(f"n8n-lock-{unique_name}:served:0") == "2"


def test_l15b_a_head_whose_record_expired_is_skipped(lockbed: LockBed, unique_name: str) -> None:
    # A holder took ticket 1 and crashed; its record expires in 2 s, before the grace is over.
    lockbed.redis.incr(f"n8n-lock-{unique_name}:ticket")
    record = {"lock_id": "crashed", "ticket": 1, "locked_ms": int(time.time() * 1000)}
    lockbed.redis.set(f"n8n-lock-{unique_name}:meta:0", json.dumps(record), ex=2)
    started = time.monotonic()
    holder = acquired(lockbed.lock(unique_name))
    assert holder["ticket"] == 2
    assert time.monotonic() - started <= GRACE + LOOK + MARGIN


def test_l20_three_input_items_take_the_lock_once(lockbed: LockBed, unique_name: str) -> None:
    holder = acquired(lockbed.lock(unique_name, items=3, release=False))
    assert lockbed.redis.get(holder["ticket_key"]) == "1"
    assert (_record(lockbed, holder["meta_key"]) or {}).get("lock_id") == holder["lock_id"]
    assert stat(lockbed, "arrived", unique_name) == 1
    release = lockbed.release(unique_name, holder["lock_id"]).body
    assert (release["released"], release["idempotent"]) == (True, False)


def test_l25_fences_strictly_increase(lockbed: LockBed, unique_name: str) -> None:
    fences = [acquired(lockbed.lock(unique_name))["fence"] for _ in range(5)]
    assert fences == sorted(set(fences)) and len(fences) == 5


@pytest.mark.parametrize("ttl", [0, -5])
def test_invalid_ttl_is_refused_by_the_primitive(
    lockbed: LockBed, unique_name: str, ttl: int
) -> None:
    call = lockbed.lock(unique_name, ttl=ttl)
    assert call.body["acquired"] is False
    assert "ttl_seconds must be a number >= 1" in call.body["error"]
    assert lockbed.redis.keys(f"n8n-lock-{unique_name}*") == []


def test_pushing_again_sends_no_write(lockbed: LockBed) -> None:
    result = run_cli(lockbed.root, "push", "--env", "e2e")
    verbs = {line.split()[0] for line in result.stderr.splitlines()[:-1]}
    assert verbs == {"identical"}, result.stderr


def _tick_spans(lockbed: LockBed, scope: str) -> dict[str, tuple[int, int]]:
    spans: dict[str, tuple[int, int]] = {}
    for event in lockbed.sink(scope):
        first, last = spans.get(event["execution"], (event["t"], event["t"]))
        spans[event["execution"]] = (min(first, event["t"]), max(last, event["t"]))
    return spans


def test_l16_renewal_keeps_exclusion_through_three_times_the_ttl(
    lockbed: LockBed, unique_name: str
) -> None:
    ttl, ticks = 5, 15  # the body runs about 15 s, 3 × the TTL (5 s: the shortest TTL there is)
    run_cli(
        lockbed.root,
        "add-lock-to-workflow",
        "--workflow-key",
        "e2e_long_loop",
        "--scope-expression",
        "={{ $json.body.scope }}",
        "--ttl-seconds",
        str(ttl),
        "--renew-before",
        "Work",
    )
    run_cli(lockbed.root, "push", "--env", "e2e", "e2e_long_loop")
    # n8n 2.x swaps an updated published workflow's triggers in asynchronously: for a moment
    # a call may still run the unwrapped version. Wait until a call goes through the lock.
    warm = f"{unique_name}-warm-up"
    wait_until(
        lambda: (
            bool(lockbed.webhook("e2e-long-loop", {"scope": warm, "ticks": 0}))
            and bool(lockbed.redis.exists(f"n8n-lock-{warm}:ticket"))
        ),
        30,
        "the wrapped version answers",
    )
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(
            lockbed.webhook, "e2e-long-loop", {"scope": unique_name, "ticks": ticks}
        )
        time.sleep(1.5)
        second = pool.submit(lockbed.webhook, "e2e-long-loop", {"scope": unique_name, "ticks": 1})
        answers = [first.result(), second.result()]
    assert [a.body.get("done") for a in answers] == [True, True], answers
    spans = sorted(_tick_spans(lockbed, unique_name).values())
    assert len(spans) == 2 and spans[0][1] - spans[0][0] > 3 * ttl * 1000 - 2000, spans
    assert spans[1][0] > spans[0][1], f"the second execution ran inside the first: {spans}"
    assert held_lanes(lockbed.redis, unique_name) == []
