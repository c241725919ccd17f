"""Reading engine v2's keys in a real Redis, and the Lua scripts that release and forget them.

Format 3 keeps each holder's record per ticket (`holder:<t>`) and only a copy at the lane
(`meta:<k>`); format 2 kept the record at the lane. Tests that take `fmt` run with both.
"""

from __future__ import annotations

import json

import pytest
import redis

from n8n_lockkit.ops import locks, release
from n8n_lockkit.ops.snapshot import ForeignKey, ScopeState
from n8n_lockkit.ops.store import LockStore
from n8n_lockkit.primitives import keys
from tests.ops_locks import (
    FORMATS,
    enter_late,
    hold,
    holder_record,
    lane_record,
    leave,
    own_record,
    release_under_way,
    skip,
    withdraw,
)
from tests.redis_fixtures import draw, hold_lane, leave_lane


@pytest.fixture
def store(redis_client: redis.Redis) -> LockStore:
    return LockStore(redis_client)


@pytest.fixture(params=FORMATS, ids=lambda fmt: f"format{fmt}")
def fmt(request: pytest.FixtureRequest) -> int:
    """The engine format the locks of a test are written in."""
    value: int = request.param
    return value


def read(store: LockStore, scope: str) -> ScopeState:
    state = store.read(scope)
    assert isinstance(state, ScopeState), state
    return state


def stat(client: redis.Redis, metric: str, scope: str) -> int:
    return sum(int(client.get(k) or 0) for k in client.keys(f"n8nlock:stats:*:{metric}:{scope}"))


# reading


def test_a_held_lane_reads_with_its_holder_ticket_ttl_and_age(
    redis_client: redis.Redis, store: LockStore, fmt: int
) -> None:
    held = hold(redis_client, "order-1", fmt=fmt, ticket=7, age=90)
    state = read(store, "order-1")
    (lane,) = state.held
    assert (lane.lane, lane.ticket, lane.head, lane.slots, lane.format) == (0, 7, 7, 1, fmt)
    assert lane.meta == held and lane.meta["execution_id"] == "57"
    assert lane.problems == [] and state.waiting == 0
    assert 299 < (lane.ttl_seconds or 0) <= 300
    assert 89 < (lane.age_seconds or 0) < 92
    assert lane.key == "n8n-lock-order-1:meta:0"
    own = "n8n-lock-order-1:holder:7" if fmt == 3 else "n8n-lock-order-1:meta:0"
    assert lane.record_key == own


def test_a_format_3_holder_is_read_from_its_own_record_not_from_a_withdrawn_callers_copy(
    redis_client: redis.Redis, store: LockStore
) -> None:
    # Ticket 6 stalled as it entered; 7 skipped it and holds. 6 woke, wrote its record and the
    # lane's copy late, found its mark and withdrew: the copy names 6 until its TTL.
    draw(redis_client, "order-1", 7)
    skip(redis_client, "order-1", head=6)
    held = hold(redis_client, "order-1", ticket=7, execution_id="58")
    late = enter_late(redis_client, "order-1", ticket=6, execution_id="60")
    withdraw(redis_client, "order-1", late)
    assert lane_record(redis_client, "order-1")["ticket"] == 6  # the stale copy
    state = read(store, "order-1")
    (lane,) = state.held
    assert (lane.ticket, lane.format, lane.meta) == (7, 3, held)
    assert lane.record_key == "n8n-lock-order-1:holder:7" and lane.copy == late
    assert lane.problems == ["stale copy at n8n-lock-order-1:meta:0 (ticket 6)"]
    assert state.waiting == 0
    assert release.inspect(store, "order-1").meta == held
    (listed,) = locks.locks_document(store.scan("*"), "http://n8n")["locks"]
    assert (listed["holder"]["execution_id"], listed["ticket"]) == ("58", 7)
    assert (listed["key"], listed["record_key"]) == (
        "n8n-lock-order-1:meta:0", "n8n-lock-order-1:holder:7"
    )  # fmt: skip
    assert listed["format"] == 3


