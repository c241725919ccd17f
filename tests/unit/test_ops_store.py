"""Reading engine v2's keys in a real Redis, and the Lua scripts that release and forget them."""

from __future__ import annotations

import json

import pytest
import redis

from n8n_lockkit.ops import locks, release
from n8n_lockkit.ops.store import ForeignKey, LockStore, ScopeState
from n8n_lockkit.primitives import keys
from tests.redis_bed import draw, hold_lane, leave_lane


@pytest.fixture
def store(redis_client: redis.Redis) -> LockStore:
    return LockStore(redis_client)


def read(store: LockStore, scope: str) -> ScopeState:
    state = store.read(scope)
    assert isinstance(state, ScopeState), state
    return state


def stat(client: redis.Redis, metric: str, scope: str) -> int:
    return sum(int(client.get(k) or 0) for k in client.keys(f"n8nlock:stats:*:{metric}:{scope}"))


# reading


def test_a_held_lane_reads_with_its_holder_ticket_ttl_and_age(
    redis_client: redis.Redis, store: LockStore
) -> None:
    hold_lane(redis_client, "order-1", ticket=7, age=90)
    state = read(store, "order-1")
    (lane,) = state.held
    assert (lane.lane, lane.ticket, lane.head, lane.slots) == (0, 7, 7, 1)
    assert lane.meta is not None and lane.meta["execution_id"] == "57"
    assert lane.problems == [] and state.waiting == 0
    assert 299 < (lane.ttl_seconds or 0) <= 300
    assert 89 < (lane.age_seconds or 0) < 92
    assert lane.key == "n8n-lock-order-1:meta:0"


def test_callers_in_line_behind_a_mutex_holder_are_counted_as_waiting(
    redis_client: redis.Redis, store: LockStore
) -> None:
    hold_lane(redis_client, "order-1", ticket=2)  # served 1, ticket 2 holds
    draw(redis_client, "order-1", 5)  # 3, 4 and 5 wait
    assert read(store, "order-1").waiting == 3


def test_waiting_counts_each_lane_of_a_semaphore_from_its_own_served(
    redis_client: redis.Redis, store: LockStore
) -> None:
    # Three lanes; lane 1 is stuck on ticket 4 while lanes 0 and 2 moved on to 12 and 11.
    # In line: lane 1 has 4, 7, 10, 13; lane 2 has 11, 14; lane 0 has 12, 15. Holders: 4, 11,
    # 12. (The largest `served` alone, 9, would give 15 - 9 - 3 = 3.)
    hold_lane(redis_client, "pool", ticket=4, slots=3)
    hold_lane(redis_client, "pool", ticket=11, slots=3)
    hold_lane(redis_client, "pool", ticket=12, slots=3)
    draw(redis_client, "pool", 15)
    state = read(store, "pool")
    assert [lane.head for lane in state.lanes] == [12, 4, 11]
    assert (state.in_line, len(state.held), state.waiting) == (8, 3, 5)


def test_a_ticket_that_gave_up_is_not_waiting(redis_client: redis.Redis, store: LockStore) -> None:
    hold_lane(redis_client, "order-1", ticket=2)
    draw(redis_client, "order-1", 4)
    redis_client.set("n8n-lock-order-1:gone:3", 1, ex=60)
    redis_client.set("n8n-lock-order-1:gone:1", 1, ex=60)  # long skipped: not in line
    assert read(store, "order-1").waiting == 1


def test_a_record_that_names_more_lanes_than_the_scan_saw_is_read_with_all_of_them(
    redis_client: redis.Redis, store: LockStore
) -> None:
    hold_lane(redis_client, "pool", ticket=3, slots=4)  # only lane 3 has keys yet
    draw(redis_client, "pool", 6)
    state = read(store, "pool")
    assert state.slots == 4 and [h.lane for h in state.held] == [3]
    # In line and not holding: heads 1, 2 and 4 (entering, or dead), and 5 and 6 behind them.
    assert state.waiting == 5
    assert [lane.head for lane in state.lanes] == [4, 1, 2, 3]


def test_a_record_without_ttl_or_not_at_the_lanes_head_is_flagged(
    redis_client: redis.Redis, store: LockStore
) -> None:
    hold_lane(redis_client, "order-1", ticket=3, ttl=None)
    redis_client.set("n8n-lock-order-1:served:0", 5)  # a caller behind skipped it
    (lane,) = read(store, "order-1").held
    assert lane.problems == ["no TTL", "ticket 3 is not the lane's head 6"]


