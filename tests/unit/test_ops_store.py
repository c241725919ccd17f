"""Reading and deleting lock keys in a real Redis: snapshots, foreign keys, compare-and-delete."""

from __future__ import annotations

import json

import pytest
import redis

from n8n_lockkit.ops import locks, release
from n8n_lockkit.ops.store import ForeignKey, LockState, LockStore
from tests.redis_bed import meta_for, put_lock


@pytest.fixture
def store(redis_client: redis.Redis) -> LockStore:
    return LockStore(redis_client)


def read(store: LockStore, scope: str) -> LockState:
    state = store.read(scope)
    assert isinstance(state, LockState), state
    return state


def test_a_held_lock_reads_with_its_holder_ttl_and_age(
    redis_client: redis.Redis, store: LockStore
) -> None:
    put_lock(redis_client, "order-1", meta=meta_for("order-1", age=90, fence=7))
    state = read(store, "order-1")
    assert state.held and state.problems == []
    assert state.meta is not None and state.meta["execution_id"] == "57"
    assert 299 < (state.ttl_seconds or 0) <= 300
    assert 89 < (state.age_seconds or 0) < 92
    assert state.keys_present == ["n8n-lock-order-1:meta", "n8n-lock-order-1"]


def test_a_counter_without_record_or_ttl_is_flagged(
    redis_client: redis.Redis, store: LockStore
) -> None:
    put_lock(redis_client, "order-2", ttl=None, with_meta=False)
    state = read(store, "order-2")
    assert state.problems == ["no meta", "no TTL"]
    assert state.ttl_seconds is None and state.counter_expiry_ms == -1


def test_keys_of_another_type_under_the_prefix_are_not_ours(
    redis_client: redis.Redis, store: LockStore
) -> None:
    redis_client.hset("n8n-lock-cache", "a", "b")
    redis_client.set("n8n-lock-label", "hello")
    redis_client.rpush("n8n-lock-queue:meta", "x")
    assert store.read("cache") == ForeignKey("n8n-lock-cache", "a hash, not a lock counter")
    assert store.read("label") == ForeignKey("n8n-lock-label", "a string, not a lock counter")
    assert store.read("queue") == ForeignKey("n8n-lock-queue:meta", "a list, not a lock record")


def test_scan_finds_scopes_by_counter_or_record_and_skips_fences(
    redis_client: redis.Redis, store: LockStore
) -> None:
    put_lock(redis_client, "order-1")
    redis_client.set("n8n-lock-order-2:meta", json.dumps(meta_for("order-2")))
    redis_client.set("n8n-lock-order-3:fence", 4)
    put_lock(redis_client, "invoice-1")
    scan = store.scan("order-*")
    assert [s.scope for s in scan.states] == ["order-1", "order-2"]
    assert [s.scope for s in locks.held_locks(scan)] == ["order-1"]
    assert scan.foreign == []


def test_scanning_never_sends_keys(redis_client: redis.Redis, redis_url: str) -> None:
    # A user without KEYS: any KEYS call would fail with NOPERM.
    redis_client.acl_setuser(
        "nokeys", enabled=True, passwords=["+pw"], keys=["*"], commands=["+@all", "-keys"]
    )
    put_lock(redis_client, "order-1")
    client = redis.Redis.from_url(
        redis_url, username="nokeys", password="pw", decode_responses=True
    )
    try:
        assert [s.scope for s in LockStore(client).scan("*").states] == ["order-1"]
    finally:
        client.close()
        redis_client.acl_deluser("nokeys")


def test_an_explicit_glob_that_matches_foreign_keys_is_refused(
    redis_client: redis.Redis, store: LockStore
) -> None:
    put_lock(redis_client, "order-1")
    redis_client.hset("n8n-lock-orders-cache", "a", "b")
    with pytest.raises(locks.ForeignKeys, match="n8n-lock-orders-cache \\(a hash"):
        locks.checked_scan(store, "order*")
    everything = locks.checked_scan(store, None)  # no glob given: skipped, reported
    assert [f.key for f in everything.foreign] == ["n8n-lock-orders-cache"]
    assert redis_client.hgetall("n8n-lock-orders-cache") == {"a": "b"}