def test_a_copy_whose_ticket_no_longer_holds_is_not_a_holder(
    redis_client: redis.Redis, store: LockStore
) -> None:
    # The copy is written after the record, with the same TTL: it outlives it for a moment.
    hold(redis_client, "order-1", ticket=3)
    redis_client.delete("n8n-lock-order-1:holder:3")
    state = read(store, "order-1")
    assert state.held == [] and state.lanes[0].copy is not None
    assert state.waiting == 1  # ticket 3 is the head: entering, or dead and skipped soon
    # The same for a late copy of a ticket the lane skipped, once that ticket withdrew.
    skip(redis_client, "order-1", head=3)
    withdraw(redis_client, "order-1", enter_late(redis_client, "order-1", ticket=3))
    assert read(store, "order-1").held == []


def test_the_last_ticket_out_still_holds_while_its_record_does(
    redis_client: redis.Redis, store: LockStore
) -> None:
    # Ticket 6 was skipped while it stalled but wrote its record before it could see its
    # mark: it holds, and the engine lets 7 in only once 6's record says released.
    draw(redis_client, "order-1", 7)
    skip(redis_client, "order-1", head=6)
    late = enter_late(redis_client, "order-1", ticket=6)
    state = read(store, "order-1")
    (lane,) = state.held
    assert (lane.ticket, lane.head, lane.record_key) == (6, 7, "n8n-lock-order-1:holder:6")
    assert lane.meta == late and lane.last_record is not None and lane.last_record.active
    assert lane.problems == [
        "ticket 6 still holds after its lane moved on (its release is under way, or it entered "
        "late after a skip): ticket 7 waits for it"
    ]
    assert state.waiting == 1  # ticket 7
    # When 7 has entered too (6 wrote after 7 looked), 7 holds: 6 withdraws on its mark.
    hold(redis_client, "order-1", ticket=7)
    (lane,) = read(store, "order-1").held
    assert lane.ticket == 7


def test_callers_in_line_behind_a_mutex_holder_are_counted_as_waiting(
    redis_client: redis.Redis, store: LockStore
) -> None:
    hold_lane(redis_client, "order-1", ticket=2)  # served 1, ticket 2 holds
    draw(redis_client, "order-1", 5)  # 3, 4 and 5 wait
    assert read(store, "order-1").waiting == 3


def test_waiting_counts_each_lane_of_a_semaphore_from_its_own_served(
    redis_client: redis.Redis, store: LockStore, fmt: int
) -> None:
    # Three lanes; lane 1 is stuck on ticket 4 while lanes 0 and 2 moved on to 12 and 11.
    # In line: lane 1 has 4, 7, 10, 13; lane 2 has 11, 14; lane 0 has 12, 15. Holders: 4, 11,
    # 12. (The largest `served` alone, 9, would give 15 - 9 - 3 = 3.)
    hold(redis_client, "pool", fmt=fmt, ticket=4, slots=3)
    hold(redis_client, "pool", fmt=fmt, ticket=11, slots=3)
    hold(redis_client, "pool", fmt=fmt, ticket=12, slots=3)
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
    redis_client: redis.Redis, store: LockStore, fmt: int
) -> None:
    hold(redis_client, "pool", fmt=fmt, ticket=3, slots=4)  # only lane 3 has keys yet
    draw(redis_client, "pool", 6)
    state = read(store, "pool")
    assert state.slots == 4 and [h.lane for h in state.held] == [3]
    # In line and not holding: heads 1, 2 and 4 (entering, or dead), and 5 and 6 behind them.
    assert state.waiting == 5
    assert [lane.head for lane in state.lanes] == [4, 1, 2, 3]


