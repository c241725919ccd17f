"""`locks` and `stats` show add-debounce's keys, against a real Redis.

The keys are written as the generated nodes write them (templates/js/engine/debounce/,
docs/debounce.md): INCR then EXPIRE a day for `:seq`, RPUSH then EXPIRE a day for the lists
`:claims:<n>` and `:cuts:<s>`, SET with a day's TTL for `:ev:<n>` (`{at, items}`) and `:watch`
(`{s, at, first_at}`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import redis

from n8n_lockkit.ops import debounce
from n8n_lockkit.primitives import keys
from tests.cli.test_ops_commands import ws  # noqa: F401  (the fixture)
from tests.conftest import Invoke, explain

DAY = keys.DEBOUNCE_TTL_SECONDS


def now_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def base(workflow_key: str, key: str) -> str:
    return keys.SCHEMA.debounce_base(workflow_key, key)


def incr(client: redis.Redis, name: str, written_ago_s: int = 0) -> None:
    client.incr(name)
    client.expire(name, DAY - written_ago_s)


def push(client: redis.Redis, name: str, mark: str, written_ago_s: int = 0) -> None:
    client.rpush(name, mark)
    client.expire(name, DAY - written_ago_s)


def event(
    client: redis.Redis, at: str, ticket: int, at_ms: int, *, claims: int = 1, ago_s: int = 0
) -> None:
    """Event `ticket` drew its ticket and stored its items at `at_ms`; `claims` marks on its
    claims list (0: its own push is under way, 1: it claimed, 2: a runner took it too)."""
    incr(client, at + keys.SCHEMA.seq, ago_s)
    record = {"at": at_ms, "items": [{"body": {"chat": "42", "text": f"message {ticket}"}}]}
    client.set(f"{at}{keys.SCHEMA.event}{ticket}", json.dumps(record), ex=DAY - ago_s)
    for mark in "er"[:claims]:
        push(client, f"{at}{keys.SCHEMA.event_claim}{ticket}", mark, ago_s)


def cut(client: redis.Redis, at: str, first: int, *, ago_s: int = 0) -> None:
    """The waiter of the burst that began at `first` cut it (drawing a ticket)."""
    drawn = client.incr(at + keys.SCHEMA.seq)
    client.expire(at + keys.SCHEMA.seq, DAY - ago_s)
    push(client, f"{at}{keys.SCHEMA.cut_of}{first}", str(drawn), ago_s)


def watch(client: redis.Redis, at: str, first: int, looked_ms: int) -> None:
    value = {"s": first, "at": looked_ms, "first_at": looked_ms}
    client.set(at + keys.SCHEMA.watch, json.dumps(value), ex=DAY)


def burst_after_a_run(client: redis.Redis, looked_ago_ms: int) -> dict[str, Any]:
    """Chat 42 of `support`: events 1 and 2 ran (cut 3); events 4 and 5 wait, event 6 is
    storing its claim, and the waiter of burst 4 last looked `looked_ago_ms` ago."""
    now = now_ms(client)
    at = base("support", "chat:42")
    event(client, at, 1, now - 60_000, claims=2)
    event(client, at, 2, now - 59_000, claims=2)
    cut(client, at, 1)
    event(client, at, 4, now - 9_000)
    event(client, at, 5, now - 5_000)
    event(client, at, 6, now - 2_000, claims=0)
    watch(client, at, 4, now - looked_ago_ms)
    return {"now": now}


def test_locks_shows_the_events_waiting_in_a_debounced_burst_and_its_live_waiter(
    ws: Path,  # noqa: F811
    invoke: Invoke,
    redis_client: redis.Redis,
) -> None:
    burst_after_a_run(redis_client, looked_ago_ms=300)
    result = invoke("locks", cwd=ws)
    assert result.exit_code == 0, explain(result)
    header, row = result.stdout.splitlines()
    assert re.split(r"  +", header) == [
        "WORKFLOW", "KEY", "WAITING", "TICKETS", "WAITER", "BURST AGE", "QUIET FOR",
    ]  # fmt: skip
    assert re.fullmatch(r"support +chat:42 +3 +4-6 +alive +(9|10)s +[23]s", row), row
    assert "no lock is held" in result.stderr
    assert "3 debounced event(s) waiting on 1 key(s)" in result.stderr


def test_locks_flags_a_burst_whose_waiter_stopped_looking(
    ws: Path,  # noqa: F811
    invoke: Invoke,
    redis_client: redis.Redis,
) -> None:
    burst_after_a_run(redis_client, looked_ago_ms=keys.DEBOUNCE_STALE_MS + 4_000)
    result = invoke("locks", cwd=ws)
    assert result.exit_code == 0, explain(result)
    _, row, flag = result.stdout.splitlines()
    assert " stale " in row
    assert flag == (
        "! support:chat:42: its waiter has not looked for 10s (dead after 6 s): the key's next "
        "event takes the burst over"
    )


def test_locks_as_json_names_each_waiting_ticket_and_filters_by_workflow_and_key(
    ws: Path,  # noqa: F811
    invoke: Invoke,
    redis_client: redis.Redis,
) -> None:
    burst_after_a_run(redis_client, looked_ago_ms=300)
    quiet = base("support", "chat:7")
    event(redis_client, quiet, 1, now_ms(redis_client) - 60_000, claims=2)  # ran: nothing waits
    cut(redis_client, quiet, 1)
    result = invoke("locks", "-o", "json", cwd=ws)
    assert result.exit_code == 0, explain(result)
    [entry] = json.loads(result.stdout)["debounces"]
    assert {k: entry[k] for k in ("workflow_key", "key", "waiting", "tickets", "waiter")} == {
        "workflow_key": "support",
        "key": "chat:42",
        "waiting": 3,
        "tickets": [4, 5, 6],
        "waiter": "alive",
    }
    assert entry["burst_begins_at"] == 4 and entry["last_ticket"] == 6
    assert 8.5 < entry["age_seconds"] < 11 and 1.5 < entry["quiet_seconds"] < 4
    assert 0 <= entry["watched_seconds_ago"] < 2
    other = json.loads(invoke("locks", "--scope", "orders:*", "-o", "json", cwd=ws).stdout)
    assert other["debounces"] == []
    mine = json.loads(invoke("locks", "--scope", "support:chat:*", "-o", "json", cwd=ws).stdout)
    assert [e["key"] for e in mine["debounces"]] == ["chat:42"]


def test_locks_reads_a_first_burst_before_its_waiter_looked(
    ws: Path,  # noqa: F811
    invoke: Invoke,
    redis_client: redis.Redis,
) -> None:
    event(redis_client, base("support", "new"), 1, now_ms(redis_client))
    [entry] = json.loads(invoke("locks", "-o", "json", cwd=ws).stdout)["debounces"]
    assert entry["tickets"] == [1] and entry["waiter"] == "none"


def test_stats_counts_debounced_events_and_bursts_in_the_window_in_every_format(
    ws: Path,  # noqa: F811
    invoke: Invoke,
    redis_client: redis.Redis,
) -> None:
    burst_after_a_run(redis_client, looked_ago_ms=300)
    old = base("support", "chat:9")  # two events and their burst, three hours ago
    event(redis_client, old, 1, now_ms(redis_client) - 3 * 3_600_000, claims=2, ago_s=3 * 3600)
    event(redis_client, old, 2, now_ms(redis_client) - 3 * 3_600_000, claims=2, ago_s=3 * 3600)
    cut(redis_client, old, 1, ago_s=3 * 3600)
    text = invoke("stats", cwd=ws)
    assert text.exit_code == 0, explain(text)
    assert [line.split() for line in text.stdout.splitlines()] == [
        ["WORKFLOW", "KEY", "EVENTS", "BURSTS"],
        ["support", "chat:42", "5", "1"],
        ["support", "chat:9", "2", "1"],
    ]
    assert "no lock activity counted in the last 24 h" in text.stderr
    assert "debounce: events stored and bursts cut in the last 24 h" in text.stderr
    document = json.loads(invoke("stats", "--hours", "1", "-o", "json", cwd=ws).stdout)
    assert document["debounce_hours"] == 1
    assert document["debounces"] == [
        {"workflow_key": "support", "key": "chat:42", "events": 5, "bursts": 1}
    ]
    week = json.loads(invoke("stats", "--hours", "168", "-o", "json", cwd=ws).stdout)
    assert week["debounce_hours"] == 24 and len(week["debounces"]) == 2
    prom = invoke("stats", "-o", "prometheus", cwd=ws).stdout
    assert 'n8nlock_debounce_events{workflow_key="support"} 7.0' in prom
    assert 'n8nlock_debounce_bursts{workflow_key="support"} 2.0' in prom


def test_a_key_value_that_looks_like_a_suffix_is_read_from_the_end() -> None:
    schema = keys.KeySchema("staging:")
    at = schema.debounce_base("support", "a:ev:3")
    assert debounce.parse(schema, at + ":seq") == (debounce.KeyValue("support", "a:ev:3"), "seq")
    assert debounce.parse(schema, at + ":take:4:170") == (
        debounce.KeyValue("support", "a:ev:3"),
        "take",
    )
    assert debounce.parse(schema, "n8nlock:debounce2:support:a:seq") is None  # another env's
    assert debounce.parse(schema, schema.debounce + "support:seq") is None  # no key value
