"""locks, release, reap and stats through the CLI, against a real Redis (n8n's API stubbed).

Tests that take `fmt` run with locks of both engine formats (tests/ops_locks.py): format 3 keeps
each holder's record per ticket (`holder:<t>`) and a copy at the lane, format 2 the record at
the lane.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

import click
import pytest
import redis
import responses
from click.testing import Result

from n8n_lockkit.cli import ops_commands
from testbed.ports import free_port
from tests.cli.fake_n8n import API_KEY, BASE
from tests.conftest import Invoke, explain, snapshot
from tests.ops_locks import (
    FORMATS,
    enter_late,
    hold,
    holder_record,
    leave,
    own_record,
    skip,
    withdraw,
)
from tests.redis_fixtures import draw, hold_lane


@pytest.fixture(params=FORMATS, ids=lambda fmt: f"format{fmt}")
def fmt(request: pytest.FixtureRequest) -> int:
    """The engine format the locks of a test are written in."""
    value: int = request.param
    return value


@pytest.fixture
def ws(
    workspace: Path,
    invoke: Invoke,
    redis_url: str,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """The dev env points at the stub n8n, and records the (emptied) test Redis as
    redis-credential does."""
    env = workspace / "envs" / "dev.yml"
    env.write_text(env.read_text().replace("http://127.0.0.1:5678", BASE))
    monkeypatch.setenv("N8N_API_KEY", API_KEY)
    monkeypatch.delenv("N8NLOCK_REDIS_URL", raising=False)
    port = str(urlsplit(redis_url).port)
    result = invoke("redis-credential", "--link", "c1", "--host", "127.0.0.1", "--port", port,
                    cwd=workspace)  # fmt: skip
    assert result.exit_code == 0, explain(result)
    return workspace


def one_error(result: Result, exit_code: int, message: str) -> str:
    """Exactly one Error: line (containing `message`) and one Hint: line; returns the hint."""
    assert result.exit_code == exit_code, explain(result)
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    hints = [line for line in result.stderr.splitlines() if line.startswith("Hint: ")]
    assert len(errors) == 1 and message in errors[0], explain(result)
    assert len(hints) == 1, explain(result)
    assert "Traceback" not in result.output
    return hints[0]


def stub_execution(execution_id: str, status: str, workflow_id: str = "wf1") -> None:
    body = {"id": execution_id, "status": status, "workflowId": workflow_id}
    responses.add("GET", f"{BASE}/api/v1/executions/{execution_id}", json=body)


# redis-credential records where Redis is


def test_redis_credential_records_the_address_once(
    ws: Path, invoke: Invoke, redis_url: str
) -> None:
    text = (ws / "envs" / "dev.yml").read_text()
    port = urlsplit(redis_url).port
    assert f"redis: {{host: 127.0.0.1, port: {port}, database: 0, ssl: false}}\n" in text
    again = invoke("redis-credential", "--link", "c1", "--host", "127.0.0.1", "--port", str(port),
                   cwd=ws)  # fmt: skip
    assert again.exit_code == 0, explain(again)
    assert "record" not in again.stderr
    assert (ws / "envs" / "dev.yml").read_text() == text


def test_linking_without_a_host_says_how_to_record_the_address(
    workspace: Path, invoke: Invoke
) -> None:
    result = invoke("redis-credential", "--link", "c1", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert "Warning: where Redis is was not recorded" in result.stderr
    assert "--host H" in result.stderr and "--redis-url" in result.stderr


# locks


def test_locks_lists_each_held_lane_with_its_execution_link_and_callers_in_line(
    ws: Path, invoke: Invoke, redis_client: redis.Redis, fmt: int
) -> None:
    held = hold(redis_client, "order-1", fmt=fmt, ticket=12, age=75)
    draw(redis_client, "order-1", 14)  # two callers wait behind ticket 12
    hold(redis_client, "pool", fmt=fmt, ticket=5, slots=3, ttl=None, execution_id="58")
    result = invoke("locks", cwd=ws)
    assert result.exit_code == 0, explain(result)
    header, first, second, flag = result.stdout.splitlines()
    assert re.split(r"  +", header) == [
        "SCOPE", "LANE", "HOLDER", "EXECUTION", "LOCK ID", "FENCE", "HELD FOR", "EXPIRES IN",
        "WAITING", "LINK",
    ]  # fmt: skip
    assert re.fullmatch(
        rf"order-1 +- +orders \(wf1\) +57 +{held['lock_id']} +12 +1m1[5-7]s +(4m5\ds|5m00s) +2 +"
        rf"{BASE}/workflow/wf1/executions/57",
        first,
    ), first
    # Lane 2 of 3, which served ticket 2: tickets 1, 3 and 4 are in line in lanes 1 and 0.
    assert re.fullmatch(r"pool +2/3 +orders \(wf1\) +58 +\S+ +5 +0s +never \(!\) +3 +\S+", second)
    assert flag == (
        "! pool: the record of lane 2 has no TTL and never expires; `n8nlock reap` frees it "
        "once its holder has ended"
    )
    assert "2 lock(s) held. WAITING counts the callers in line" in result.stderr


def test_locks_as_json_lists_lanes_scopes_and_format_1_locks_still_held(
    ws: Path, invoke: Invoke, redis_client: redis.Redis, fmt: int
) -> None:
    held = hold(redis_client, "order-1", fmt=fmt, ticket=3)
    leave(redis_client, "order-2", fmt=fmt, ticket=1)
    draw(redis_client, "order-2", 2)  # 2 drew its ticket and has not entered yet
    redis_client.set("n8n-lock-order-9:meta", json.dumps({"lock_id": "x", "fence": 1}), ex=60)
    result = invoke("locks", "--scope", "order-*", "-o", "json", cwd=ws)
    assert result.exit_code == 0, explain(result)
    document = json.loads(result.stdout)
    (first,) = document["locks"]
    assert first["holder"] == {
        "lock_id": held["lock_id"],
        "workflow_id": "wf1",
        "workflow_name": "orders",
        "execution_id": "57",
        "execution_url": f"{BASE}/workflow/wf1/executions/57",
    }
    assert (first["lane"], first["slots"], first["ticket"], first["fence"]) == (0, 1, 3, 3)
    assert first["waiting"] == 0 and first["problems"] == []
    # `key` stays the lane's key (format 2's record); format 3's record is the ticket's own.
    assert first["key"] == "n8n-lock-order-1:meta:0" and first["format"] == fmt
    own = "n8n-lock-order-1:holder:3" if fmt == 3 else "n8n-lock-order-1:meta:0"
    assert first["record_key"] == own
    assert 295 < first["ttl_seconds"] <= 300
    assert document["scopes"] == [
        {"scope": "order-1", "slots": 1, "ticket": 3, "held": 1, "waiting": 0},
        {"scope": "order-2", "slots": 1, "ticket": 2, "held": 0, "waiting": 1},
    ]
    assert document["v1_locks"] == ["order-9"]
    assert "Warning: 1 lock(s) of the format before engine v2 still held (order-9)" in (
        result.stderr
    )


def test_locks_shows_the_real_holder_when_the_lanes_copy_is_a_withdrawn_callers(
    ws: Path, invoke: Invoke, redis_client: redis.Redis
) -> None:
    # Ticket 7 (execution 58) holds; ticket 6 (execution 60) was skipped while it stalled,
    # wrote its record and the lane's copy late, read its mark and withdrew.
    draw(redis_client, "order-1", 8)  # 8 waits
    skip(redis_client, "order-1", head=6)
    held = hold(redis_client, "order-1", ticket=7, execution_id="58", workflow_id="wf2")
    withdraw(redis_client, "order-1", enter_late(redis_client, "order-1", ticket=6,
                                                 execution_id="60"))  # fmt: skip
    result = invoke("locks", cwd=ws)
    assert result.exit_code == 0, explain(result)
    _, row, flag = result.stdout.splitlines()
    assert re.fullmatch(
        rf"order-1 +- +orders \(wf2\) +58 +{held['lock_id']} +7 +0s +(4m5\ds|5m00s) +1 +"
        rf"{BASE}/workflow/wf2/executions/58",
        row,
    ), row
    assert flag == (
        "! order-1: lane 0's holder is ticket 7 (n8n-lock-order-1:holder:7); its copy "
        "n8n-lock-order-1:meta:0 names ticket 6 (a late write of a caller that was skipped while "
        "it stalled, or a write under way): callers of format 2 read that copy"
    )
    (listed,) = json.loads(invoke("locks", "-o", "json", cwd=ws).stdout)["locks"]
    assert (listed["holder"]["execution_id"], listed["ticket"], listed["fence"]) == ("58", 7, 7)
    assert listed["record_key"] == "n8n-lock-order-1:holder:7"
    assert listed["problems"] == ["stale copy at n8n-lock-order-1:meta:0 (ticket 6)"]


def test_locks_says_so_when_nothing_is_held(
    ws: Path, invoke: Invoke, redis_client: redis.Redis, fmt: int
) -> None:
    leave(redis_client, "order-1", fmt=fmt)
    result = invoke("locks", cwd=ws)
    assert result.exit_code == 0 and result.stdout == ""
    assert "no lock is held" in result.stderr


def test_a_scope_glob_that_matches_keys_of_another_app_is_refused(
    ws: Path, invoke: Invoke, redis_client: redis.Redis
) -> None:
    redis_client.hset("n8n-lock-orders-cache", "a", "b")
    hold_lane(redis_client, "order-1")
    one_error(invoke("locks", "--scope", "order*", cwd=ws), 3, "n8n-lock-orders-cache (a hash")
    everything = invoke("locks", cwd=ws)
    assert everything.exit_code == 0, explain(everything)
    assert "Warning: n8n-lock-orders-cache is a hash" in everything.stderr
    one_error(invoke("reap", "--scope", "order*", cwd=ws), 3, "did not write")
    assert redis_client.hgetall("n8n-lock-orders-cache") == {"a": "b"}


def test_keys_that_are_not_utf8_neither_crash_nor_are_touched(
    ws: Path,
    invoke: Invoke,
    redis_url: str,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = redis.Redis.from_url(redis_url)
    raw.set(b"n8n-lock-\xff\xfe:ticket", b"1")
    raw.set(b"n8n-lock-bin:meta:0", b"\xff{not json")
    raw.incr(b"n8n-lock-bin:ticket")
    hold_lane(redis_client, "order-1")
    listed = invoke("locks", "-o", "json", cwd=ws)
    assert listed.exit_code == 0, explain(listed)
    scopes = {lock["scope"]: lock["problems"] for lock in json.loads(listed.stdout)["locks"]}
    assert scopes == {"order-1": []}
    assert "Warning: n8n-lock-\ufffd\ufffd:ticket is a name that is not UTF-8" in listed.stderr
    assert "Warning: n8n-lock-bin:meta:0 is not UTF-8 text" in listed.stderr
    responses.add("GET", f"{BASE}/api/v1/executions/57", json={"status": "running"})
    monkeypatch.setattr(ops_commands, "pause", lambda seconds: None)
    result = invoke("reap", cwd=ws)
    assert result.exit_code == 0, explain(result)
    assert result.stdout == "kept  order-1  execution 57 is running\n"
    assert raw.get(b"n8n-lock-\xff\xfe:ticket") == b"1"
    assert raw.get(b"n8n-lock-bin:meta:0") == b"\xff{not json"
    raw.close()


# where Redis is, and when it says no


def test_unreachable_redis_is_one_error_with_exit_4(ws: Path, invoke: Invoke) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    hint = one_error(invoke("locks", "--redis-url", url, cwd=ws), 4, f"cannot reach Redis at {url}")
    assert "--redis-url" in hint


def test_a_wrong_password_is_one_error_with_exit_4(
    ws: Path, invoke: Invoke, redis_client: redis.Redis, redis_url: str
) -> None:
    redis_client.acl_setuser("ops", enabled=True, passwords=["+right"], keys=["*"],
                             commands=["+@all"])  # fmt: skip
    port = urlsplit(redis_url).port
    try:
        result = invoke("stats", "--redis-url", f"redis://ops:wrong@127.0.0.1:{port}/0", cwd=ws)
        hint = one_error(result, 4, "refused the credentials")
        assert "wrong" not in result.output and "***" in result.stderr
        assert "--redis-url" in hint
    finally:
        redis_client.acl_deluser("ops")


@pytest.mark.slow  # the client retries the unreachable address for seconds
def test_the_url_variable_overrides_the_env_record(
    ws: Path, invoke: Invoke, redis_url: str, redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    env = ws / "envs" / "dev.yml"
    env.write_text(re.sub(r"port: \d+", f"port: {free_port()}", env.read_text()))
    one_error(invoke("locks", cwd=ws), 4, "cannot reach Redis at redis://127.0.0.1:")
    hold_lane(redis_client, "order-1")
    monkeypatch.setenv("N8NLOCK_REDIS_URL", redis_url)
    result = invoke("locks", cwd=ws)
    assert result.exit_code == 0 and "order-1" in result.stdout, explain(result)


def test_an_env_without_the_record_says_how_to_add_it(workspace: Path, invoke: Invoke) -> None:
    hint = one_error(invoke("locks", cwd=workspace), 3, "does not say where Redis is")
    assert "redis-credential --link" in hint


def test_an_unset_password_variable_is_an_input_error(
    ws: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = ws / "envs" / "dev.yml"
    env.write_text(env.read_text().replace("ssl: false}", "ssl: false, passwordEnv: OPS_REDIS_PW}"))
    monkeypatch.delenv("OPS_REDIS_PW", raising=False)
    one_error(invoke("locks", cwd=ws), 3, "OPS_REDIS_PW is not set")


# release


def test_release_without_force_says_what_to_do(
    ws: Path, invoke: Invoke, redis_client: redis.Redis
) -> None:
    held = hold_lane(redis_client, "order-1")
    hint = one_error(invoke("release", "order-1", cwd=ws), 2, "needs --force")
    assert "n8nlock release order-1 --force" in hint
    assert json.loads(redis_client.get("n8n-lock-order-1:meta:0") or "") == held


@pytest.mark.parametrize(
    ("fmt", "releases"),
    [
        (2, "n8n-lock-order-1:meta:0 (marked released), n8n-lock-order-1:served:0 := 4"),
        (3, "n8n-lock-order-1:holder:4 (marked released), n8n-lock-order-1:served:0 := 4, "
            "n8n-lock-order-1:meta:0 (its lane's copy, marked released)"),
    ],
    ids=["format2", "format3"],
)  # fmt: skip
def test_release_without_a_terminal_and_without_yes_changes_nothing(
    ws: Path, invoke: Invoke, redis_client: redis.Redis, fmt: int, releases: str
) -> None:
    held = hold(redis_client, "order-1", fmt=fmt, ticket=4)
    result = invoke("release", "order-1", "--force", cwd=ws)
    assert "--yes" in one_error(result, 3, "there is no terminal to ask")
    assert f"releases   {releases}\n" in result.stdout
    assert json.loads(redis_client.get("n8n-lock-order-1:meta:0") or "") == held
    assert own_record(redis_client, "order-1", fmt=fmt, ticket=4) == held
    assert redis_client.get("n8n-lock-order-1:served:0") == "3"


def test_release_of_a_format_3_lock_names_a_stale_copy_it_leaves_alone(
    ws: Path, invoke: Invoke, redis_client: redis.Redis
) -> None:
    draw(redis_client, "order-1", 7)
    skip(redis_client, "order-1", head=6)
    hold(redis_client, "order-1", ticket=7, execution_id="58")
    late = enter_late(redis_client, "order-1", ticket=6, execution_id="60")
    withdraw(redis_client, "order-1", late)
    result = invoke("release", "order-1", "--force", "--yes", cwd=ws)
    assert result.exit_code == 0, explain(result)
    assert "execution  58" in result.stdout
    assert (
        "releases   n8n-lock-order-1:holder:7 (marked released), n8n-lock-order-1:served:0 := 7, "
        "not its lane's copy n8n-lock-order-1:meta:0 (ticket 6)\n"
    ) in result.stdout
    assert holder_record(redis_client, "order-1", 7)["released"] is True
    assert json.loads(redis_client.get("n8n-lock-order-1:meta:0") or "") == late
    assert redis_client.get("n8n-lock-order-1:served:0") == "7"


def test_release_yes_shows_releases_counts_and_a_second_run_finds_nothing(
    ws: Path, invoke: Invoke, redis_client: redis.Redis, fmt: int
) -> None:
    held = hold(redis_client, "order-1", fmt=fmt, ticket=4)
    draw(redis_client, "order-1", 5)  # the next in line
    other = hold(redis_client, "order-2", fmt=fmt)
    result = invoke("release", "order-1", "--force", "--yes", cwd=ws)
    assert result.exit_code == 0, explain(result)
    assert "lock on scope 'order-1':" in result.stdout
    assert f"execution  57  {BASE}/workflow/wf1/executions/57" in result.stdout
    assert f"lock id    {held['lock_id']}" in result.stdout
    assert [line.split() for line in result.stderr.splitlines()] == [
        ["release", "n8n-lock-order-1:meta:0"]
    ]
    assert json.loads(redis_client.get("n8n-lock-order-1:meta:0") or "")["released"] is True
    assert own_record(redis_client, "order-1", fmt=fmt, ticket=4)["released"] is True
    assert redis_client.get("n8n-lock-order-1:served:0") == "4"  # ticket 5 enters now
    assert json.loads(redis_client.get("n8n-lock-order-2:meta:0") or "") == other
    assert own_record(redis_client, "order-2", fmt=fmt, ticket=1) == other
    stats = invoke("stats", "-o", "json", cwd=ws)
    assert json.loads(stats.stdout)["scopes"][0]["force_released"] == 1
    again = invoke("release", "order-1", "--force", "--yes", cwd=ws)
    assert "n8nlock locks" in one_error(again, 3, "no lock held on scope 'order-1'")
    assert redis_client.get("n8n-lock-order-1:served:0") == "4"


def test_release_dry_run_shows_the_holder_and_changes_nothing_without_force_too(
    ws: Path, invoke: Invoke, redis_client: redis.Redis
) -> None:
    hold(redis_client, "order-1", ticket=4)
    before = {key: redis_client.get(key) for key in redis_client.keys("*")}
    result = invoke("release", "order-1", "--dry-run", cwd=ws)
    assert result.exit_code == 0, explain(result)
    assert "lock on scope 'order-1':" in result.stdout
    assert result.stderr == "dry run, nothing changed: release --force would free this lock\n"
    assert {key: redis_client.get(key) for key in redis_client.keys("*")} == before


def test_release_as_json_says_what_it_freed_and_what_a_dry_run_would(
    ws: Path, invoke: Invoke, redis_client: redis.Redis
) -> None:
    held = hold(redis_client, "order-1", ticket=4)
    planned = invoke("release", "order-1", "--force", "--dry-run", "-o", "json", cwd=ws)
    assert planned.exit_code == 0, explain(planned)
    result = invoke("release", "order-1", "--force", "--yes", "-o", "json", cwd=ws)
    assert result.exit_code == 0, explain(result)
    done = json.loads(result.stdout)
    assert done["dry_run"] is False and done["outcome"] == "released"
    assert done["lock"]["scope"] == "order-1" and done["lock"]["ticket"] == 4
    assert done["lock"]["holder"]["lock_id"] == held["lock_id"]
    shown = json.loads(planned.stdout)
    for document in (shown, done):  # read at two moments
        del document["lock"]["age_seconds"], document["lock"]["ttl_seconds"]
    assert shown == {
        **done,
        "dry_run": True,
        "outcome": "dry-run",
        "message": "dry run, nothing changed: release --force would free this lock",
    }
    assert result.stderr == ""


def test_release_of_a_semaphore_needs_the_lane_when_several_are_held(
    ws: Path, invoke: Invoke, redis_client: redis.Redis
) -> None:
    hold_lane(redis_client, "pool", ticket=1, slots=3)
    hold_lane(redis_client, "pool", ticket=2, slots=3, execution_id="58")
    hint = one_error(invoke("release", "pool", "--force", "--yes", cwd=ws), 3, "2 lanes (1, 2)")
    assert "--lane 1" in hint
    result = invoke("release", "pool", "--force", "--yes", "--lane", "2", cwd=ws)
    assert result.exit_code == 0, explain(result)
    assert "lock on lane 2 of 3 of scope 'pool':" in result.stdout
    assert "execution  58" in result.stdout
    assert json.loads(redis_client.get("n8n-lock-pool:meta:2") or "")["released"] is True
    assert "released" not in json.loads(redis_client.get("n8n-lock-pool:meta:1") or "")


def test_release_that_finds_the_lock_released_meanwhile_says_so(
    ws: Path,
    invoke: Invoke,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    fmt: int,
) -> None:
    hold(redis_client, "order-1", fmt=fmt, ticket=1)
    monkeypatch.setattr(ops_commands, "stdin_is_terminal", lambda: True)

    def holder_releases(*args: object, **kwargs: object) -> bool:
        leave(redis_client, "order-1", fmt=fmt, ticket=1)  # while the operator reads the question
        return True

    monkeypatch.setattr(click, "confirm", holder_releases)
    result = invoke("release", "order-1", "--force", cwd=ws)
    assert result.exit_code == 0, explain(result)
    assert "its holder released it meanwhile: nothing was changed" in result.stderr
    assert redis_client.keys("n8nlock:stats:*:force_released:*") == []


@pytest.mark.parametrize(("answer", "released"), [("y\n", True), ("n\n", False), ("\n", False)])
def test_release_asks_at_a_terminal(
    ws: Path,
    invoke: Invoke,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
    released: bool,
) -> None:
    hold_lane(redis_client, "order-1")
    monkeypatch.setattr(ops_commands, "stdin_is_terminal", lambda: True)
    result = invoke("release", "order-1", "--force", cwd=ws, input=answer)
    assert result.exit_code == 0, explain(result)
    assert "Free this lock? [y/N]" in result.stderr
    record = json.loads(redis_client.get("n8n-lock-order-1:meta:0") or "")
    assert bool(record.get("released")) is released
    assert ("nothing was changed" in result.stderr) is not released


# reap


def test_reap_frees_ended_holders_keeps_running_ones_and_says_why(
    ws: Path, invoke: Invoke, redis_client: redis.Redis, fmt: int
) -> None:
    hold(redis_client, "order-1", fmt=fmt, execution_id="57")
    hold(redis_client, "order-2", fmt=fmt, execution_id="58")
    hold(redis_client, "pool", fmt=fmt, ticket=2, slots=2, execution_id="59")
    stub_execution("57", "canceled")
    stub_execution("58", "waiting")
    stub_execution("59", "error")
    result = invoke("reap", cwd=ws)
    assert result.exit_code == 0, explain(result)
    assert result.stdout.splitlines() == [
        "freed  order-1  execution 57 ended: canceled",
        " kept  order-2  execution 58 is waiting",
        "freed  pool lane 0  execution 59 ended: error",
    ]
    assert "2 lock(s) freed, 1 kept" in result.stderr
    assert redis_client.get("n8n-lock-order-1:served:0") == "1"
    again = invoke("reap", "-o", "json", cwd=ws)
    assert json.loads(again.stdout)["freed"] == 0, explain(again)


def test_reap_dry_run_goes_the_same_way_and_changes_nothing(
    ws: Path, invoke: Invoke, redis_client: redis.Redis
) -> None:
    held = hold_lane(redis_client, "order-1")
    stub_execution("57", "crashed")
    result = invoke("reap", "--dry-run", "-o", "json", cwd=ws)
    assert result.exit_code == 0, explain(result)
    assert json.loads(result.stdout) == {
        "dry_run": True,
        "grace_seconds": 30,
        "freed": 0,
        "forgot": 0,
        "locks": [
            {
                "scope": "order-1",
                "lane": 0,
                "action": "would-free",
                "reason": "execution 57 ended: crashed",
                "workflow_id": "wf1",
                "execution_id": "57",
            }
        ],
    }
    assert json.loads(redis_client.get("n8n-lock-order-1:meta:0") or "") == held


def test_reap_waits_the_grace_period_for_a_record_without_ttl_and_holder(
    ws: Path, invoke: Invoke, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    redis_client.set("n8n-lock-order-1:meta:0", "{not json")
    slept: list[float] = []
    monkeypatch.setattr(ops_commands, "pause", slept.append)
    result = invoke("reap", "--grace", "5", cwd=ws)
    assert result.exit_code == 0, explain(result)
    assert slept == [5]
    assert "1 record(s) without TTL and without a holder to ask about: looking again in 5 s" in (
        result.stderr
    )
    assert result.stdout == "freed  order-1  unreadable meta without TTL for 5 s\n"
    assert redis_client.exists("n8n-lock-order-1:meta:0") == 0


def test_reap_idle_forgets_scopes_nobody_holds_or_waits_for(
    ws: Path, invoke: Invoke, redis_client: redis.Redis, fmt: int
) -> None:
    leave(redis_client, "order-1", fmt=fmt, ticket=3)
    redis_client.expire("n8n-lock-order-1:hold_ms", 3600)  # its last release: days ago
    hold(redis_client, "order-2", fmt=fmt)
    stub_execution("57", "running")
    plain = invoke("reap", cwd=ws)
    assert plain.stdout == "kept  order-2  execution 57 is running\n", explain(plain)
    assert redis_client.get("n8n-lock-order-1:ticket") == "3"
    result = invoke("reap", "--idle", cwd=ws)
    assert result.exit_code == 0, explain(result)
    assert result.stdout.splitlines() == [
        "forgot  order-1  idle: deleted its ticket (3) and lanes",
        "  kept  order-2  execution 57 is running",
    ]
    assert "1 idle scope(s) forgotten" in result.stderr
    assert redis_client.exists("n8n-lock-order-1:ticket", "n8n-lock-order-1:served:0") == 0
    again = invoke("reap", "--idle", "-o", "json", cwd=ws)
    assert json.loads(again.stdout)["forgot"] == 0, explain(again)


def test_reap_without_an_api_key_touches_nothing(
    ws: Path, invoke: Invoke, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = hold_lane(redis_client, "order-1")
    monkeypatch.delenv("N8N_API_KEY")
    before = snapshot(ws)
    hint = one_error(invoke("reap", cwd=ws), 3, "N8N_API_KEY is not set")
    assert "export N8N_API_KEY" in hint
    assert json.loads(redis_client.get("n8n-lock-order-1:meta:0") or "") == held
    assert snapshot(ws) == before


def test_reap_with_a_refused_api_key_changes_nothing(
    ws: Path, invoke: Invoke, redis_client: redis.Redis
) -> None:
    held = hold_lane(redis_client, "order-1")
    responses.add("GET", f"{BASE}/api/v1/executions/57", status=401, json={"message": "no"})
    one_error(invoke("reap", cwd=ws), 4, "n8n refused the API key (401")
    assert json.loads(redis_client.get("n8n-lock-order-1:meta:0") or "") == held


# stats


def test_stats_in_every_format(ws: Path, invoke: Invoke, redis_client: redis.Redis) -> None:
    seconds, _ = redis_client.time()
    prefix = f"n8nlock:stats:{datetime.fromtimestamp(seconds, tz=timezone.utc):%Y%m%d%H}"
    redis_client.set(f"{prefix}:arrived:order-1", 6)
    redis_client.set(f"{prefix}:busy:order-1", 1)
    redis_client.set(f"{prefix}:skipped:order-1", 2)
    redis_client.set(f"{prefix}:waited:order-1", 1)
    redis_client.set(f"{prefix}:wait_le_5:order-1", 1)
    text = invoke("stats", cwd=ws)
    assert text.exit_code == 0, explain(text)
    assert text.stdout.splitlines()[0].split()[3:6] == ["TIMEOUT", "BUSY", "SKIPPED"]
    assert text.stdout.splitlines()[1].split() == [
        "order-1", "3", "1", "0", "1", "2", "0", "0", "0", "0", "0", "<=0.1s", "<=5s", "<=5s"
    ]  # fmt: skip
    document = json.loads(invoke("stats", "--hours", "1", "-o", "json", cwd=ws).stdout)
    assert document["hours"] == 1 and document["scopes"][0]["acquired"] == 3
    assert document["scopes"][0]["wait_seconds"]["p50"] == 0.1
    prom = invoke("stats", "-o", "prometheus", cwd=ws)
    assert 'n8nlock_lock_events{event="acquired",scope="order-1"} 3.0' in prom.stdout
    assert 'n8nlock_lock_events{event="skipped",scope="order-1"} 2.0' in prom.stdout
    assert prom.stderr == ""


def test_stats_without_activity_says_so(ws: Path, invoke: Invoke) -> None:
    result = invoke("stats", "--scope", "nothing-*", cwd=ws)
    assert result.exit_code == 0 and result.stdout == ""
    assert "no lock activity counted in the last 24 h" in result.stderr
