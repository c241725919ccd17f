"""`n8nlock add-dedupe`: a duplicate guard is the lock on the key's own scope, with on_busy
skip (or error) and a window; it composes with add-rate-limit (the guard first) and excludes
add-lock-to-workflow."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import Result

from n8n_lockkit.rewrite import graph
from n8n_lockkit.rewrite.plans import dedupe_scope
from n8n_lockkit.rewrite.unwrap import read_configs
from tests.cli.test_add_lock import add_lock, add_rate_limit, locked, workflow
from tests.conftest import Invoke, explain

__all__ = ["locked"]  # the fixture: a workspace with every primitive and two corpus workflows

CORPUS = Path(__file__).parent.parent / "corpus"
EVENT = "={{ $json.body.orderId }}"


def add_dedupe(invoke: Invoke, root: Path, key: str, *flags: str) -> Result:
    return invoke(
        "add-dedupe", "--workflow-key", key, "--key-expression", EVENT,
        "--window-seconds", "600", *flags, cwd=root,
    )  # fmt: skip


def text(root: Path, key: str) -> str:
    return (root / "workflows" / f"{key}.template.json").read_text()


@pytest.mark.parametrize(
    ("given", "scope"),
    [
        ("nightly", "dedupe-sync-nightly"),
        ("={{ $json.body.id }}", "=dedupe-sync-{{ $json.body.id }}"),
        ("=order-{{ $json.body.id }}", "=dedupe-sync-order-{{ $json.body.id }}"),
    ],
)
def test_the_guards_scope_is_the_key_in_the_workflows_namespace(given: str, scope: str) -> None:
    assert dedupe_scope("sync", given) == scope


def test_add_dedupe_guards_with_a_skipping_lock_and_the_cleanup_handler(
    locked: Path, invoke: Invoke
) -> None:
    result = add_dedupe(invoke, locked, "order_update")
    assert result.exit_code == 0, explain(result)
    wrapped = workflow(locked, "order_update")
    lock, rate = read_configs(wrapped)
    assert lock is not None and rate is None
    assert (lock.scope, lock.on_busy, lock.dedupe_window_seconds, lock.dedupe_key) == (
        "=dedupe-order_update-{{ $json.body.orderId }}", "skip", 600, EVENT,
    )  # fmt: skip
    assert lock.lock_on_error is True
    assert graph.as_dict(wrapped["settings"])["errorWorkflow"].endswith(
        "error_handler_lock_cleanup.id}}"
    )
    notes = [str(n["parameters"].get("content", "")) for n in wrapped["nodes"]]  # type: ignore[attr-defined]
    assert any(n.startswith("## Duplicate guard on `{{ $json.body.orderId }}`") for n in notes)


def test_add_dedupe_again_changes_nothing_and_other_flags_update_it_in_place(
    locked: Path, invoke: Invoke
) -> None:
    assert add_dedupe(invoke, locked, "order_update").exit_code == 0
    before = text(locked, "order_update")
    assert add_dedupe(invoke, locked, "order_update").exit_code == 0
    assert text(locked, "order_update") == before
    result = add_dedupe(invoke, locked, "order_update", "--on-duplicate", "error")
    assert result.exit_code == 0, explain(result)
    lock, _ = read_configs(workflow(locked, "order_update"))
    assert lock is not None and lock.on_busy == "error" and lock.dedupe_window_seconds == 600


def test_the_guard_runs_before_a_rate_limit_so_a_duplicate_spends_no_budget(
    locked: Path, invoke: Invoke
) -> None:
    assert add_rate_limit(invoke, locked, "order_update", "api").exit_code == 0
    assert add_dedupe(invoke, locked, "order_update").exit_code == 0
    wrapped = workflow(locked, "order_update")
    links = wrapped["connections"]
    assert isinstance(links, dict)
    # The guard's restore feeds the rate limit's chain; the trigger feeds only the guard.
    targets = {c["node"] for c in links["Lock Restore"]["main"][0]}
    assert {"Rate Limit Context", "Rate Limit Restore"} & targets, targets
    lock, rate = read_configs(wrapped)
    assert lock is not None and lock.dedupe and rate is not None


def test_unwrap_takes_the_guard_off_exactly(locked: Path, invoke: Invoke) -> None:
    original = text(locked, "order_update")
    assert add_dedupe(invoke, locked, "order_update").exit_code == 0
    result = invoke("unwrap", "--workflow-key", "order_update", cwd=locked)
    assert result.exit_code == 0, explain(result)
    assert json.loads(text(locked, "order_update")) == json.loads(original)


def test_a_workflow_takes_a_duplicate_guard_or_a_lock_not_both(
    locked: Path, invoke: Invoke
) -> None:
    assert add_lock(invoke, locked, "order_update", "orders").exit_code == 0
    before = text(locked, "order_update")
    refused = add_dedupe(invoke, locked, "order_update")
    assert refused.exit_code != 0
    assert "already has a lock; it cannot take a duplicate guard too" in refused.output
    assert "Hint:" in refused.output and text(locked, "order_update") == before
    assert add_dedupe(invoke, locked, "code_heavy").exit_code == 0
    refused = add_lock(invoke, locked, "code_heavy", "invoices")
    assert "already has a duplicate guard; it cannot take a lock too" in refused.output


def test_add_dedupe_needs_the_cleanup_handler(workspace: Path, invoke: Invoke) -> None:
    shutil.copy(CORPUS / "order_update.template.json", workspace / "workflows")
    result = add_dedupe(invoke, workspace, "order_update")
    assert result.exit_code != 0
    assert "create-lock --include-error-handler" in result.output


def test_a_broken_key_expression_is_named_as_the_key_and_changes_nothing(
    locked: Path, invoke: Invoke
) -> None:
    before = text(locked, "order_update")
    result = invoke(
        "add-dedupe", "--workflow-key", "order_update", "--key-expression", "={{ $json.id }",
        "--window-seconds", "60", cwd=locked,
    )  # fmt: skip
    assert result.exit_code == 3, explain(result)
    assert "Error: unbalanced '{{' in key expression '={{ $json.id }'" in result.output
    assert "Hint:" in result.output and "Traceback" not in result.output
    assert text(locked, "order_update") == before