def test_holder_keys_are_the_engines_own_and_are_numbered_by_ticket_not_by_lane(
    redis_client: redis.Redis, store: LockStore
) -> None:
    # A mutex held by ticket 7: its record's number is no lane (else it would read 8 lanes).
    hold(redis_client, "order-1", ticket=7)
    # Lane 2 of 3 held by its first ticket, whose copy is not written yet: the scan finds it
    # by its record alone, which names the lanes.
    hold(redis_client, "pool", ticket=2, slots=3, copy=False)
    scan = store.scan("*")
    assert scan.foreign == [] and scan.v1_held == []
    order, pool = scan.states
    assert (order.slots, [lane.ticket for lane in order.held]) == (1, [7])
    assert (pool.slots, [(lane.lane, lane.ticket) for lane in pool.held]) == (3, [(2, 2)])
    (lane,) = pool.held
    assert lane.problems == ["no copy of the holder's record at n8n-lock-pool:meta:2"]
    redis_client.hset("n8n-lock-cache:holder:1", "a", "b")
    assert store.read("cache") == ForeignKey(
        "n8n-lock-cache:holder:1", "a hash, not a key of n8nlock's"
    )


def test_a_record_without_ttl_or_not_at_the_lanes_head_is_flagged(
    redis_client: redis.Redis, store: LockStore
) -> None:
    hold_lane(redis_client, "order-1", ticket=3, ttl=None)  # format 2
    redis_client.set("n8n-lock-order-1:served:0", 5)  # a caller behind skipped it
    (lane,) = read(store, "order-1").held
    assert lane.problems == ["no TTL", "ticket 3 is not the lane's head 6"]


def test_a_format_3_record_without_ttl_is_flagged_by_its_own_record(
    redis_client: redis.Redis, store: LockStore
) -> None:
    hold(redis_client, "order-1", ticket=3, ttl=None)
    (lane,) = read(store, "order-1").held
    assert lane.problems == ["no TTL"] and lane.ttl_seconds is None
    redis_client.expire("n8n-lock-order-1:holder:3", 60)  # the copy alone has none now
    (lane,) = read(store, "order-1").held
    assert lane.problems == [] and 0 < (lane.ttl_seconds or 0) <= 60


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
    redis_client: redis.Redis, store: LockStore, fmt: int
) -> None:
    hold(redis_client, "tenant:order-1", fmt=fmt, ticket=2)
    leave(redis_client, "order-2", fmt=fmt, ticket=1)
    hold(redis_client, "invoice-1", fmt=fmt)
    redis_client.set("n8n-lock-order-9", 1, ex=60)  # format 1: counter, record and fence
    redis_client.set("n8n-lock-order-9:meta", json.dumps({"lock_id": "x", "fence": 3}), ex=60)
    redis_client.set("n8n-lock-order-9:fence", 3)
    scan = store.scan("*order-*")
    assert [s.scope for s in scan.states] == ["order-2", "tenant:order-1"]
    assert [lane.scope for lane in locks.held_lanes(scan)] == ["tenant:order-1"]
    assert scan.v1_held == ["order-9"] and scan.foreign == []


def test_a_mutex_fast_path_value_is_its_scope_s_key_not_a_counter_of_format_1() -> None:
    assert keys.SCHEMA.parse_key("n8n-lock-tenant:order-2:fast") == ("tenant:order-2", "fast", None)
    assert keys.SCHEMA.parse_key("n8n-lock-order-2") == ("order-2", "v1_counter", None)


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
    redis_client: redis.Redis, store: LockStore, fmt: int
) -> None:
    held = hold(redis_client, "order-1", fmt=fmt, ticket=4)
    (lane,) = read(store, "order-1").held
    assert store.release_if_holder(lane, "reaped") == "done"
    # Format 3: the ticket's own record and the lane's copy; format 2: the lane's record.
    names = ["n8n-lock-order-1:meta:0"] + (["n8n-lock-order-1:holder:4"] if fmt == 3 else [])
    for name in names:
        record = json.loads(redis_client.get(name) or "")
        assert record["released"] is True and record["released_at"].endswith("Z")
        assert (record["ticket"], record["lock_id"]) == (4, held["lock_id"])
        assert 0 < redis_client.ttl(name) <= keys.RELEASED_META_TTL_SECONDS
    assert redis_client.get("n8n-lock-order-1:served:0") == "4"
    assert redis_client.ttl("n8n-lock-order-1:served:0") == -1
    assert stat(redis_client, "reaped", "order-1") == 1
    (counter,) = redis_client.keys("n8nlock:stats:*:reaped:order-1")
    assert 8 * 86400 - 5 < redis_client.ttl(counter) <= 8 * 86400
    # Again: the record is released already, nothing changes and nothing is counted.
    assert store.release_if_holder(lane, "reaped") == "released"
    assert stat(redis_client, "reaped", "order-1") == 1


