"""Workflow files named as n8n names a download: one rule gives each file's key, in every
command (docs/concepts.md#workflow-files)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from n8n_lockkit.workspace.envconfig import load_env
from n8n_lockkit.workspace.layout import Workspace, key_of_name, workflow_key
from tests.cli.fake_n8n import FakeN8n
from tests.cli.test_pull import pushed_primitives
from tests.cli.test_push import node
from tests.conftest import Invoke, explain, snapshot

CORPUS = Path(__file__).parent.parent / "corpus"
SCOPE = "={{ 'order-' + $json.body.orderId }}"
RULE = (
    "a file's key is its name without .template.json or .json, each run of characters other "
    "than letters, digits, _ and - made one _"
)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("orders.template.json", "orders"),
        ("orders.json", "orders"),
        ("My_workflow.json", "My_workflow"),
        ("My workflow.json", "My_workflow"),
        ("My workflow (1).json", "My_workflow_1"),
        ("Café – sync.json", "Cafe_sync"),
        ("-draft.template.json", "draft"),
        ("a.b.json", "a_b"),
    ],
)
def test_a_file_name_gives_its_key_by_one_rule(name: str, key: str) -> None:
    assert workflow_key(Path("workflows") / name) == key


def test_a_valid_key_is_its_own_key_and_a_workflow_name_gives_the_same_key_as_its_file() -> None:
    assert key_of_name("Sync-orders_2") == "Sync-orders_2"
    assert key_of_name("My workflow (1)") == workflow_key(Path("My workflow (1).json"))


def downloaded(root: Path, name: str) -> Path:
    """A workflow saved as n8n's editor downloads it: `<workflow name>.json`."""
    path = root / "workflows" / name
    shutil.copy(CORPUS / "order_update.template.json", path)
    return path


@pytest.fixture
def primed(workspace: Path, invoke: Invoke) -> Path:
    result = invoke("create-lock", "--include-error-handler", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    return workspace


@pytest.mark.parametrize(
    ("name", "key"),
    [("My_workflow.json", "My_workflow"), ("My workflow (1).json", "My_workflow_1")],
)
def test_a_downloaded_file_is_wrapped_by_the_key_its_name_gives(
    primed: Path, invoke: Invoke, name: str, key: str
) -> None:
    path = downloaded(primed, name)
    result = invoke(
        "add-lock-to-workflow", "--workflow-key", key, "--scope-expression", SCOPE, cwd=primed
    )
    assert result.exit_code == 0, explain(result)
    assert f"update  workflows/{name}" in result.stderr
    assert "n8nlock:" in path.read_text()
    assert not (primed / "workflows" / f"{key}.template.json").exists()
    result = invoke("validate", cwd=primed)
    assert result.exit_code == 0, explain(result)


def test_the_hint_for_an_unknown_key_lists_keys_that_work(primed: Path, invoke: Invoke) -> None:
    downloaded(primed, "My workflow (1).json")
    before = snapshot(primed)
    result = invoke(
        "add-lock-to-workflow", "--workflow-key", "orders", "--scope-expression", SCOPE, cwd=primed
    )
    assert result.exit_code == 3, explain(result)
    assert snapshot(primed) == before
    assert result.stderr.splitlines() == [
        "Error: no workflow 'orders' in workflows/",
        "Hint: workflow keys in this workspace: My_workflow_1, error_handler_lock_cleanup, "
        f"lock_acquisition, lock_release ({RULE})",
    ]
    keys = result.stderr.split("workspace: ")[1].split(" (")[0].split(", ")
    for key in keys:
        listed = invoke(
            "add-lock-to-workflow", "--workflow-key", key, "--scope-expression", SCOPE, "--dry-run"
        )
        assert "no workflow" not in listed.stderr, explain(listed)


def test_a_key_typed_as_the_file_name_is_answered_with_its_key(
    primed: Path, invoke: Invoke
) -> None:
    downloaded(primed, "My workflow (1).json")
    result = invoke(
        "add-dedupe",
        "--workflow-key",
        "My workflow (1)",
        "--key-expression",
        SCOPE,
        "--window-seconds",
        "60",
        cwd=primed,
    )
    assert result.exit_code == 3, explain(result)
    assert result.stderr.splitlines() == [
        "Error: invalid workflow key 'My workflow (1)'",
        f"Hint: {RULE}: use My_workflow_1",
    ]


@pytest.mark.parametrize(
    "args",
    [
        ("validate",),
        ("validate", "workflows/orders.json"),
        ("push", "--dry-run"),
        ("diff",),
        ("add-lock-to-workflow", "--workflow-key", "orders", "--scope-expression", SCOPE),
    ],
)
def test_two_files_for_one_key_are_an_error_that_names_both(
    primed: Path, invoke: Invoke, args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("N8N_API_KEY", "not-used: nothing is sent")
    downloaded(primed, "orders.json")
    downloaded(primed, "orders.template.json")
    before = snapshot(primed)
    result = invoke(*args, cwd=primed)
    assert result.exit_code == 3, explain(result)
    assert snapshot(primed) == before
    assert result.stderr.splitlines() == [
        "Error: workflows/orders.json and workflows/orders.template.json both give the "
        "workflow key 'orders'",
        f"Hint: keep one of them, delete or rename the other ({RULE})",
    ]


@pytest.fixture
def fake() -> FakeN8n:
    return FakeN8n()


def test_push_and_diff_name_a_downloaded_file_by_its_key(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> None:
    pushed_primitives(workspace, invoke, monkeypatch)
    webhook = node("Webhook", "n8n-nodes-base.webhook", path="orders", httpMethod="POST")
    workflow = {"name": "My workflow", "nodes": [webhook], "connections": {}}
    (workspace / "workflows" / "My workflow (1).json").write_text(json.dumps(workflow))
    result = invoke("push", "My_workflow_1", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert "create  My_workflow_1 (" in result.stderr
    assert "My_workflow_1" in load_env(Workspace(workspace), "dev").data["workflows"]
    result = invoke("diff", "My_workflow_1", "-o", "json", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert json.loads(result.stdout)["workflows"][0]["key"] == "My_workflow_1"


def test_pull_gives_a_new_workflow_the_key_its_name_gives_and_a_template_file(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> None:
    pushed_primitives(workspace, invoke, monkeypatch)
    webhook = node("Webhook", "n8n-nodes-base.webhook", path="sync", httpMethod="POST")
    fake.add({"name": "Sync Orders (v2)", "nodes": [webhook], "connections": {}, "settings": {}})
    result = invoke("pull", "Sync Orders (v2)", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert (workspace / "workflows" / "Sync_Orders_v2.template.json").is_file()
    assert "Sync_Orders_v2" in load_env(Workspace(workspace), "dev").data["workflows"]


def test_pull_writes_into_the_downloaded_file_that_has_the_key(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> None:
    pushed_primitives(workspace, invoke, monkeypatch)
    webhook = node("Webhook", "n8n-nodes-base.webhook", path="sync", httpMethod="POST")
    workflow = {"name": "My workflow", "nodes": [webhook], "connections": {}, "settings": {}}
    fake.add(workflow)
    (workspace / "workflows" / "My workflow.json").write_text(json.dumps(workflow, indent=2))
    result = invoke("pull", "My workflow", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert sorted(p.name for p in (workspace / "workflows").glob("My*")) == ["My workflow.json"]
    result = invoke("validate", cwd=workspace)
    assert result.exit_code == 0, explain(result)