def test_compare_and_delete_removes_both_keys_and_counts_once(
    redis_client: redis.Redis, store: LockStore
) -> None:
    put_lock(redis_client, "order-1")
    assert store.delete_if_unchanged(read(store, "order-1"), "reaped")
    assert redis_client.keys("n8n-lock-order-1*") == []
    (stat,) = redis_client.keys("n8nlock:stats:*:reaped:order-1")
    assert redis_client.get(stat) == "1"
    assert 8 * 86400 - 5 < redis_client.ttl(stat) <= 8 * 86400


def test_a_new_holder_since_the_snapshot_is_left_alone(
    redis_client: redis.Redis, store: LockStore
) -> None:
    put_lock(redis_client, "order-1")
    seen = read(store, "order-1")
    redis_client.delete("n8n-lock-order-1", "n8n-lock-order-1:meta")
    put_lock(redis_client, "order-1", meta=meta_for("order-1", execution_id="58"))
    assert not store.delete_if_unchanged(seen, "reaped")
    assert redis_client.exists("n8n-lock-order-1", "n8n-lock-order-1:meta") == 2
    assert redis_client.keys("n8nlock:stats:*") == []


def test_a_counter_recreated_with_another_ttl_is_left_alone(
    redis_client: redis.Redis, store: LockStore
) -> None:
    # Same value, no record either time: only the expiry tells the two keys apart.
    put_lock(redis_client, "order-1", ttl=300, with_meta=False)
    seen = read(store, "order-1")
    redis_client.delete("n8n-lock-order-1")
    put_lock(redis_client, "order-1", ttl=60, with_meta=False)
    assert not store.delete_if_unchanged(seen, "reaped")
    assert redis_client.exists("n8n-lock-order-1") == 1


def test_a_counter_that_lost_its_ttl_is_left_alone(
    redis_client: redis.Redis, store: LockStore
) -> None:
    put_lock(redis_client, "order-1", with_meta=False)
    seen = read(store, "order-1")
    redis_client.persist("n8n-lock-order-1")
    assert not store.delete_if_unchanged(seen, "reaped")


def test_release_refuses_an_unknown_scope_and_a_foreign_key(
    redis_client: redis.Redis, store: LockStore
) -> None:
    with pytest.raises(release.UnknownScope, match="no lock on scope 'nope'"):
        release.inspect(store, "nope")
    redis_client.sadd("n8n-lock-set", "x")
    with pytest.raises(release.NotALock, match="n8n-lock-set is a set"):
        release.inspect(store, "set")


def test_force_release_deletes_what_was_shown_and_counts_it(
    redis_client: redis.Redis, store: LockStore
) -> None:
    put_lock(redis_client, "order-1")
    shown = release.inspect(store, "order-1")
    assert release.force_release(store, shown).deleted == [
        "n8n-lock-order-1:meta",
        "n8n-lock-order-1",
    ]
    assert redis_client.exists("n8n-lock-order-1", "n8n-lock-order-1:meta") == 0
    assert len(redis_client.keys("n8nlock:stats:*:force_released:order-1")) == 1


def test_force_release_of_a_lock_that_changed_hands_deletes_nothing(
    redis_client: redis.Redis, store: LockStore
) -> None:
    put_lock(redis_client, "order-1")
    shown = release.inspect(store, "order-1")
    redis_client.set("n8n-lock-order-1:meta", json.dumps(meta_for("order-1", execution_id="9")))
    with pytest.raises(release.LockChanged):
        release.force_release(store, shown)
    assert redis_client.exists("n8n-lock-order-1", "n8n-lock-order-1:meta") == 2


def test_force_release_of_a_lock_its_holder_released_meanwhile_is_a_no_op(
    redis_client: redis.Redis, store: LockStore
) -> None:
    put_lock(redis_client, "order-1")
    shown = release.inspect(store, "order-1")
    redis_client.delete("n8n-lock-order-1:meta", "n8n-lock-order-1")
    assert release.force_release(store, shown).deleted == []
    assert redis_client.keys("n8nlock:stats:*") == []