def test_releasing_a_format_3_lock_lets_the_next_ticket_in_as_the_engine_decides(
    redis_client: redis.Redis, store: LockStore
) -> None:
    # The engine lets ticket 5 in once `served` names 4 and holder:4 says released.
    hold(redis_client, "order-1", ticket=4)
    draw(redis_client, "order-1", 5)
    (lane,) = read(store, "order-1").held
    assert store.release_if_holder(lane, "force_released") == "done"
    after = read(store, "order-1")
    assert after.held == [] and after.lanes[0].head == 5
    assert after.lanes[0].last_record is not None and not after.lanes[0].last_record.active
    assert after.waiting == 1


@pytest.mark.parametrize(
    ("meanwhile", "outcome"),
    [
        ({"released": True, "ticket": 4, "lock_id": "{lock_id}"}, "released"),
        ({"released": True, "withdrawn": True, "ticket": 4, "lock_id": "{lock_id}"}, "withdrawn"),
        ({"ticket": 4, "lock_id": "another-lock", "format": 3}, "other"),
        (None, "gone"),
        ("{not json", "unreadable"),
    ],
    ids=["released", "withdrawn", "another-lock-id", "expired", "unreadable"],
)
def test_a_format_3_release_refuses_unless_the_tickets_own_record_still_holds(
    redis_client: redis.Redis, store: LockStore, meanwhile: object, outcome: str
) -> None:
    # What the operator was shown, and what holder:4 says by the time the release runs; the
    # lane's copy still says held either way, and must not be taken for the record.
    held = hold(redis_client, "order-1", ticket=4)
    (lane,) = read(store, "order-1").held
    if meanwhile is None:
        redis_client.delete("n8n-lock-order-1:holder:4")
    else:
        text = meanwhile if isinstance(meanwhile, str) else json.dumps(meanwhile)
        redis_client.set("n8n-lock-order-1:holder:4", text.replace("{lock_id}", held["lock_id"]))
    before = {k: redis_client.get(k) for k in redis_client.keys("n8n-lock-order-1*")}
    assert store.release_if_holder(lane, "force_released") == outcome
    assert {k: redis_client.get(k) for k in redis_client.keys("n8n-lock-order-1*")} == before
    assert lane_record(redis_client, "order-1") == held
    assert redis_client.get("n8n-lock-order-1:served:0") == "3"
    assert redis_client.keys("n8nlock:stats:*") == []


def test_a_release_never_overwrites_a_later_tickets_copy(
    redis_client: redis.Redis, store: LockStore
) -> None:
    # Ticket 6 entered late (after 7 skipped it) and holds; the copy has moved on to a later
    # ticket's by the time the operator frees 6: only 6's own record is marked.
    draw(redis_client, "order-1", 7)
    skip(redis_client, "order-1", head=6)
    late = enter_late(redis_client, "order-1", ticket=6)
    (lane,) = read(store, "order-1").held
    assert lane.ticket == 6
    later = hold(redis_client, "order-1", ticket=7, copy=False)
    redis_client.set("n8n-lock-order-1:meta:0", json.dumps(later), ex=300)
    assert store.release_if_holder(lane, "reaped") == "done"
    assert holder_record(redis_client, "order-1", 6)["released"] is True
    assert holder_record(redis_client, "order-1", 6)["lock_id"] == late["lock_id"]
    assert lane_record(redis_client, "order-1") == later
    assert redis_client.get("n8n-lock-order-1:served:0") == "6"  # never back, never past 6


