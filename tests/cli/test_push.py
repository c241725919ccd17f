from __future__ import annotations

import json
from pathlib import Path

import pytest

from n8n_lockkit.envconfig import load_env
from n8n_lockkit.workspace import Workspace
from tests.cli.fake_n8n import API_KEY, BASE, FakeN8n
from tests.conftest import Invoke, explain, snapshot


@pytest.fixture
def fake() -> FakeN8n:
    return FakeN8n()


def point_at(workspace: Path, url: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the dev env at `url` and give it the fake's API key; returns the env file."""
    env = workspace / "envs" / "dev.yml"
    env.write_text(env.read_text().replace("http://127.0.0.1:5678", url))
    monkeypatch.setenv("N8N_API_KEY", API_KEY)
    return env


@pytest.fixture
def ready(workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace with the primitives, pointing at the fake n8n with a credential linked."""
    point_at(workspace, BASE, monkeypatch)
    for args in (
        ("create-lock", "--include-error-handler"),
        ("redis-credential", "--link", "cred-9", "--name", "Redis dev"),
    ):
        result = invoke(*args, cwd=workspace)
        assert result.exit_code == 0, explain(result)
    return workspace


def recorded_ids(workspace: Path) -> dict[str, str]:
    workflows = load_env(Workspace(workspace), "dev").data["workflows"]
    return {key: entry["id"] for key, entry in workflows.items()}


def caller(workspace: Path) -> None:
    workflow = {
        "name": "orders",
        "active": True,
        "id": "old",
        "nodes": [
            {
                "name": "Webhook",
                "type": "n8n-nodes-base.webhook",
                "position": [0, 0],
                "parameters": {"path": "orders", "httpMethod": "POST"},
            },
            {
                "name": "Lock Acquire",
                "type": "n8n-nodes-base.executeWorkflow",
                "position": [220, 0],
                "parameters": {
                    "workflowId": {
                        "__rl": True,
                        "mode": "id",
                        "value": "{{@:env:workflows.lock_acquisition.id}}",
                    }
                },
            },
        ],
        "connections": {
            "Webhook": {"main": [[{"node": "Lock Acquire", "type": "main", "index": 0}]]}
        },
        "settings": {"errorWorkflow": "{{@:env:workflows.error_handler_lock_cleanup.id}}"},
    }
    (workspace / "workflows" / "orders.template.json").write_text(json.dumps(workflow))


def test_push_creates_in_dependency_order_and_records_ids(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    caller(ready)
    result = invoke("push", cwd=ready)
    assert result.exit_code == 0, explain(result)
    created = [w["name"] for w in fake.workflows.values()]
    assert created.index("orders") == len(created) - 1
    env = (ready / "envs" / "dev.yml").read_text()
    ids = recorded_ids(ready)
    assert f"orders: {{id: {ids['orders']}, name: orders}}" in env
    assert "# static scopes that error_handler_lock_cleanup cleans" in env
    orders = fake.workflows[ids["orders"]]
    assert orders["settings"]["errorWorkflow"] == ids["error_handler_lock_cleanup"]
    assert orders["nodes"][1]["parameters"]["workflowId"]["value"] == ids["lock_acquisition"]
    assert "active" not in orders or orders["active"] is True  # read-only keys were not sent


@pytest.mark.parametrize("n8n_1x", [False, True], ids=["n8n-2.x", "n8n-1.x"])
def test_pushing_twice_sends_no_write(
    ready: Path, invoke: Invoke, fake: FakeN8n, n8n_1x: bool
) -> None:
    fake.refuses_internal_triggers = n8n_1x  # 1.x will not activate a sub-workflow
    caller(ready)
    assert invoke("push", cwd=ready).exit_code == 0
    writes = len(fake.writes)
    result = invoke("push", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert len(fake.writes) == writes
    assert "4 identical" in result.stderr


def test_dry_run_sends_no_write_and_writes_no_file(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    before = snapshot(ready)
    result = invoke("push", "--dry-run", "-o", "json", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert fake.writes == []
    assert snapshot(ready) == before
    actions = {w["key"]: w["action"] for w in json.loads(result.stdout)["workflows"]}
    assert actions == {
        "lock_acquisition": "create",
        "lock_release": "create",
        "error_handler_lock_cleanup": "create",
    }


def test_missing_api_key_variable(
    ready: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> None:
    monkeypatch.delenv("N8N_API_KEY")
    result = invoke("push", cwd=ready)
    assert result.exit_code == 3, explain(result)
    assert "N8N_API_KEY is not set" in result.stderr
    assert fake.calls == []


def test_refused_key_is_exit_4_and_the_key_is_never_printed(
    ready: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> None:
    monkeypatch.setenv("N8N_API_KEY", "wrong-key-42")
    result = invoke("push", cwd=ready)
    assert result.exit_code == 4, explain(result)
    assert result.stderr.startswith("Error: n8n refused the API key (401")
    assert "wrong-key-42" not in result.output and API_KEY not in result.output


def test_unresolved_placeholder_stops_before_anything_is_sent(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> None:
    point_at(workspace, BASE, monkeypatch)
    invoke("create-lock", cwd=workspace)
    result = invoke("push", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    assert "workflows/lock_acquisition.template.json: {{@:env:credentials.redis.id}} is empty" in (
        result.stderr
    )
    assert "redis-credential" in result.stderr
    assert fake.calls == []


def test_a_recorded_id_that_vanished_offers_to_recreate(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    assert invoke("push", cwd=ready).exit_code == 0
    gone = recorded_ids(ready)["lock_release"]
    del fake.workflows[gone]
    result = invoke("push", cwd=ready)
    assert result.exit_code == 4, explain(result)
    assert f"has id {gone} in envs/dev.yml, but n8n has no workflow with that id" in result.stderr
    assert "--recreate-missing" in result.stderr
    again = invoke("push", "--recreate-missing", cwd=ready)
    assert again.exit_code == 0, explain(again)
    assert recorded_ids(ready)["lock_release"] not in (gone, "")


def test_unreachable_instance(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    point_at(workspace, "http://127.0.0.1:9", monkeypatch)
    invoke("redis-credential", "--link", "c1", cwd=workspace)
    invoke("create-lock", cwd=workspace)
    result = invoke("push", cwd=workspace)
    assert result.exit_code == 4, explain(result)
    assert "cannot reach n8n at http://127.0.0.1:9" in result.stderr


def test_redis_credential_is_created_and_recorded(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> None:
    env = point_at(workspace, BASE, monkeypatch)
    result = invoke("redis-credential", "--host", "redis", "--port", "6380", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert 'redis: {id: "cred-1", name: "n8nlock redis"}' in env.read_text()
    again = invoke("redis-credential", "--host", "redis", cwd=workspace)
    assert again.exit_code == 0 and "identical" in again.stderr
    assert fake.calls.count(("POST", "/credentials")) == 1


def test_n8n_1x_refusing_to_activate_sub_workflows_is_not_an_error(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    fake.refuses_internal_triggers = True
    caller(ready)
    result = invoke("push", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert "skip  lock_release: this n8n runs it without publishing" in result.stderr
    assert fake.workflows[recorded_ids(ready)["orders"]]["active"] is True


def test_a_rejected_caller_is_still_an_error(ready: Path, invoke: Invoke, fake: FakeN8n) -> None:
    caller(ready)
    orders = ready / "workflows" / "orders.template.json"
    fake.refuses_internal_triggers = True
    workflow = json.loads(orders.read_text())
    workflow["nodes"][0]["type"] = "n8n-nodes-base.scheduleTrigger"
    orders.write_text(json.dumps(workflow))
    result = invoke("push", cwd=ready)
    assert result.exit_code == 4, explain(result)
    assert "n8n rejected workflow" in result.stderr
