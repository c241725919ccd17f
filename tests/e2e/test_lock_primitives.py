"""The lock primitives in a real n8n with a real Redis (ids from lock-design.md §2.7).

Every test owns its scope (`unique_name`) and waits on conditions, not on sleeps.
"""

from __future__ import annotations

import itertools
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest

from tests.e2e.lockbed import (
    REGISTERED_SCOPE,
    LockBed,
    acquired,
    run_cli,
    stat,
    wait_until,
)

MARGIN = 2.5  # n8n's own overhead per call on a 2-core machine, with room to spare


def test_l01_uncontended_acquire_and_release_leave_no_lock_behind(
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
    assert acquire["key"] == f"n8n-lock-{unique_name}"
    assert acquire["meta_key"] == f"n8n-lock-{unique_name}:meta"
    assert acquire["count"] == 1 and acquire["fence"] == 1
    # Only the fence survives, with a TTL far beyond the lock's: it must keep growing.
    assert lockbed.redis.keys(f"n8n-lock-{unique_name}*") == [f"n8n-lock-{unique_name}:fence"]
    assert lockbed.redis.ttl(f"n8n-lock-{unique_name}:fence") > 7 * 86400 - 60
    index_key = f"n8nlock:exec:{acquire['workflow_id']}:{acquire['execution_id']}"
    assert lockbed.redis.hgetall(index_key) == {unique_name: acquire["lock_id"]}
    assert 3600 < lockbed.redis.ttl(index_key) <= 3600 + 60
    assert [e["event"] for e in lockbed.sink(unique_name)] == ["start", "end"]
    assert stat(lockbed, "acquired", unique_name) == 1
    assert stat(lockbed, "waited", unique_name) == 0
    assert (
        stat(lockbed, "wait_le_0.1", unique_name) + stat(lockbed, "wait_le_0.5", unique_name) == 1
    )


def test_l02_fail_fast_on_a_held_lock_stops_with_the_seed_message(
    lockbed: LockBed, unique_name: str
) -> None:
    acquired(lockbed.lock(unique_name, release=False))
    call = lockbed.lock(unique_name, wait=False)
    assert call.body == {
        "acquired": False,
        "error": f"Lock acquisition failed (fail-fast): scope '{unique_name}' is held (count=1). "
        "Caller passed wait_till_lock_released=false.",
    }
    assert call.seconds < MARGIN
    assert stat(lockbed, "busy", unique_name) == 1


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
    assert stat(lockbed, "acquired", unique_name) == 10
    assert stat(lockbed, "waited", unique_name) >= 8  # all but the first (or two, in a race)
    fences = sorted(c.body["acquire"]["fence"] for c in calls)
    assert fences == list(range(1, 11))


def test_l05_max_wait_timeout_fires_on_time(lockbed: LockBed, unique_name: str) -> None:
    acquired(lockbed.lock(unique_name, release=False))
    call = lockbed.lock(unique_name, max_wait=3)
    assert call.body == {
        "acquired": False,
        "error": f"Lock acquisition timed out after 3s waiting for scope '{unique_name}'.",
    }
    assert 3 <= call.seconds <= 3 + lockbed.poll + MARGIN, call.seconds
    assert stat(lockbed, "timeout", unique_name) == 1


def test_l07_a_holder_that_never_releases_expires_after_its_ttl(
    lockbed: LockBed, unique_name: str
) -> None:
    holder = acquired(lockbed.lock(unique_name, ttl=3, release=False))
    started = time.monotonic()
    waiter = acquired(lockbed.lock(unique_name))
    waited = time.monotonic() - started
    assert waiter["fence"] == holder["fence"] + 1
    assert 3 - 1 <= waited <= 3 + lockbed.poll + MARGIN, waited


def _iso_seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_l08_contention_does_not_extend_a_dead_holders_ttl(
    lockbed: LockBed, unique_name: str
) -> None:
    ttl = 4
    holder = acquired(lockbed.lock(unique_name, ttl=ttl, release=False))
    with ThreadPoolExecutor(12) as pool:
        waiter = pool.submit(lockbed.lock, unique_name)
        arrivals, ttls = [], []
        for _ in range(2 * ttl):
            arrivals.append(pool.submit(lockbed.lock, unique_name, wait=False))
            ttls.append(lockbed.redis.ttl(holder["key"]))
            if waiter.done():
                break
            time.sleep(1)
        entered = acquired(waiter.result())
    winners = [entered] + [
        a.result().body["acquire"] for a in arrivals if a.result().body.get("acquired") is not False
    ]
    # The dead holder's key must expire on time whoever comes by: the first acquisition
    # after it (the waiter's or a fail-fast arrival's, polling is not fair) is in by TTL + poll.
    first = min(_iso_seconds(w["locked_at"]) for w in winners)
    waited = first - _iso_seconds(holder["locked_at"])
    assert waited <= ttl + lockbed.poll + MARGIN, (waited, ttls)
    held = [t for t in ttls if t > 0]
    assert held == sorted(held, reverse=True), f"the holder's TTL went up: {ttls}"
    assert all(w["fence"] > holder["fence"] for w in winners)


def test_l09_a_foreign_lock_id_is_a_logic_error_and_the_lock_stays(
    lockbed: LockBed, unique_name: str
) -> None:
    holder = acquired(lockbed.lock(unique_name, release=False))
    call = lockbed.release(unique_name, "not-the-holder")
    assert call.body["error"].startswith(f"LOGIC ERROR: lock '{unique_name}' is held by e2e:")
    assert holder["lock_id"] in call.body["error"]
    assert lockbed.redis.exists(holder["key"], holder["meta_key"]) == 2
    assert lockbed.release(unique_name, holder["lock_id"]).body["released"] is True


def test_l10_a_late_release_deletes_nothing_of_the_new_holder(
    lockbed: LockBed, unique_name: str
) -> None:
    first = acquired(lockbed.lock(unique_name, ttl=2, release=False))
    second = acquired(lockbed.lock(unique_name, release=False))
    late = lockbed.release(unique_name, first["lock_id"])
    assert late.body["error"].startswith("LOGIC ERROR:"), late.body
    assert second["lock_id"] in late.body["error"]
    assert lockbed.redis.exists(second["key"], second["meta_key"]) == 2
    assert second["fence"] > first["fence"]
    assert lockbed.release(unique_name, second["lock_id"]).body["released"] is True


def test_l12_the_error_handler_releases_registered_scopes(
    lockbed: LockBed, unique_name: str
) -> None:
    failed = lockbed.lock(REGISTERED_SCOPE, fail=True, ttl=120)
    assert failed.status >= 400 or "error" in str(failed.body)
    wait_until(
        lambda: not lockbed.redis.exists(f"n8n-lock-{REGISTERED_SCOPE}"),
        5,
        "the registered lock is released by the error handler",
    )
    assert not lockbed.redis.exists(f"n8n-lock-{REGISTERED_SCOPE}:meta")


def test_l12b_a_dynamic_scope_heals_within_seconds_after_a_failure(
    lockbed: LockBed, unique_name: str
) -> None:
    failed = lockbed.lock(unique_name, fail=True, ttl=600)
    assert failed.status >= 400 or "error" in str(failed.body)
    healed = wait_until(
        lambda: not lockbed.redis.exists(f"n8n-lock-{unique_name}"),
        5,
        "the failed execution's unregistered scope is released by the error handler",
    )
    assert not lockbed.redis.exists(f"n8n-lock-{unique_name}:meta")
    started = time.monotonic()
    acquired(lockbed.lock(unique_name))
    assert time.monotonic() - started < MARGIN, "the next call for the scope waited"
    print(f"healed {healed:.2f} s after the failed call answered")
    assert stat(lockbed, "healed", unique_name) == 1


def test_l12c_both_scopes_of_a_failed_execution_heal_and_no_other_lock_is_touched(
    lockbed: LockBed, unique_name: str
) -> None:
    other = acquired(lockbed.lock(f"{unique_name}-other", release=False, ttl=120))
    failed = lockbed.webhook("e2e-two-locks", {"scope": unique_name})
    assert failed.status >= 400 or "error" in str(failed.body)
    keys = [f"n8n-lock-{unique_name}-a", f"n8n-lock-{unique_name}-b"]
    wait_until(lambda: not lockbed.redis.exists(*keys), 5, "both scopes are released")
    assert lockbed.redis.exists(other["key"], other["meta_key"]) == 2
    index = lockbed.redis.hgetall(f"n8nlock:exec:{other['workflow_id']}:{other['execution_id']}")
    assert index == {other["scope"]: other["lock_id"]}
    assert lockbed.release(other["scope"], other["lock_id"]).body["released"] is True


def test_l12d_the_handler_leaves_a_scope_its_execution_no_longer_holds(
    lockbed: LockBed, unique_name: str
) -> None:
    holder = acquired(lockbed.lock(unique_name, release=False, ttl=120))
    # Another execution's record now holds the scope (as if the first released and lost it);
    # the index of the first still names the scope, with the old lock_id.
    lockbed.redis.set(holder["meta_key"], '{"lock_id": "someone-else", "execution_id": "1"}')
    index_key = f"n8nlock:exec:{holder['workflow_id']}:{holder['execution_id']}"
    assert lockbed.redis.hget(index_key, unique_name) == holder["lock_id"]
    failed = lockbed.lock(f"{unique_name}-x", fail=True, ttl=120)
    assert failed.status >= 400 or "error" in str(failed.body)
    wait_until(
        lambda: not lockbed.redis.exists(f"n8n-lock-{unique_name}-x"),
        5,
        "the failing execution's own scope is released",
    )
    assert lockbed.redis.exists(holder["key"], holder["meta_key"]) == 2


def test_l13_a_release_inside_the_margin_before_expiry_deletes_nothing(
    lockbed: LockBed, unique_name: str
) -> None:
    holder = acquired(lockbed.lock(unique_name, ttl=3, release=False))
    expires = _iso_seconds(holder["expires_at"])
    time.sleep(max(0.0, expires - 2 - time.time()) + 0.2)  # inside the 2 s margin
    call = lockbed.release(unique_name, holder["lock_id"])
    assert call.body["released"] is False and call.body["reason"] == "expired", call.body
    assert lockbed.redis.exists(holder["meta_key"]) == 1 or time.time() > expires


def test_l15_a_counter_without_meta_heals_by_ttl(lockbed: LockBed, unique_name: str) -> None:
    key = f"n8n-lock-{unique_name}"
    lockbed.redis.set(key, "1", ex=3)  # a holder that crashed between INCR and its meta
    release = lockbed.release(unique_name, "whoever")
    assert release.body == {
        "released": True,
        "idempotent": True,
        "scope": unique_name,
        "lock_id": "whoever",
    }
    assert lockbed.redis.exists(key) == 1, "an idempotent release must delete nothing"
    started = time.monotonic()
    acquired(lockbed.lock(unique_name))
    assert time.monotonic() - started <= 3 + lockbed.poll + MARGIN


def test_l20_three_input_items_take_the_lock_once(lockbed: LockBed, unique_name: str) -> None:
    holder = acquired(lockbed.lock(unique_name, items=3, release=False))
    assert lockbed.redis.get(holder["key"]) == "1"
    assert lockbed.redis.get(f"{holder['key']}:fence") == "1"
    assert lockbed.release(unique_name, holder["lock_id"]).body["idempotent"] is False


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
    ttl, ticks = 4, 12  # the body runs about 12 s, 3 × the TTL
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
            and bool(lockbed.redis.exists(f"n8n-lock-{warm}:fence"))
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
    assert not lockbed.redis.exists(f"n8n-lock-{unique_name}")
