from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import Result

from n8n_lockkit.rewrite.wrapping.unwrap import read_configs
from n8n_lockkit.rewrite.wrapping.wrap import LockConfig
from n8n_lockkit.workspace.scaffold import env_text
from tests.conftest import Invoke, explain, snapshot

CORPUS = Path(__file__).parent.parent / "corpus"
ORDER_SCOPE = "={{ 'order-' + $json.body.orderId }}"


@pytest.fixture
def locked(workspace: Path, invoke: Invoke) -> Path:
    """A workspace with every primitive and two corpus workflows."""
    result = invoke("create-lock", "--include-error-handler", "--include-rate-limit", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    for name in ("order_update", "code_heavy"):
        shutil.copy(CORPUS / f"{name}.template.json", workspace / "workflows")
    return workspace


def add_lock(invoke: Invoke, root: Path, key: str, scope: str, *flags: str) -> Result:
    return invoke(
        "add-lock-to-workflow", "--workflow-key", key, "--scope-expression", scope, *flags, cwd=root
    )


def add_rate_limit(invoke: Invoke, root: Path, key: str, scope: str, *flags: str) -> Result:
    return invoke(
        "add-rate-limit",
        "--workflow-key",
        key,
        "--scope-expression",
        scope,
        "--limit",
        "5",
        "--window-seconds",
        "60",
        *flags,
        cwd=root,
    )


def workflow(root: Path, key: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(
        (root / "workflows" / f"{key}.template.json").read_text()
    )
    return loaded


def node_names(root: Path, key: str) -> list[str]:
    return [n["name"] for n in workflow(root, key)["nodes"]]  # type: ignore[attr-defined]


def test_add_lock_wraps_validates_and_is_idempotent(locked: Path, invoke: Invoke) -> None:
    args = (
        "add-lock-to-workflow",
        "--workflow-key",
        "order_update",
        "--scope-expression",
        ORDER_SCOPE,
        "--ttl-seconds",
        "60",
    )
    result = invoke(*args, cwd=locked)
    assert result.exit_code == 0, explain(result)
    assert "Lock Context" in node_names(locked, "order_update")
    assert "without --lock-on-error, an execution that fails while holding scope ={{ 'order-'" in (
        " ".join(result.stderr.split())
    )
    assert invoke("validate", cwd=locked).exit_code == 0
    before = snapshot(locked)
    again = invoke(*args, cwd=locked)
    assert again.exit_code == 0, explain(again)
    assert snapshot(locked) == before
    assert "nothing to do" in again.stderr


def test_other_flags_update_the_lock_in_place(locked: Path, invoke: Invoke) -> None:
    base = ("add-lock-to-workflow", "--workflow-key", "code_heavy", "--scope-expression", "orders")
    assert invoke(*base, cwd=locked).exit_code == 0
    result = invoke(*base, "--fail-fast", "--ttl-seconds", "30", cwd=locked)
    assert result.exit_code == 0, explain(result)
    lock = lock_config(locked, "code_heavy")
    assert lock.ttl_seconds == 30 and lock.on_busy == "error"
    assert node_names(locked, "code_heavy").count("Lock Context") == 1


def test_the_forms_convert_in_place_and_each_rerun_changes_nothing(
    locked: Path, invoke: Invoke
) -> None:
    base = ("add-lock-to-workflow", "--workflow-key", "code_heavy", "--scope-expression", "orders")
    assert invoke(*base, "--max-concurrent", "3", cwd=locked).exit_code == 0
    inline = snapshot(locked)
    sub = invoke(*base, "--max-concurrent", "3", "--via-subworkflow", cwd=locked)
    assert sub.exit_code == 0, explain(sub)
    names = node_names(locked, "code_heavy")
    assert "Lock Acquire" in names and "Lock Context" not in names
    assert lock_config(locked, "code_heavy").max_concurrent == 3
    before = snapshot(locked)
    assert invoke(*base, "--max-concurrent", "3", "--via-subworkflow", cwd=locked).exit_code == 0
    assert snapshot(locked) == before
    kept = invoke(*base, cwd=locked)  # a flag left out keeps the form the lock has
    assert kept.exit_code == 0, explain(kept)
    assert snapshot(locked) == before
    assert invoke(*base, "--no-via-subworkflow", cwd=locked).exit_code == 0
    assert snapshot(locked) == inline


def test_a_static_scope_is_registered_once(locked: Path, invoke: Invoke) -> None:
    args = (
        "add-lock-to-workflow",
        "--workflow-key",
        "code_heavy",
        "--scope-expression",
        "={{ 'invoices' }}",
        "--lock-on-error",
    )
    for _ in range(2):
        result = invoke(*args, cwd=locked)
        assert result.exit_code == 0, explain(result)
    env = (locked / "envs" / "dev.yml").read_text()
    assert env.endswith(
        "lockScopes:                   # static scopes that "
        "error_handler_lock_cleanup cleans\n  - invoices\n"
    )
    settings = workflow(locked, "code_heavy")["settings"]
    assert settings == {
        "executionOrder": "v1",
        "errorWorkflow": "{{@:env:workflows.error_handler_lock_cleanup.id}}",
    }


def test_several_envs_need_a_choice_and_nothing_changes(locked: Path, invoke: Invoke) -> None:
    (locked / "envs" / "prod.yml").write_text(env_text("prod"))
    before = snapshot(locked)
    result = add_lock(invoke, locked, "code_heavy", "x")
    assert result.exit_code == 3, explain(result)
    assert snapshot(locked) == before


def test_an_existing_error_workflow_is_not_overwritten(locked: Path, invoke: Invoke) -> None:
    path = locked / "workflows" / "code_heavy.template.json"
    data = json.loads(path.read_text())
    data["settings"]["errorWorkflow"] = "alerts123"
    path.write_text(json.dumps(data))
    before = snapshot(locked)
    result = add_lock(invoke, locked, "code_heavy", "x", "--lock-on-error")
    assert result.exit_code == 3, explain(result)
    assert "already names error workflow 'alerts123'" in result.stderr
    assert snapshot(locked) == before


@pytest.mark.parametrize("scope", ["", "={{ $json.a", "order-{{ $json.id }}"])
def test_a_bad_scope_expression_is_refused(locked: Path, invoke: Invoke, scope: str) -> None:
    before = snapshot(locked)
    result = add_lock(invoke, locked, "code_heavy", scope)
    assert result.exit_code == 3, explain(result)
    assert result.stderr.startswith("Error: ")
    assert snapshot(locked) == before


def test_missing_primitives_say_to_run_create_lock(workspace: Path, invoke: Invoke) -> None:
    shutil.copy(CORPUS / "code_heavy.template.json", workspace / "workflows")
    result = add_lock(invoke, workspace, "code_heavy", "x", "--via-subworkflow")
    assert result.exit_code == 3, explain(result)
    assert "Hint: run `n8nlock create-lock`" in result.stderr


def test_a_missing_workflow_lists_the_keys(locked: Path, invoke: Invoke) -> None:
    result = add_lock(invoke, locked, "nope", "x")
    assert result.exit_code == 3, explain(result)
    assert "no workflow 'nope'" in result.stderr and "code_heavy" in result.stderr


def test_malformed_workflow_json_changes_nothing(locked: Path, invoke: Invoke) -> None:
    (locked / "workflows" / "code_heavy.template.json").write_text('{"nodes": [')
    before = snapshot(locked)
    result = add_rate_limit(invoke, locked, "code_heavy", "x")
    assert result.exit_code == 3, explain(result)
    assert "workflows/code_heavy.template.json:1:12: not valid JSON" in result.stderr
    assert snapshot(locked) == before


def test_dry_run_writes_nothing(locked: Path, invoke: Invoke) -> None:
    before = snapshot(locked)
    result = add_lock(invoke, locked, "code_heavy", "x", "--dry-run")
    assert result.exit_code == 0, explain(result)
    assert "update  workflows/code_heavy.template.json" in result.stderr
    assert snapshot(locked) == before


def test_rate_limit_then_lock_keep_the_documented_order(locked: Path, invoke: Invoke) -> None:
    assert add_lock(invoke, locked, "code_heavy", "x").exit_code == 0
    result = add_rate_limit(
        invoke, locked, "code_heavy", "=api-{{ $json.body.customer }}", "--on-denied", "error"
    )
    assert result.exit_code == 0, explain(result)
    data = workflow(locked, "code_heavy")
    first = [x["node"] for x in data["connections"]["Webhook"]["main"][0]]  # type: ignore[index]
    assert first == ["Rate Limit Context", "Rate Limit Restore"]
    assert invoke("validate", cwd=locked).exit_code == 0
    before = snapshot(locked)
    assert (
        add_rate_limit(
            invoke, locked, "code_heavy", "=api-{{ $json.body.customer }}", "--on-denied", "error"
        ).exit_code
        == 0
    )
    assert snapshot(locked) == before


def test_a_rate_limit_runs_in_the_workflow_and_needs_no_primitive(
    workspace: Path, invoke: Invoke
) -> None:
    shutil.copy(CORPUS / "code_heavy.template.json", workspace / "workflows")
    result = add_rate_limit(invoke, workspace, "code_heavy", "x")
    assert result.exit_code == 0, explain(result)
    assert (
        "rate_limit_check" not in (workspace / "workflows" / "code_heavy.template.json").read_text()
    )
    assert invoke("validate", cwd=workspace).exit_code == 0


def test_an_unknown_community_trigger_is_locked_with_a_warning_naming_it(
    locked: Path, invoke: Invoke
) -> None:
    shutil.copy(CORPUS / "imap_manual_community.template.json", locked / "workflows")
    result = add_lock(invoke, locked, "imap_manual_community", "tickets")
    assert result.exit_code == 0, explain(result)
    assert (
        "Warning: node 'Community Poller' has type 'n8n-nodes-acme.acmeQueueTrigger', which n8n "
        "does not ship" in " ".join(result.stderr.split())
    )
    names = node_names(locked, "imap_manual_community")
    for trigger in ("Inbox", "When clicking ‘Test workflow’", "Community Poller"):
        assert f"Lock Context ({trigger})" in names


def test_a_webhook_with_several_methods_gets_every_method_locked(
    locked: Path, invoke: Invoke
) -> None:
    shutil.copy(CORPUS / "multi_method_webhook.template.json", locked / "workflows")
    result = add_lock(invoke, locked, "multi_method_webhook", "orders")
    assert result.exit_code == 0, explain(result)
    names = node_names(locked, "multi_method_webhook")
    assert "Lock Context (Orders API GET)" in names and "Lock Context (Orders API POST)" in names
    before = snapshot(locked)
    again = add_lock(invoke, locked, "multi_method_webhook", "orders")
    assert again.exit_code == 0, explain(again)
    assert snapshot(locked) == before


ODD_FILES = {
    "nodes-null": {"nodes": None, "connections": {}},
    "node-not-object": {"nodes": ["Webhook"], "connections": {}},
    "connections-list": {"nodes": [], "connections": []},
    "links-not-list": {
        "nodes": [
            {"name": "W", "type": "n8n-nodes-base.webhook", "position": [0, 0], "parameters": {}},
            {"name": "S", "type": "n8n-nodes-base.set", "position": [200, 0], "parameters": {}},
        ],
        "connections": {"W": {"main": [{"node": "S", "type": "main", "index": 0}]}},
    },
    "wrapped-node-edited": {
        "nodes": [
            {"name": "W", "type": "n8n-nodes-base.webhook", "position": [0, 0], "parameters": {}},
            {
                "name": "Lock Acquire",
                "type": "n8n-nodes-base.executeWorkflow",
                "position": [200, 0],
                "parameters": {"workflowInputs": "edited"},
                "notes": "n8nlock:lock-acquire",
            },
        ],
        "connections": {"W": {"main": [[{"node": "Lock Acquire", "type": "main", "index": 0}]]}},
    },
    "wrapped-node-without-settings": {
        "nodes": [
            {"name": "W", "type": "n8n-nodes-base.webhook", "position": [0, 0], "parameters": {}},
            {
                "name": "Lock Context",
                "type": "n8n-nodes-base.set",
                "position": [200, 0],
                "parameters": {},
                "notes": "n8nlock:lock-context, its config line deleted by hand",
            },
        ],
        "connections": {"W": {"main": [[{"node": "Lock Context", "type": "main", "index": 0}]]}},
    },
    "array": [],
}


@pytest.mark.parametrize("shape", sorted(ODD_FILES))
@pytest.mark.parametrize("command", ["add-lock-to-workflow", "add-rate-limit"])
def test_an_odd_file_gets_one_error_and_a_hint_never_a_traceback(
    locked: Path, invoke: Invoke, shape: str, command: str
) -> None:
    (locked / "workflows" / "odd.template.json").write_text(json.dumps(ODD_FILES[shape]))
    before = snapshot(locked)
    if command == "add-lock-to-workflow":
        result = add_lock(invoke, locked, "odd", "orders")
    else:
        result = add_rate_limit(invoke, locked, "odd", "api")
    assert result.exit_code == 3, explain(result)
    assert result.exception is None or isinstance(result.exception, SystemExit), explain(result)
    lines = result.stderr.splitlines()
    assert lines[0].startswith("Error: ") and lines[1].startswith("Hint: "), explain(result)
    assert snapshot(locked) == before


def test_the_ttl_defaults_to_the_execution_timeout_plus_a_margin(
    locked: Path, invoke: Invoke
) -> None:
    path = locked / "workflows" / "code_heavy.template.json"
    data = json.loads(path.read_text())
    data["settings"]["executionTimeout"] = 300
    path.write_text(json.dumps(data))
    result = add_lock(invoke, locked, "code_heavy", "invoices")
    assert result.exit_code == 0, explain(result)
    assert "lock TTL 360 s, from settings.executionTimeout (300 s) + 60 s" in result.stderr
    assert lock_config(locked, "code_heavy").ttl_seconds == 360


def test_without_a_timeout_the_ttl_is_an_hour_and_a_rerun_keeps_the_ttl_it_has(
    locked: Path, invoke: Invoke
) -> None:
    result = add_lock(invoke, locked, "order_update", "orders")
    assert result.exit_code == 0, explain(result)
    assert "lock TTL 3600 s, from the default" in result.stderr
    assert lock_config(locked, "order_update").ttl_seconds == 3600
    assert add_lock(invoke, locked, "order_update", "orders", "--ttl-seconds", "90").exit_code == 0
    again = add_lock(invoke, locked, "order_update", "orders", "--fail-fast")
    assert again.exit_code == 0, explain(again)
    assert lock_config(locked, "order_update").ttl_seconds == 90
    assert "lock TTL" not in again.stderr


def lock_config(root: Path, key: str) -> LockConfig:
    lock, _ = read_configs(workflow(root, key))
    assert lock is not None
    return lock


def test_a_workflow_that_states_no_execution_order_gets_v1_and_is_told(
    locked: Path, invoke: Invoke
) -> None:
    path = locked / "workflows" / "code_heavy.template.json"
    data = json.loads(path.read_text())
    data["settings"] = {}
    path.write_text(json.dumps(data))
    result = add_lock(invoke, locked, "code_heavy", "invoices", "--ttl-seconds", "60")
    assert result.exit_code == 0, explain(result)
    assert "n8nlock set settings.executionOrder to v1" in " ".join(result.stderr.split())
    assert workflow(locked, "code_heavy")["settings"] == {"executionOrder": "v1"}
    again = add_lock(invoke, locked, "code_heavy", "invoices", "--ttl-seconds", "60")
    assert again.exit_code == 0 and "nothing to do" in again.stderr, explain(again)


def test_a_workflow_in_the_legacy_order_is_refused_and_left_as_it_was(
    locked: Path, invoke: Invoke
) -> None:
    path = locked / "workflows" / "code_heavy.template.json"
    data = json.loads(path.read_text())
    data["settings"]["executionOrder"] = "v0"
    path.write_text(json.dumps(data))
    before = snapshot(locked)
    result = add_lock(invoke, locked, "code_heavy", "invoices")
    assert result.exit_code == 3, explain(result)
    assert result.stderr.startswith("Error: the workflow runs in n8n's legacy execution order")
    assert snapshot(locked) == before