def test_a_release_marks_an_absent_copy_but_leaves_a_stale_one(
    redis_client: redis.Redis, store: LockStore
) -> None:
    hold(redis_client, "order-1", ticket=4, copy=False)
    (lane,) = read(store, "order-1").held
    assert store.release_if_holder(lane, "reaped") == "done"
    assert lane_record(redis_client, "order-1")["released"] is True
    # A stale copy of another ticket (a caller that withdrew) is left to its TTL.
    stale = {"lock_id": "58-x", "ticket": 3, "format": 3}
    hold(redis_client, "order-2", ticket=4, copy=False)
    redis_client.set("n8n-lock-order-2:meta:0", json.dumps(stale), ex=60)
    (lane,) = read(store, "order-2").held
    assert store.release_if_holder(lane, "reaped") == "done"
    assert lane_record(redis_client, "order-2") == stale
    assert holder_record(redis_client, "order-2", 4)["released"] is True


def test_a_lane_that_changed_hands_is_not_released(
    redis_client: redis.Redis, store: LockStore, fmt: int
) -> None:
    hold(redis_client, "order-1", fmt=fmt, ticket=1)
    (seen,) = read(store, "order-1").held
    leave(redis_client, "order-1", fmt=fmt, ticket=1)
    after = hold(redis_client, "order-1", fmt=fmt, ticket=2, execution_id="58")
    # Format 3 compares ticket 1's own record, which its holder released: "released".
    assert store.release_if_holder(seen, "reaped") == ("other" if fmt == 2 else "released")
    assert lane_record(redis_client, "order-1") == after
    assert own_record(redis_client, "order-1", fmt=fmt, ticket=2) == after
    assert redis_client.get("n8n-lock-order-1:served:0") == "1"
    assert redis_client.keys("n8nlock:stats:*") == []


def test_the_same_lock_id_on_another_ticket_is_another_holder(
    redis_client: redis.Redis, store: LockStore
) -> None:
    # A caller may pass its own lock_id: the ticket tells two of its runs apart (format 2).
    hold_lane(redis_client, "order-1", ticket=1, lock_id="job-7")
    (seen,) = read(store, "order-1").held
    hold_lane(redis_client, "order-1", ticket=2, lock_id="job-7")
    assert store.release_if_holder(seen, "reaped") == "other"


def test_an_expired_record_is_not_released(
    redis_client: redis.Redis, store: LockStore, fmt: int
) -> None:
    hold(redis_client, "order-1", fmt=fmt, ticket=3)
    (seen,) = read(store, "order-1").held
    redis_client.delete(seen.record_key)
    assert store.release_if_holder(seen, "reaped") == "gone"
    assert redis_client.get("n8n-lock-order-1:served:0") == "2"


def test_a_release_never_moves_served_back(
    redis_client: redis.Redis, store: LockStore, fmt: int
) -> None:
    hold(redis_client, "order-1", fmt=fmt, ticket=3)
    (seen,) = read(store, "order-1").held
    redis_client.set("n8n-lock-order-1:served:0", 6)  # callers behind skipped past it
    assert store.release_if_holder(seen, "reaped") == "done"
    assert redis_client.get("n8n-lock-order-1:served:0") == "6"


def test_release_picks_the_lane_of_a_semaphore(
    redis_client: redis.Redis, store: LockStore, fmt: int
) -> None:
    hold(redis_client, "pool", fmt=fmt, ticket=1, slots=3)
    hold(redis_client, "pool", fmt=fmt, ticket=2, slots=3)
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
    hold_lane(redis_client, "order-1", ticket=1)  # format 2
    shown = release.inspect(store, "order-1")
    leave_lane(redis_client, "order-1", ticket=1)  # the same lock_id, marked released
    assert release.force_release(store, shown) == release.Released(
        False, "its holder released it meanwhile", "released-meanwhile"
    )
    hold_lane(redis_client, "order-1", ticket=2)
    with pytest.raises(release.LockChanged):
        release.force_release(store, shown)
    assert stat(redis_client, "force_released", "order-1") == 0


