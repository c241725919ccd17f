"""stats sums the hourly counters the primitives write; percentiles come from the buckets."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from n8n_lockkit.ops import stats
from n8n_lockkit.ops.prometheus import exposition
from n8n_lockkit.ops.stats import ScopeStats
from n8n_lockkit.ops.store import LockStore
from n8n_lockkit.primitives.keys import WAIT_BUCKETS

NOW = datetime(2026, 3, 1, 12, 30, tzinfo=timezone.utc)
NOW_MS = int(NOW.timestamp() * 1000)


def count(client: redis.Redis, hours_ago: int, metric: str, scope: str, value: int) -> None:
    hour = (NOW - timedelta(hours=hours_ago)).strftime("%Y%m%d%H")
    client.set(f"n8nlock:stats:{hour}:{metric}:{scope}", value)


def collect(client: redis.Redis, glob: str | None = None, hours: int = 24) -> dict[str, ScopeStats]:
    return {s.scope: s for s in stats.collect(LockStore(client), glob, hours, NOW_MS)}


def test_counters_are_summed_over_the_hours_asked_for(redis_client: redis.Redis) -> None:
    count(redis_client, 0, "arrived", "order-1", 4)
    count(redis_client, 5, "arrived", "order-1", 3)
    count(redis_client, 23, "arrived", "order-1", 2)
    count(redis_client, 24, "arrived", "order-1", 100)  # one hour too old
    count(redis_client, 1, "healed", "order-1", 1)
    count(redis_client, 2, "force_released", "order-1", 1)
    count(redis_client, 2, "reaped", "order-1", 2)
    count(redis_client, 0, "timeout", "order-1", 1)
    count(redis_client, 0, "busy", "order-1", 2)
    count(redis_client, 5, "skipped", "order-1", 1)
    count(redis_client, 23, "crashed", "order-1", 1)  # died in line, passed by the cleanup
    entry = collect(redis_client)["order-1"]
    assert entry.arrived == 9
    assert entry.counts == {
        "acquired": 4,
        "waited": 0,
        "timeout": 1,
        "busy": 2,
        "skipped": 1,
        "duplicate": 0,
        "force_released": 1,
        "reaped": 2,
        "healed": 1,
        "crashed": 1,
    }
    assert collect(redis_client, hours=1)["order-1"].counts["acquired"] == 1


def test_acquisitions_that_did_not_wait_are_in_the_first_bucket(
    redis_client: redis.Redis,
) -> None:
    # Ten arrived; one gave up at once, one timed out; of the eight that got the lock, three
    # waited (counted in their buckets), so five did not.
    count(redis_client, 1, "arrived", "order-1", 10)
    count(redis_client, 1, "busy", "order-1", 1)
    count(redis_client, 0, "timeout", "order-1", 1)
    count(redis_client, 0, "waited", "order-1", 3)
    count(redis_client, 0, "wait_le_0.1", "order-1", 1)
    count(redis_client, 0, "wait_le_2", "order-1", 2)
    entry = collect(redis_client)["order-1"]
    assert (entry.counts["acquired"], entry.counts["waited"]) == (8, 3)
    assert entry.waits[0.1] == 6 and entry.waits[2] == 2 and sum(entry.waits.values()) == 8
    assert entry.quantile(0.5) == 0.1 and entry.quantile(0.9) == 2


def test_a_give_up_counted_in_the_hour_after_its_arrival_is_subtracted(
    redis_client: redis.Redis,
) -> None:
    count(redis_client, 1, "arrived", "order-1", 2)
    count(redis_client, 0, "timeout", "order-1", 1)  # waited across the hour
    entry = collect(redis_client)["order-1"]
    assert entry.counts["acquired"] == 1 and entry.waits[0.1] == 1


def test_hours_before_engine_v2_are_summed_as_they_were_counted(
    redis_client: redis.Redis,
) -> None:
    # Format 1 counted `acquired` itself, and every acquisition in a bucket, waited or not.
    count(redis_client, 5, "acquired", "order-1", 4)
    count(redis_client, 5, "wait_le_0.1", "order-1", 3)
    count(redis_client, 5, "wait_le_1", "order-1", 1)
    count(redis_client, 4, "busy", "order-1", 2)
    count(redis_client, 2, "arrived", "order-1", 3)  # engine v2 from here on
    count(redis_client, 1, "busy", "order-1", 1)
    entry = collect(redis_client)["order-1"]
    assert (entry.counts["acquired"], entry.counts["busy"], entry.arrived) == (6, 3, 3)
    assert entry.waits[0.1] == 5 and entry.waits[1] == 1


def test_a_scope_glob_picks_scopes_even_when_they_hold_colons(redis_client: redis.Redis) -> None:
    count(redis_client, 0, "arrived", "order-1", 1)
    count(redis_client, 0, "arrived", "tenant:order-2", 1)
    count(redis_client, 0, "arrived", "invoice-1", 1)
    assert sorted(collect(redis_client, "order-*")) == ["order-1"]
    assert sorted(collect(redis_client, "*order-*")) == ["order-1", "tenant:order-2"]


def test_keys_that_are_not_counters_are_ignored(redis_client: redis.Redis) -> None:
    count(redis_client, 0, "arrived", "order-1", 2)
    redis_client.set("n8nlock:stats:notanhour:arrived:order-1", 50)
    redis_client.hset(f"n8nlock:stats:{NOW:%Y%m%d%H}:waited:order-1", "a", "b")
    redis_client.set(f"n8nlock:stats:{NOW:%Y%m%d%H}:busy:order-1", "many")
    assert collect(redis_client)["order-1"].counts["acquired"] == 2


def test_the_bucket_names_are_those_the_primitives_write() -> None:
    # templates/js/engine/lock/decide.js: `wait_le_${bucket}` with JavaScript's number formatting.
    assert [stats.bucket_label(b) for b in stats.BOUNDS] == [
        "0.1",
        "0.5",
        "1",
        "2",
        "5",
        "10",
        "30",
        "60",
        "300",
        "inf",
    ]


def test_percentiles_are_the_upper_bound_of_their_bucket(redis_client: redis.Redis) -> None:
    count(redis_client, 0, "wait_le_0.1", "order-1", 50)
    count(redis_client, 3, "wait_le_1", "order-1", 40)
    count(redis_client, 0, "wait_le_30", "order-1", 9)
    count(redis_client, 0, "wait_le_inf", "order-1", 1)
    entry = collect(redis_client)["order-1"]
    assert (entry.quantile(0.5), entry.quantile(0.9), entry.quantile(0.99)) == (0.1, 1, 30)
    assert entry.quantile(1.0) == math.inf
    assert entry.as_dict()["wait_seconds"]["p50"] == 0.1
    assert ScopeStats("idle").quantile(0.5) is None


def test_a_quantile_in_the_open_bucket_is_plus_inf_in_json() -> None:
    entry = ScopeStats("slow")
    entry.waits[math.inf] = 3
    assert entry.as_dict()["wait_seconds"]["p99"] == "+Inf"


def test_prometheus_output_parses_back_to_the_same_figures(redis_client: redis.Redis) -> None:
    count(redis_client, 0, "arrived", "order-1", 8)
    count(redis_client, 0, "timeout", "order-1", 1)
    count(redis_client, 0, "waited", "order-1", 2)
    count(redis_client, 0, "wait_le_0.1", "order-1", 1)
    count(redis_client, 0, "wait_le_2", "order-1", 1)
    count(redis_client, 0, "arrived", 'quote"d', 1)
    text = exposition(list(collect(redis_client).values()), 24)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["n8nlock_stats_window_hours"].samples[0].value == 24
    events = {
        (s.labels["scope"], s.labels["event"]): s.value
        for s in families["n8nlock_lock_events"].samples
    }
    assert events[("order-1", "acquired")] == 7
    assert events[("order-1", "waited")] == 2
    assert events[('quote"d', "acquired")] == 1
    assert families["n8nlock_lock_events"].type == "gauge"
    buckets = {
        s.labels["le"]: s.value
        for s in families["n8nlock_wait_le"].samples
        if s.labels["scope"] == "order-1"
    }
    assert buckets == {
        **{repr(float(b)): (6 if b < 2 else 7) for b in WAIT_BUCKETS},
        "+Inf": 7,
    }
    upper = {
        s.labels["quantile"]: s.value
        for s in families["n8nlock_wait_seconds_upper_bound"].samples
        if s.labels["scope"] == "order-1"
    }
    assert upper == {"0.5": 0.1, "0.9": 2.0, "0.99": 2.0}


@pytest.mark.parametrize("hours", [1, 24, 192])
def test_the_window_holds_exactly_the_hours_asked_for(hours: int) -> None:
    window = stats.hours_back(NOW_MS, hours)
    assert len(window) == hours and "2026030112" in window