def test_keys_of_another_type_or_content_under_the_prefix_are_not_ours(
    redis_client: redis.Redis, store: LockStore
) -> None:
    redis_client.hset("n8n-lock-cache:meta:0", "a", "b")
    redis_client.set("n8n-lock-label:ticket", "hello")
    redis_client.rpush("n8n-lock-queue", "x")
    redis_client.set("n8n-lock-old", 3)  # a counter of the format before engine v2
    assert store.read("cache") == ForeignKey(
        "n8n-lock-cache:meta:0", "a hash, not a key of n8nlock's"
    )
    assert store.read("label") == ForeignKey(
        "n8n-lock-label:ticket", "a string that is not a count, not a key of n8nlock's"
    )
    scan = store.scan("*")
    assert [f.key for f in scan.foreign] == [
        "n8n-lock-queue", "n8n-lock-cache:meta:0", "n8n-lock-label:ticket"
    ]  # fmt: skip
    assert scan.states == []


def test_scan_finds_scopes_with_colons_and_reports_held_locks_of_format_1(
    redis_client: redis.Redis, store: LockStore
) -> None:
    hold_lane(redis_client, "tenant:order-1", ticket=2)
    leave_lane(redis_client, "order-2", ticket=1)
    hold_lane(redis_client, "invoice-1")
    redis_client.set("n8n-lock-order-9", 1, ex=60)  # format 1: counter, record and fence
    redis_client.set("n8n-lock-order-9:meta", json.dumps({"lock_id": "x", "fence": 3}), ex=60)
    redis_client.set("n8n-lock-order-9:fence", 3)
    scan = store.scan("*order-*")
    assert [s.scope for s in scan.states] == ["order-2", "tenant:order-1"]
    assert [lane.scope for lane in locks.held_lanes(scan)] == ["tenant:order-1"]
    assert scan.v1_held == ["order-9"] and scan.foreign == []


def test_a_mutex_fast_path_value_is_its_scope_s_key_not_a_counter_of_format_1() -> None:
    assert keys.parse_key("n8n-lock-tenant:order-2:fast") == ("tenant:order-2", "fast", None)
    assert keys.parse_key("n8n-lock-order-2") == ("order-2", "v1_counter", None)


def test_read_takes_the_scope_literally(redis_client: redis.Redis, store: LockStore) -> None:
    hold_lane(redis_client, "a*")
    hold_lane(redis_client, "ab")
    state = read(store, "a*")
    assert state.scope == "a*" and len(state.held) == 1
    assert store.read("a") is None


def test_scanning_never_sends_keys(redis_client: redis.Redis, redis_url: str) -> None:
    # A user without KEYS: any KEYS call would fail with NOPERM.
    redis_client.acl_setuser(
        "nokeys", enabled=True, passwords=["+pw"], keys=["*"], commands=["+@all", "-keys"]
    )
    hold_lane(redis_client, "order-1")
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
    hold_lane(redis_client, "order-1")
    redis_client.hset("n8n-lock-orders-cache", "a", "b")
    with pytest.raises(locks.ForeignKeys, match="n8n-lock-orders-cache \\(a hash"):
        locks.checked_scan(store, "order*")
    everything = locks.checked_scan(store, None)  # no glob given: skipped, reported
    assert [f.key for f in everything.foreign] == ["n8n-lock-orders-cache"]
    assert redis_client.hgetall("n8n-lock-orders-cache") == {"a": "b"}


# releasing


def test_a_release_marks_the_record_advances_the_lane_and_counts_once(
    redis_client: redis.Redis, store: LockStore
) -> None:
    held = hold_lane(redis_client, "order-1", ticket=4)
    (lane,) = read(store, "order-1").held
    assert store.release_if_holder(lane, "reaped") == "done"
    record = json.loads(redis_client.get("n8n-lock-order-1:meta:0") or "")
    assert record["released"] is True and record["released_at"].endswith("Z")
    assert (record["ticket"], record["lock_id"]) == (4, held["lock_id"])
    assert 0 < redis_client.ttl("n8n-lock-order-1:meta:0") <= 5
    assert redis_client.get("n8n-lock-order-1:served:0") == "4"
    assert redis_client.ttl("n8n-lock-order-1:served:0") == -1
    assert stat(redis_client, "reaped", "order-1") == 1
    (counter,) = redis_client.keys("n8nlock:stats:*:reaped:order-1")
    assert 8 * 86400 - 5 < redis_client.ttl(counter) <= 8 * 86400
    # Again: the record is released already, nothing changes and nothing is counted.
    assert store.release_if_holder(lane, "reaped") == "released"
    assert stat(redis_client, "reaped", "order-1") == 1


