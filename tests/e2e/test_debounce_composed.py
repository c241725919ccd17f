"""Issue 34 in a real n8n with a real Redis: a duplicate guard → a debounce → a rate limit that
waits → a lock that waits → the body.

The body records each run in Redis (`engine-sink-<workflow key>`): a start mark with the
burst's items, a hold of HOLD_MS, an end mark. Held here: every caller is answered at once
(`buffered`, or the guard's `duplicate`); every event's item is in exactly one body; a
duplicate (same event id) within the window is in none; the bodies of one lock scope never
run at once; nothing stays held.
"""

from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from testbed.settings import topology
from tests.e2e.lockbed import Call, LockBed, held_lanes, run_cli, wait_until
from tests.e2e.test_lock_engine import engine_workflow, most_at_once

QUIET = 2  # seconds
HOLD_MS = 1000  # each body holds the lock this long
WINDOW = "120"  # seconds a buffered or run event turns its duplicates away
# Every caller is answered at once: well before its burst's body (QUIET after its last event);
# two n8n instances on a loaded 2-core machine answered in up to 4.04 s.
ANSWERED_S = 10.0
# In queue mode a call hops main → Bull → a worker → main before it is answered.
HOP_S = 1.0 if topology() == "queue" else 0.0


def body_workflow(key: str) -> dict[str, Any]:
    """engine_workflow (Webhook → Mark Start → Hold → Mark End → Answer) whose marks run once
    per body, the start mark with the burst's items."""
    workflow = engine_workflow(key)
    for node in workflow["nodes"]:
        if node["name"] in ("Mark Start", "Mark End"):
            node["executeOnce"] = True
        if node["name"] == "Mark Start":
            node["parameters"]["messageData"] = node["parameters"]["messageData"].replace(
                "execution: $execution.id",
                "execution: $execution.id, items: $input.all().map((item) => item.json.body)",
            )
    return workflow


def install(bed: LockBed, name: str, *lock_flags: str) -> str:
    """The body behind all four, added in an order unlike the one they run in."""
    key = f"{name}_{uuid.uuid4().hex[:6]}"
    (bed.root / "workflows" / f"{key}.template.json").write_text(
        json.dumps(body_workflow(key), indent=2)
    )
    steps = [
        ("add-lock-to-workflow", "--scope-expression", "={{ $json.body.lock }}",
         "--ttl-seconds", "60", "--max-wait-seconds", "120", *lock_flags),
        ("add-debounce", "--key-expression", "={{ $json.body.chat }}",
         "--quiet-seconds", str(QUIET)),
        ("add-rate-limit", "--scope-expression", "=rate-{{ $json.body.lock }}", "--limit", "2",
         "--window-seconds", "4", "--on-denied", "wait", "--max-wait-seconds", "60"),
        ("add-dedupe", "--key-expression", "={{ $json.body.event }}", "--window-seconds", WINDOW),
    ]  # fmt: skip
    for command, *flags in steps:
        run_cli(bed.root, command, "--workflow-key", key, *flags)
    run_cli(bed.root, "validate", "--env", "e2e", "--strict")
    run_cli(bed.root, "push", "--env", "e2e", "--activate", key)
    # n8n compiles each expression on its first run: one burst first, as a running n8n has had.
    warm = f"warm-{key}"
    send(bed, key, warm, warm, warm)
    wait_until(lambda: any(b["items"][0]["event"] == warm for b in bodies(bed, key)), 30, "warm")
    return key


def marks(bed: LockBed, key: str) -> list[dict[str, Any]]:
    """What the bodies of `key` marked (its events name `key` as the sink's scope)."""
    return [json.loads(e) for e in bed.redis.lrange(f"engine-sink-{key}", 0, -1)]


def bodies(bed: LockBed, key: str) -> list[dict[str, Any]]:
    """Each body that ended: its items, and when it started and ended (ms)."""
    found = marks(bed, key)
    ends = {m["execution"]: m["t"] for m in found if m["event"] == "end"}
    return [
        {"items": m["items"], "span": (m["t"], ends[m["execution"]])}
        for m in found
        if m["event"] == "start" and m["execution"] in ends
    ]


def send(bed: LockBed, key: str, chat: str, event: str, lock: str) -> Call:
    body = {"chat": chat, "event": event, "lock": lock, "scope": key, "hold_ms": HOLD_MS}
    return bed.webhook(key, body)


def assert_buffered(call: Call, chat: str) -> None:
    assert call.status == 200 and isinstance(call.body, dict), call
    assert call.body.get("buffered") is True and call.body.get("key") == chat, call.body
    assert call.seconds < ANSWERED_S + HOP_S, f"answered after {call.seconds:.2f} s"  # at once