def test_force_release_of_a_late_caller_that_withdrew_meanwhile_says_so(
    redis_client: redis.Redis, store: LockStore
) -> None:
    draw(redis_client, "order-1", 7)
    skip(redis_client, "order-1", head=6)
    late = enter_late(redis_client, "order-1", ticket=6)
    shown = release.inspect(store, "order-1")
    withdraw(redis_client, "order-1", late)  # it read its mark
    assert release.force_release(store, shown) == release.Released(
        False,
        "it withdrew meanwhile (it had been skipped while it stalled, and held nothing)",
        "withdrawn-meanwhile",
    )
    assert stat(redis_client, "force_released", "order-1") == 0


# forgetting idle scopes


def forget(store: LockStore, state: ScopeState) -> tuple[bool, str]:
    return store.forget_if_idle(state, quiet_seconds=0)


def test_an_idle_scope_loses_its_ticket_lanes_fast_path_and_hold_average(
    redis_client: redis.Redis, store: LockStore, fmt: int
) -> None:
    leave(redis_client, "order-1", fmt=fmt, ticket=1)
    hold(redis_client, "order-1", fmt=fmt, ticket=2)
    leave(redis_client, "order-1", fmt=fmt, ticket=2)
    state = read(store, "order-1")
    assert state.waiting == 0
    assert forget(store, state) == (True, "2")
    # What is left are released records, for their last 5 s.
    left = {"n8n-lock-order-1:meta:0"}
    left |= {"n8n-lock-order-1:holder:1", "n8n-lock-order-1:holder:2"} if fmt == 3 else set()
    assert set(redis_client.keys("n8n-lock-order-1*")) == left
    assert all(0 < redis_client.ttl(key) <= keys.RELEASED_META_TTL_SECONDS for key in left)
    assert forget(store, state) == (False, "no ticket")


def test_a_scope_with_a_gone_mark_is_kept_until_the_mark_expires(
    redis_client: redis.Redis, store: LockStore
) -> None:
    # Ticket 2 stalled; 3 skipped it, entered and left. Were the scope forgotten, 2 could wake,
    # write its record, find no mark and hold beside the next round's ticket 1 (or its own
    # ticket number, drawn again).
    hold(redis_client, "order-1", ticket=1)
    leave(redis_client, "order-1", ticket=1)
    draw(redis_client, "order-1", 3)
    skip(redis_client, "order-1", head=2)
    hold(redis_client, "order-1", ticket=3)
    leave(redis_client, "order-1", ticket=3)
    state = read(store, "order-1")
    assert state.waiting == 0
    kept = (False, "ticket 2 gave up or was skipped: kept until its mark expires (a caller "
            "skipped while it stalled may still wake)")  # fmt: skip
    assert forget(store, state) == kept
    assert redis_client.get("n8n-lock-order-1:ticket") == "3"
    assert 86400 - 5 < redis_client.ttl("n8n-lock-order-1:gone:2") <= 86400
    redis_client.delete("n8n-lock-order-1:gone:2")  # a day later
    assert forget(store, read(store, "order-1")) == (True, "3")


def test_a_scope_with_a_holder_or_a_ticket_in_line_is_not_idle(
    redis_client: redis.Redis, store: LockStore, fmt: int
) -> None:
    hold(redis_client, "order-1", fmt=fmt, ticket=2)
    assert forget(store, read(store, "order-1")) == (False, "lane 0 is held")
    # The holder died; its record expired (format 3: the copy, written after it, outlives it
    # for a moment, and holds nothing).
    redis_client.delete("n8n-lock-order-1:holder:2" if fmt == 3 else "n8n-lock-order-1:meta:0")
    assert forget(store, read(store, "order-1")) == (False, "ticket 2 is in line in lane 0")
    assert redis_client.exists("n8n-lock-order-1:ticket", "n8n-lock-order-1:served:0") == 2


