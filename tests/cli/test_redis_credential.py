"""redis-credential plans, then creates or links the credential and records it: --dry-run
decides the same way and sends and writes nothing, -o json says what it did, and running it
again changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.fake_n8n import BASE, FakeN8n
from tests.cli.test_push import point_at
from tests.conftest import Invoke, explain, snapshot

CREATE = ("redis-credential", "--host", "redis", "--port", "6380")
LINK = ("redis-credential", "--link", "c1", "--name", "Redis dev", "--host", "redis")


@pytest.fixture
def fake() -> FakeN8n:
    return FakeN8n()


@pytest.fixture
def env(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The dev env file, pointing at the fake n8n with its API key."""
    return point_at(workspace, BASE, monkeypatch)


def test_dry_run_of_a_create_sends_and_writes_nothing(
    workspace: Path, env: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    before = snapshot(workspace)
    result = invoke(*CREATE, "--dry-run", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert snapshot(workspace) == before
    assert fake.calls == []
    assert "create  credentials.redis = (the id n8n gives it) in envs/dev.yml" in result.stderr
    assert "record  redis = redis:6380/0 in envs/dev.yml" in result.stderr
    assert result.stderr.endswith("dry run: nothing was sent or written\n")


def test_dry_run_says_what_the_run_then_does(
    workspace: Path, env: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    planned = json.loads(invoke(*CREATE, "--dry-run", "-o", "json", cwd=workspace).stdout)
    result = invoke(*CREATE, "-o", "json", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    done = json.loads(result.stdout)
    assert planned == {**done, "dry_run": True, "credential": {**done["credential"], "id": None}}
    assert done == {
        "dry_run": False,
        "path": "envs/dev.yml",
        "changed": True,
        "credential": {"action": "create", "id": "cred-1", "name": "n8nlock redis"},
        "address": {
            "action": "record",
            "redis": {"host": "redis", "port": 6380, "database": 0, "ssl": False},
        },
        "warnings": [],
    }
    assert 'redis: {id: "cred-1", name: "n8nlock redis"}' in env.read_text()


def test_a_dry_run_without_the_password_variable_stops_as_the_run_would(
    workspace: Path, env: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> None:
    monkeypatch.delenv("REDIS_PW_UNSET", raising=False)
    result = invoke(*CREATE, "--password-env", "REDIS_PW_UNSET", "--dry-run", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    assert "Error: the environment variable REDIS_PW_UNSET is not set" in result.stderr
    assert fake.calls == []


@pytest.mark.parametrize("args", [CREATE, LINK], ids=["create", "link"])
def test_running_it_again_changes_nothing(
    workspace: Path, env: Path, invoke: Invoke, fake: FakeN8n, args: tuple[str, ...]
) -> None:
    first = invoke(*args, cwd=workspace)
    assert first.exit_code == 0, explain(first)
    after_first = snapshot(workspace)
    for extra in ((), ("--dry-run",)):
        again = invoke(*args, *extra, "-o", "json", cwd=workspace)
        assert again.exit_code == 0, explain(again)
        document = json.loads(again.stdout)
        assert document["changed"] is False
        assert document["credential"]["action"] == "identical"
        assert document["address"]["action"] == "identical"
        assert snapshot(workspace) == after_first
    assert fake.calls.count(("POST", "/credentials")) == (1 if args == CREATE else 0)


def test_a_link_under_another_name_records_the_name(
    workspace: Path, env: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    assert invoke(*LINK, cwd=workspace).exit_code == 0
    result = invoke("redis-credential", "--link", "c1", "--name", "Redis", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert "link  credentials.redis = c1 in envs/dev.yml" in result.stderr
    assert 'redis: {id: "c1", name: "Redis"}' in env.read_text()
    assert fake.calls == []


def test_a_link_without_a_host_warns_in_json_too(
    workspace: Path, env: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    result = invoke("redis-credential", "--link", "c1", "-o", "json", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    document = json.loads(result.stdout)
    assert document["address"] == {"action": "missing", "redis": None}
    assert document["warnings"][0].startswith("where Redis is was not recorded")
    assert "Warning: where Redis is was not recorded" in result.stderr
