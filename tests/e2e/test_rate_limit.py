"""rate_limit_check in a real n8n with a real Redis (R01–R07 of lock-design.md §2.7)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from tests.e2e.lockbed import LockBed


def start_of_window(window: int, need: float) -> None:
    """Wait, if needed, so that `need` seconds fit in the current fixed window."""
    into = time.time() % window
    if window - into < need:
        time.sleep(window - into + 0.05)


def test_r01_fifty_parallel_calls_with_limit_five_allow_exactly_five(
    lockbed: LockBed, unique_name: str
) -> None:
    start_of_window(60, need=30)
    with ThreadPoolExecutor(50) as pool:
        calls = list(pool.map(lambda _: lockbed.rate(unique_name, 5, 60), range(50)))
    assert all(c.status == 200 for c in calls), [c.body for c in calls if c.status != 200]
    assert sum(c.body["allowed"] for c in calls) == 5
    assert sorted(c.body["count"] for c in calls) == list(range(1, 51))


def test_r02_the_call_after_the_limit_is_denied(lockbed: LockBed, unique_name: str) -> None:
    start_of_window(60, need=15)
    bodies = [lockbed.rate(unique_name, 3, 60).body for _ in range(4)]
    assert [b["allowed"] for b in bodies] == [True, True, True, False]
    assert bodies[-1] == {"allowed": False, "scope": unique_name, "count": 4, "limit": 3}


def test_r05_the_next_window_allows_again(lockbed: LockBed, unique_name: str) -> None:
    window = 3
    start_of_window(window, need=window - 0.2)
    assert [lockbed.rate(unique_name, 1, window).body["allowed"] for _ in range(2)] == [True, False]
    start_of_window(window, need=window)  # sleeps into the next window
    assert lockbed.rate(unique_name, 1, window).body == {
        "allowed": True,
        "scope": unique_name,
        "count": 1,
        "limit": 1,
    }


def test_r07_no_rate_limit_key_lives_without_a_ttl(lockbed: LockBed, unique_name: str) -> None:
    for _ in range(3):
        lockbed.rate(unique_name, 2, 60)
    keys = list(lockbed.redis.scan_iter("n8n-ratelimit-*"))
    assert keys
    assert [k for k in keys if lockbed.redis.ttl(k) < 0] == []


def test_invalid_window_is_refused(lockbed: LockBed, unique_name: str) -> None:
    call = lockbed.rate(unique_name, 5, 0)
    assert call.status >= 400 or "windowSeconds must be a number >= 1" in str(call.body)
    assert list(lockbed.redis.scan_iter(f"n8n-ratelimit-{unique_name}-*")) == []