def test_a_scope_whose_last_ticket_out_still_holds_is_not_idle(
    redis_client: redis.Redis, store: LockStore
) -> None:
    # release.js sets `served` and the lane's copy before it marks the ticket's own record: in
    # between, the lane looks empty and its copy released, yet ticket 4 holds and the engine
    # keeps 5 out until 4's record says released.
    hold(redis_client, "order-1", ticket=4)
    release_under_way(redis_client, "order-1", ticket=4)
    state = read(store, "order-1")
    (lane,) = state.held
    assert lane.ticket == 4 and lane.problems == [
        "ticket 4 still holds after its lane moved on (its release is under way, or it entered "
        "late after a skip): ticket 5 waits for it"
    ]
    assert forget(store, state) == (False, "lane 0 is held")
    # Read before the record was written, decided after: the script reads it itself.
    redis_client.delete("n8n-lock-order-1:holder:4")
    idle = read(store, "order-1")
    assert idle.held == []
    hold(redis_client, "order-1", ticket=4, copy=False)
    release_under_way(redis_client, "order-1", ticket=4)
    assert forget(store, idle) == (False, "lane 0 is held")
    assert redis_client.get("n8n-lock-order-1:ticket") == "4"


def test_a_copy_whose_ticket_still_holds_or_any_holding_record_keeps_the_scope(
    redis_client: redis.Redis, store: LockStore
) -> None:
    # Records behind the lane's last ticket out: the copy's ticket's, and one the scan saw.
    leave(redis_client, "order-1", ticket=6)
    redis_client.expire("n8n-lock-order-1:hold_ms", 600)
    state = read(store, "order-1")
    enter_late(redis_client, "order-1", ticket=4)
    assert forget(store, state) == (False, "lane 0 is held")
    redis_client.set("n8n-lock-order-1:meta:0", json.dumps({"released": True, "lock_id": "x"}))
    assert forget(store, read(store, "order-1")) == (False, "the record of ticket 4 still holds")
    redis_client.delete("n8n-lock-order-1:holder:4")
    assert forget(store, read(store, "order-1")) == (True, "6")


def test_a_caller_arriving_after_the_read_keeps_the_scope(
    redis_client: redis.Redis, store: LockStore, fmt: int
) -> None:
    leave(redis_client, "order-1", fmt=fmt, ticket=5)
    state = read(store, "order-1")
    redis_client.incr("n8n-lock-order-1:ticket")  # an arrival draws 6, reads its lane next
    assert forget(store, state) == (False, "ticket 6 is in line in lane 0")
    assert redis_client.get("n8n-lock-order-1:ticket") == "6"
    assert redis_client.get("n8n-lock-order-1:served:0") == "5"


def test_marks_written_after_the_read_keep_the_scope(
    redis_client: redis.Redis, store: LockStore
) -> None:
    # After the read: 6 held, 7 stalled and was skipped by 8, which held and left. The scan
    # never saw 7's mark; the script looks for it, and 7 finds it when it wakes.
    leave(redis_client, "order-1", ticket=5)
    state = read(store, "order-1")
    hold(redis_client, "order-1", ticket=6)
    leave(redis_client, "order-1", ticket=6)
    draw(redis_client, "order-1", 8)
    skip(redis_client, "order-1", head=7)
    hold(redis_client, "order-1", ticket=8)
    leave(redis_client, "order-1", ticket=8)
    assert forget(store, state)[1].startswith("ticket 7 gave up or was skipped")
    assert redis_client.exists("n8n-lock-order-1:gone:7", "n8n-lock-order-1:ticket") == 2


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
