"""`n8nlock pull` and `diff` on a live n8n: pull → push sends no write, and the file a pull
writes resolves in a second env to the same file.

The workflow under test is made the way the editor makes one (through the API, with n8n's
own ids in it): it calls lock_acquisition by id, names the cleanup handler as its error
workflow and reads Redis with the credential by id.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from n8n_lockkit.workspace.envconfig import load_env
from n8n_lockkit.workspace.layout import Workspace
from testbed.client import N8nClient
from testbed.endpoints import N8nInstance
from tests.cli.test_pull import chain, picked_in_editor
from tests.conftest import snapshot
from tests.e2e.lockbed import API_KEY_VARIABLE, init_workspace, run_cli
from tests.e2e.test_push_activation import explain, ids, n8nlock, node

API_FIELDS = {"id", "versionId", "active", "meta", "createdAt", "updatedAt", "tags", "shared"}


@pytest.fixture
def root(n8n: N8nInstance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace with the lock primitives and the cleanup handler, pushed."""
    monkeypatch.setenv(API_KEY_VARIABLE, n8n.api_key)
    workspace = init_workspace(tmp_path / "ws", n8n, [])
    run_cli(workspace, "create-lock", "--include-error-handler")
    run_cli(workspace, "push", "--env", "e2e")
    return workspace


def made_in_editor(n8n_client: N8nClient, root: Path, name: str) -> str:
    credential = load_env(Workspace(root), "e2e").data["credentials"]["redis"]
    hook = node("Webhook", "n8n-nodes-base.webhook", 2, path=name, httpMethod="POST")
    hook["webhookId"] = str(uuid.uuid4())
    call = node(
        "Lock",
        "n8n-nodes-base.executeWorkflow",
        1.2,
        workflowId=picked_in_editor(ids(root)["lock_acquisition"], "lock_acquisition"),
        workflowInputs={"mappingMode": "defineBelow", "value": {}},
        options={},
    )
    read = node("Read", "n8n-nodes-base.redis", 1, operation="get", key="e2e", propertyName="v")
    read["credentials"] = {"redis": {"id": credential["id"], "name": credential["name"]}}
    workflow = chain(name, [hook, call, read], ids(root)["error_handler_lock_cleanup"])
    created: dict[str, Any] = n8n_client.api("POST", "/workflows", json=workflow)
    return str(created["id"])


def ok(result: Result) -> Result:
    assert result.exit_code == 0, explain(result)
    return result


def version_ids(n8n_client: N8nClient, workflow_ids: list[str]) -> dict[str, str]:
    return {i: n8n_client.api("GET", f"/workflows/{i}")["versionId"] for i in workflow_ids}


def test_pull_then_push_sends_no_write(root: Path, n8n_client: N8nClient, unique_name: str) -> None:
    workflow_id = made_in_editor(n8n_client, root, unique_name)
    ok(n8nlock(root, "pull", "--env", "e2e", unique_name, "--key", "orders"))
    pulled = json.loads((root / "workflows" / "orders.template.json").read_text())
    assert not API_FIELDS & set(pulled)
    assert pulled["settings"]["errorWorkflow"] == (
        "{{@:env:workflows.error_handler_lock_cleanup.id}}"
    )
    assert pulled["nodes"][1]["parameters"]["workflowId"]["value"] == (
        "{{@:env:workflows.lock_acquisition.id}}"
    )
    assert pulled["nodes"][2]["credentials"]["redis"]["id"] == "{{@:env:credentials.redis.id}}"

    before = version_ids(n8n_client, list(ids(root).values()))
    pushed = ok(n8nlock(root, "push", "--env", "e2e", "-o", "json"))
    assert {w["action"] for w in json.loads(pushed.stdout)["workflows"]} == {"identical"}
    assert version_ids(n8n_client, list(ids(root).values())) == before
    ok(n8nlock(root, "diff", "--env", "e2e"))

    files = snapshot(root)
    again = ok(n8nlock(root, "pull", "--env", "e2e"))
    assert snapshot(root) == files, again.stderr  # the primitives pull back as written
    assert ids(root)["orders"] == workflow_id


def test_a_wrapped_pulled_workflow_pulls_back_unchanged(
    root: Path, n8n_client: N8nClient, unique_name: str
) -> None:
    made_in_editor(n8n_client, root, unique_name)
    ok(n8nlock(root, "pull", "--env", "e2e", unique_name, "--key", "orders"))
    run_cli(
        root,
        "add-lock-to-workflow",
        "--workflow-key",
        "orders",
        "--scope-expression",
        "={{ 'order-' + $json.body.order }}",
        "--lock-on-error",
    )
    ok(n8nlock(root, "push", "--env", "e2e"))
    files = snapshot(root)
    ok(n8nlock(root, "pull", "--env", "e2e"))
    assert snapshot(root) == files
    ok(n8nlock(root, "diff", "--env", "e2e"))
    edited = (root / "workflows" / "orders.template.json").read_text()
    (root / "workflows" / "orders.template.json").write_text(edited.replace('"Read"', '"Get"'))
    drift = n8nlock(root, "diff", "--env", "e2e", "orders")
    assert drift.exit_code == 1, explain(drift)
    assert "    + node 'Get'" in drift.stdout and "    - node 'Read'" in drift.stdout


def test_pull_in_a_second_env_resolves_the_same_file(
    root: Path, n8n_client: N8nClient, unique_name: str
) -> None:
    made_in_editor(n8n_client, root, unique_name)
    ok(n8nlock(root, "pull", "--env", "e2e", unique_name, "--key", "orders"))
    second = load_env(Workspace(root), "e2e")
    second.document.data["name"] = "e2e2"
    for entry in second.document.data["workflows"].values():
        entry["id"] = ""
    second.document.path.with_name("e2e2.yml").write_text(second.document.dumps())
    ok(n8nlock(root, "push", "--env", "e2e2"))
    assert ids(root)["orders"] != load_env(Workspace(root), "e2e2").workflow_ids()["orders"]
    files = snapshot(root / "workflows")
    ok(n8nlock(root, "pull", "--env", "e2e2"))
    assert snapshot(root / "workflows") == files
    ok(n8nlock(root, "diff", "--env", "e2e2"))