def assert_duplicate(call: Call, event: str) -> None:
    assert call.status == 200 and isinstance(call.body, dict), call
    assert call.body.get("skipped") is True and call.body.get("reason") == "duplicate", call.body
    assert call.seconds < ANSWERED_S + HOP_S, f"answered after {call.seconds:.2f} s"  # at once


def _bursts_on_three_keys(bed: LockBed, key: str, lock: str, round_: int = 0) -> None:
    """Three chats, three events each, interleaved 0.2 s apart; a duplicate of an event while
    it is buffered; then, once every body ran, a duplicate of an event that ran."""
    chats = [f"chat{k}-{lock}" for k in range(3)]
    earlier = bodies(bed, key)
    before = sorted(i["event"] for b in earlier for i in b["items"])

    with ThreadPoolExecutor(9) as pool:  # sent 0.2 s apart whatever their answers take
        futures = []
        for n in range(3):
            for chat in chats:
                event = f"{chat}-r{round_}-e{n}"
                futures.append((chat, event, pool.submit(send, bed, key, chat, event, lock)))
                time.sleep(0.2)
        sent = [(chat, event, future.result()) for chat, event, future in futures]
    first = f"{chats[0]}-r{round_}-e0"
    duplicate = send(bed, key, chats[0], first, lock)  # still buffered
    for chat, _, call in sent:
        assert_buffered(call, chat)
    assert_duplicate(duplicate, first)
    events = sorted([*before, *(event for _, event, _ in sent)])

    def ran() -> list[str]:
        return sorted(i["event"] for b in bodies(bed, key) for i in b["items"])

    wait_until(lambda: ran() == events, 60, "every event's item ran in a body")
    time.sleep(QUIET + 1)
    found = bodies(bed, key)
    assert ran() == events, found  # exactly once each: the duplicate is in none
    # A burst is cut when its chat was quiet QUIET s; on a loaded machine one may be cut early.
    assert len(earlier) + 3 <= len(found) <= len(earlier) + 9, found
    for body in found:
        assert len({i["chat"] for i in body["items"]}) == 1, f"a body mixed chats: {body}"
    assert most_at_once([b["span"] for b in found]) == 1, [b["span"] for b in found]
    last = f"{chats[1]}-r{round_}-e2"
    after = send(bed, key, chats[1], last, lock)  # ran, within the window
    assert_duplicate(after, last)
    time.sleep(QUIET + 1)
    assert ran() == events, "a duplicate of an event that ran ran again"
    wait_until(lambda: held_lanes(bed.redis, lock) == [], 10, "the lock is free")
    wait_until(lambda: held_lanes(bed.redis, f"dedupe-{key}-*") == [], 10, "no key is held")


def test_bursts_on_three_keys_run_each_event_once_one_body_at_a_time_and_drop_duplicates(
    lockbed: LockBed,
) -> None:
    key = install(lockbed, "composed")
    _bursts_on_three_keys(lockbed, key, f"lock-{uuid.uuid4().hex[:8]}")


def test_three_bursts_at_once_on_one_lock_each_run_once_when_the_lock_parks_its_waiters(
    lockbed: LockBed,
) -> None:
    key = install(lockbed, "composed_park", "--park")
    lock = f"park-{uuid.uuid4().hex[:8]}"
    chats = [f"chat{k}-{lock}" for k in range(3)]
    with ThreadPoolExecutor(3) as pool:  # three runners reach the lock together
        calls = list(pool.map(lambda c: send(lockbed, key, c, f"{c}-e0", lock), chats))
    for chat, call in zip(chats, calls, strict=True):
        assert_buffered(call, chat)

    def ran() -> list[str]:
        return sorted(
            i["event"] for b in bodies(lockbed, key) for i in b["items"] if i["lock"] == lock
        )

    wait_until(lambda: len(ran()) == 3, 60, "the three bursts ran")
    found = bodies(lockbed, key)
    assert ran() == sorted(f"{c}-e0" for c in chats), found
    assert most_at_once([b["span"] for b in found]) == 1, [b["span"] for b in found]
    wait_until(lambda: held_lanes(lockbed.redis, lock) == [], 10, "the lock is free")


def test_a_second_round_of_bursts_on_the_same_keys_runs_like_the_first(
    lockbed: LockBed,
) -> None:
    key = install(lockbed, "composed_again")
    lock = f"again-{uuid.uuid4().hex[:8]}"
    _bursts_on_three_keys(lockbed, key, lock)
    _bursts_on_three_keys(lockbed, key, lock, round_=1)