def test_a_lane_that_changed_hands_is_not_released(
    redis_client: redis.Redis, store: LockStore
) -> None:
    hold_lane(redis_client, "order-1", ticket=1)
    (seen,) = read(store, "order-1").held
    leave_lane(redis_client, "order-1", ticket=1)
    after = hold_lane(redis_client, "order-1", ticket=2, execution_id="58")
    assert store.release_if_holder(seen, "reaped") == "other"
    assert json.loads(redis_client.get("n8n-lock-order-1:meta:0") or "") == after
    assert redis_client.get("n8n-lock-order-1:served:0") == "1"
    assert redis_client.keys("n8nlock:stats:*") == []


def test_the_same_lock_id_on_another_ticket_is_another_holder(
    redis_client: redis.Redis, store: LockStore
) -> None:
    # A caller may pass its own lock_id: the ticket tells two of its runs apart.
    hold_lane(redis_client, "order-1", ticket=1, lock_id="job-7")
    (seen,) = read(store, "order-1").held
    hold_lane(redis_client, "order-1", ticket=2, lock_id="job-7")
    assert store.release_if_holder(seen, "reaped") == "other"


def test_an_expired_record_is_not_released(redis_client: redis.Redis, store: LockStore) -> None:
    hold_lane(redis_client, "order-1", ticket=3)
    (seen,) = read(store, "order-1").held
    redis_client.delete("n8n-lock-order-1:meta:0")
    assert store.release_if_holder(seen, "reaped") == "gone"
    assert redis_client.get("n8n-lock-order-1:served:0") == "2"


def test_a_release_never_moves_served_back(redis_client: redis.Redis, store: LockStore) -> None:
    hold_lane(redis_client, "order-1", ticket=3)
    (seen,) = read(store, "order-1").held
    redis_client.set("n8n-lock-order-1:served:0", 6)  # callers behind skipped past it
    assert store.release_if_holder(seen, "reaped") == "done"
    assert redis_client.get("n8n-lock-order-1:served:0") == "6"


def test_release_picks_the_lane_of_a_semaphore(redis_client: redis.Redis, store: LockStore) -> None:
    hold_lane(redis_client, "pool", ticket=1, slots=3)
    hold_lane(redis_client, "pool", ticket=2, slots=3)
    with pytest.raises(release.LaneNeeded, match="held on 2 lanes \\(1, 2\\)"):
        release.inspect(store, "pool")
    with pytest.raises(release.LaneNeeded, match="lane 0 of scope 'pool' is not held"):
        release.inspect(store, "pool", 0)
    assert release.inspect(store, "pool", 2).ticket == 2


def test_release_refuses_an_unknown_scope_and_a_foreign_key(
    redis_client: redis.Redis, store: LockStore
) -> None:
    with pytest.raises(release.UnknownScope, match="no lock held on scope 'nope'"):
        release.inspect(store, "nope")
    leave_lane(redis_client, "free")
    with pytest.raises(release.UnknownScope, match="no lock held on scope 'free'"):
        release.inspect(store, "free")
    redis_client.sadd("n8n-lock-set:ticket", "x")
    with pytest.raises(release.NotALock, match="n8n-lock-set:ticket is a set"):
        release.inspect(store, "set")


def test_force_release_of_a_lane_its_holder_released_meanwhile_says_so(
    redis_client: redis.Redis, store: LockStore
) -> None:
    hold_lane(redis_client, "order-1", ticket=1)
    shown = release.inspect(store, "order-1")
    leave_lane(redis_client, "order-1", ticket=1)  # the same lock_id, marked released
    assert release.force_release(store, shown) == release.Released(
        False, "its holder released it meanwhile"
    )
    hold_lane(redis_client, "order-1", ticket=2)
    with pytest.raises(release.LockChanged):
        release.force_release(store, shown)
    assert stat(redis_client, "force_released", "order-1") == 0


# forgetting idle scopes


def forget(store: LockStore, state: ScopeState) -> tuple[bool, str]:
    return store.forget_if_idle(state, quiet_seconds=0)


