"""`n8nlock diff`: what push would change, node by node; exit 1 on drift."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from n8n_lockkit.workspace.envconfig import load_env
from n8n_lockkit.workspace.layout import Workspace
from tests.cli.fake_n8n import FakeN8n
from tests.cli.test_pull import pushed_primitives
from tests.cli.test_push import caller, node, recorded_ids
from tests.conftest import Invoke, explain, snapshot


@pytest.fixture
def fake() -> FakeN8n:
    return FakeN8n()


@pytest.fixture
def pushed(workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n) -> Path:
    """The primitives and an `orders` caller, pushed to the fake n8n."""
    pushed_primitives(workspace, invoke, monkeypatch)
    caller(workspace)
    result = invoke("push", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    return workspace


def edit(root: Path, key: str, change: Any) -> None:
    path = root / "workflows" / f"{key}.template.json"
    workflow = json.loads(path.read_text())
    change(workflow)
    path.write_text(json.dumps(workflow, indent=2))


def test_nothing_to_push_exits_0_and_sends_nothing(
    pushed: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    writes = len(fake.writes)
    before = snapshot(pushed)
    result = invoke("diff", cwd=pushed)
    assert result.exit_code == 0, explain(result)
    assert fake.writes[writes:] == []
    assert snapshot(pushed) == before
    assert f"orders ({recorded_ids(pushed)['orders']}): identical" in result.stdout
    assert "4 workflow(s) against dev: 4 identical" in result.stderr


def test_each_kind_of_change_is_named_and_exits_1(
    pushed: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    def change(workflow: dict[str, Any]) -> None:
        workflow["nodes"][0]["parameters"]["path"] = "orders-v2"
        workflow["nodes"].append(node("Log", "n8n-nodes-base.noOp"))
        workflow["connections"]["Call lock_acquisition"] = {
            "main": [[{"node": "Log", "type": "main", "index": 0}]]
        }
        workflow["settings"]["timezone"] = "Europe/Paris"

    edit(pushed, "orders", change)
    fake.workflows[recorded_ids(pushed)["orders"]]["nodes"].append(
        node("Added in n8n", "n8n-nodes-base.noOp")
    )
    result = invoke("diff", "orders", cwd=pushed)
    assert result.exit_code == 1, explain(result)
    assert result.stdout.splitlines() == [
        f"orders ({recorded_ids(pushed)['orders']}): update",
        "    + node 'Log'",
        "    - node 'Added in n8n'",
        "    ~ node 'Webhook': parameters.path",
        "    ~ connections from 'Call lock_acquisition'",
        "    ~ settings.timezone: None -> 'Europe/Paris'",
    ]


def test_json_lists_changes_and_a_workflow_not_on_n8n_yet(
    pushed: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    caller(pushed, "billing")
    env = load_env(Workspace(pushed), "dev")
    env.record_workflow("lock_release", recorded_ids(pushed)["lock_release"], "renamed")
    env.document.path.write_text(env.document.dumps())
    remote_name = fake.workflows[recorded_ids(pushed)["lock_release"]]["name"]
    result = invoke("diff", "-o", "json", "billing", "lock_release", cwd=pushed)
    assert result.exit_code == 1, explain(result)
    document = json.loads(result.stdout)
    assert document["differs"] is True
    assert document["workflows"] == [
        {"key": "billing", "id": None, "status": "create", "changes": []},
        {
            "key": "lock_release",
            "id": recorded_ids(pushed)["lock_release"],
            "status": "update",
            "changes": [{"kind": "name", "local": "renamed", "remote": remote_name}],
        },
    ]


def test_a_recorded_id_gone_from_n8n_is_missing(
    pushed: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    del fake.workflows[recorded_ids(pushed)["orders"]]
    result = invoke("diff", "orders", cwd=pushed)
    assert result.exit_code == 1, explain(result)
    assert result.stdout == f"orders ({recorded_ids(pushed)['orders']}): missing\n"


def test_an_unresolved_placeholder_is_one_error(pushed: Path, invoke: Invoke) -> None:
    edit(
        pushed,
        "orders",
        lambda w: w["nodes"].append(
            {
                **node("Post", "n8n-nodes-base.slack"),
                "credentials": {
                    "slackApi": {"id": "{{@:env:credentials.slackApi.id}}", "name": "x"}
                },
            }
        ),
    )
    result = invoke("diff", "orders", cwd=pushed)
    assert result.exit_code == 3, explain(result)
    assert result.stderr.splitlines() == [
        "Error: workflows/orders.template.json: {{@:env:credentials.slackApi.id}} not found "
        "in the env file",
        "Hint: record the credential's id and name on this n8n as credentials.slackApi: "
        "{id: …, name: …} in the env file (`n8nlock pull --record-credentials` records the "
        "ones a workflow on n8n uses)",
    ]
