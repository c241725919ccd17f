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
    assert fake.writes == []  # the id is checked (a GET), nothing is created


def test_a_link_without_a_host_warns_in_json_too(
    workspace: Path, env: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    result = invoke("redis-credential", "--link", "c1", "-o", "json", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    document = json.loads(result.stdout)
    assert document["address"] == {"action": "missing", "redis": None}
    assert document["warnings"][0].startswith("where Redis is was not recorded")
    assert "Warning: where Redis is was not recorded" in result.stderr


def test_link_refuses_an_id_n8n_does_not_have_and_writes_nothing(
    workspace: Path, env: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    before = snapshot(workspace)
    result = invoke("redis-credential", "--link", "typo1", "--host", "redis", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    assert snapshot(workspace) == before
    assert result.stderr.splitlines() == [
        f"Error: n8n at {BASE} has no credential with id 'typo1'; nothing was written",
        "Hint: copy the id from n8n (open the credential: the address ends in its id), or "
        "create one with `n8nlock redis-credential --host H`",
    ]


def test_link_refuses_a_credential_that_is_not_a_redis_one(
    workspace: Path, env: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    fake.credentials["slack1"] = {"id": "slack1", "name": "Slack team", "type": "slackApi"}
    result = invoke("redis-credential", "--link", "slack1", "--dry-run", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    assert result.stderr.startswith(
        "Error: credential 'slack1' on n8n is 'Slack team' of type 'slackApi', not a Redis "
        "credential; nothing was written\n"
    )


def test_link_checks_the_id_on_n8n_before_it_records_it(
    workspace: Path, env: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    result = invoke(*LINK, cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert ("GET", "/credentials/c1") in fake.calls
    assert "Warning" not in result.stderr


@pytest.mark.parametrize("reachable", [True, False], ids=["n8n 1.x", "n8n unreachable"])
def test_link_without_an_answer_from_n8n_links_as_given_with_a_warning(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, reachable: bool
) -> None:
    if reachable:
        FakeN8n(major=1)  # answers 405: 1.x has no GET /credentials/{id}
        point_at(workspace, BASE, monkeypatch)
    result = invoke(*LINK, cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert 'redis: {id: "c1", name: "Redis dev"}' in (workspace / "envs/dev.yml").read_text()
    warning = next(line for line in result.stderr.splitlines() if line.startswith("Warning:"))
    assert warning.startswith("Warning: credential 'c1' is linked as given, not checked on n8n: ")