def test_an_idle_scope_loses_its_ticket_lanes_hold_average_and_markers(
    redis_client: redis.Redis, store: LockStore
) -> None:
    leave_lane(redis_client, "order-1", ticket=1)
    hold_lane(redis_client, "order-1", ticket=2)
    redis_client.set("n8n-lock-order-1:gone:3", 1, ex=60)  # gave up; nobody behind it
    draw(redis_client, "order-1", 3)
    leave_lane(redis_client, "order-1", ticket=2)
    state = read(store, "order-1")
    assert state.waiting == 0
    assert forget(store, state) == (True, "3")
    assert redis_client.keys("n8n-lock-order-1*") == ["n8n-lock-order-1:meta:0"]  # 5 s left
    assert forget(store, state) == (False, "no ticket")


def test_a_scope_with_a_holder_or_a_ticket_in_line_is_not_idle(
    redis_client: redis.Redis, store: LockStore
) -> None:
    hold_lane(redis_client, "order-1", ticket=2)
    assert forget(store, read(store, "order-1")) == (False, "lane 0 is held")
    redis_client.delete("n8n-lock-order-1:meta:0")  # the holder died; its record expired
    assert forget(store, read(store, "order-1")) == (False, "ticket 2 is in line in lane 0")
    assert redis_client.exists("n8n-lock-order-1:ticket", "n8n-lock-order-1:served:0") == 2


def test_a_caller_arriving_after_the_read_keeps_the_scope(
    redis_client: redis.Redis, store: LockStore
) -> None:
    leave_lane(redis_client, "order-1", ticket=5)
    state = read(store, "order-1")
    redis_client.incr("n8n-lock-order-1:ticket")  # an arrival draws 6, reads its lane next
    assert forget(store, state) == (False, "ticket 6 is in line in lane 0")
    assert redis_client.get("n8n-lock-order-1:ticket") == "6"
    assert redis_client.get("n8n-lock-order-1:served:0") == "5"


def test_markers_of_tickets_drawn_after_the_read_go_with_the_scope(
    redis_client: redis.Redis, store: LockStore
) -> None:
    # After the read: 6 held, 7 gave up, 8 skipped it, held and left. The marker of 7,
    # left behind, would make ticket 8 of the next round skip ticket 7 while it holds.
    leave_lane(redis_client, "order-1", ticket=5)
    state = read(store, "order-1")
    redis_client.set("n8n-lock-order-1:gone:7", 1, ex=600)
    leave_lane(redis_client, "order-1", ticket=8)
    assert forget(store, state) == (True, "8")
    assert redis_client.exists("n8n-lock-order-1:gone:7") == 0


@pytest.mark.parametrize(
    ("served", "ticket", "idle"),
    [
        ({0: 6, 1: 4, 2: 5}, 6, True),  # 4, 5, 6 were each lane's last
        ({0: 6, 1: 4, 2: 2}, 6, False),  # 5 is in line in lane 2
        ({1: 1, 2: 2}, 2, True),  # lane 0 has not had a ticket yet
        ({1: 1, 2: 2}, 3, False),  # lane 0's first ticket, 3, is in line
        ({0: 3, 2: 2}, 3, False),  # lane 1's first ticket, 1, never left
    ],
)
def test_a_semaphore_is_idle_when_every_lane_served_its_last_ticket(
    redis_client: redis.Redis,
    store: LockStore,
    served: dict[int, int],
    ticket: int,
    idle: bool,
) -> None:
    for lane, value in served.items():
        redis_client.set(f"n8n-lock-pool:served:{lane}", value)
    redis_client.set("n8n-lock-pool:meta:0", json.dumps({"released": True, "lock_id": "x"}))
    draw(redis_client, "pool", ticket)
    state = read(store, "pool")
    assert state.slots == 3
    assert forget(store, state)[0] is idle
    assert (redis_client.exists("n8n-lock-pool:ticket") == 0) is idle


def test_a_scope_released_within_the_quiet_time_is_kept(
    redis_client: redis.Redis, store: LockStore
) -> None:
    leave_lane(redis_client, "order-1", ticket=1)  # the hold average: just set
    state = read(store, "order-1")
    assert store.forget_if_idle(state, quiet_seconds=30) == (False, "released too recently")
    redis_client.expire("n8n-lock-order-1:hold_ms", 7 * 86400 - 31)
    assert store.forget_if_idle(read(store, "order-1"), quiet_seconds=30) == (True, "1")
