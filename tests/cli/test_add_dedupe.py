"""`n8nlock add-dedupe`: a duplicate guard is the lock engine on the key's own scope (its nodes
named "Dedupe …"), with on_busy skip (or error) and a window; it composes with add-rate-limit
and add-lock-to-workflow, in front of both."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.plans.wrap_plans import dedupe_scope
from n8n_lockkit.rewrite.wrapping.nodes import role_of
from n8n_lockkit.rewrite.wrapping.unwrap import read_configs, read_guard
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
    assert read_configs(wrapped) == (None, None)
    lock = read_guard(wrapped)
    assert lock is not None
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
    lock = read_guard(workflow(locked, "order_update"))
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
    targets = {c["node"] for c in links["Dedupe Restore"]["main"][0]}
    assert {"Rate Limit Context", "Rate Limit Restore"} & targets, targets
    lock, rate = read_configs(wrapped)
    guard = read_guard(wrapped)
    assert lock is None and guard is not None and guard.dedupe and rate is not None


def test_unwrap_takes_the_guard_off_exactly(locked: Path, invoke: Invoke) -> None:
    original = text(locked, "order_update")
    assert add_dedupe(invoke, locked, "order_update").exit_code == 0
    result = invoke("unwrap", "--workflow-key", "order_update", cwd=locked)
    assert result.exit_code == 0, explain(result)
    assert json.loads(text(locked, "order_update")) == json.loads(original)


def chain_after(wrapped: dict[str, object], node: str) -> set[str]:
    links = wrapped["connections"]
    assert isinstance(links, dict)
    return {str(c["node"]) for c in links[node]["main"][0]}


@pytest.mark.parametrize("guard_first", [True, False])
def test_a_guard_and_a_lock_compose_guard_then_rate_limit_then_lock_in_either_order_of_commands(
    locked: Path, invoke: Invoke, guard_first: bool
) -> None:
    original = text(locked, "order_update")
    steps: list[Callable[[], Result]] = [
        lambda: add_dedupe(invoke, locked, "order_update"),
        lambda: add_lock(invoke, locked, "order_update", "orders", "--on-busy", "skip"),
        lambda: add_rate_limit(invoke, locked, "order_update", "api"),
    ]
    for step in steps if guard_first else steps[::-1]:
        result = step()
        assert result.exit_code == 0, explain(result)
    wrapped = workflow(locked, "order_update")
    # Trigger → the guard → (its restore) the rate limit → (its restore) the lock → the body.
    trigger = next(n for n in graph.nodes(wrapped) if graph.is_trigger(n))
    assert chain_after(wrapped, trigger["name"]) == {"Dedupe Context", "Dedupe Restore"}
    assert {"Rate Limit Context", "Rate Limit Restore"} <= chain_after(wrapped, "Dedupe Restore")
    assert {"Lock Context", "Lock Restore"} <= chain_after(wrapped, "Rate Limit Restore")
    lock, rate = read_configs(wrapped)
    guard = read_guard(wrapped)
    assert lock is not None and lock.scope == "orders" and not lock.dedupe
    assert guard is not None and guard.dedupe_window_seconds == 600 and rate is not None
    # Released innermost first: the lock only when this execution took it, then the guard.
    roles = {str(n["name"]): role_of(n) for n in graph.nodes(wrapped)}
    assert roles["Lock Held?"] == "lock-held"
    assert "Lock Release Verdict" in chain_after(wrapped, "Lock Held?")
    assert roles["Dedupe Release"] == "dedupe-release"
    again = text(locked, "order_update")
    for step in steps:
        assert step().exit_code == 0
    assert text(locked, "order_update") == again
    for part in ("dedupe", "lock", "rate-limit"):
        result = invoke("unwrap", "--workflow-key", "order_update", "--only", part, cwd=locked)
        assert result.exit_code == 0, explain(result)
    assert json.loads(text(locked, "order_update")) == json.loads(original)


def test_the_guards_done_mark_is_dropped_when_a_later_step_turned_the_call_away(
    locked: Path, invoke: Invoke
) -> None:
    """A call the rate limit denies (passthrough) ends without the body: its key must stay
    free for the retry, so the guard's release writes no done mark unless the body began."""
    assert add_dedupe(invoke, locked, "order_update").exit_code == 0
    alone = workflow(locked, "order_update")
    verdict = next(n for n in graph.nodes(alone) if n["name"] == "Dedupe Release Verdict")
    assert "dedupe: null" not in verdict["parameters"]["jsonOutput"]
    assert add_rate_limit(invoke, locked, "order_update", "api").exit_code == 0
    wrapped = workflow(locked, "order_update")
    verdict = next(n for n in graph.nodes(wrapped) if n["name"] == "Dedupe Release Verdict")
    # …the body's first node ran (not Rate Limit Restore: n8n runs a Merge without output
    # at the end of an execution that never fed it).
    assert (
        '$("Mark Start").isExecuted) ? d : { ...d, dedupe: null }'
        in (verdict["parameters"]["jsonOutput"])
    )
    output = next(n for n in graph.nodes(wrapped) if n["name"] == "Lock Output")
    assert '"Rate Limit Denied"' in output["parameters"]["jsCode"]


def test_unwrap_only_a_part_the_workflow_lacks_changes_nothing_and_says_what_it_has(
    locked: Path, invoke: Invoke
) -> None:
    assert add_dedupe(invoke, locked, "order_update").exit_code == 0
    before = text(locked, "order_update")
    result = invoke("unwrap", "--workflow-key", "order_update", "--only", "lock", cwd=locked)
    assert result.exit_code == 0, explain(result)
    assert "has no lock to take off; it has: --only dedupe" in result.output
    assert text(locked, "order_update") == before


def test_a_guard_refuses_the_sub_workflow_lock(locked: Path, invoke: Invoke) -> None:
    assert add_dedupe(invoke, locked, "order_update").exit_code == 0
    before = text(locked, "order_update")
    refused = add_lock(invoke, locked, "order_update", "orders", "--via-subworkflow")
    assert refused.exit_code != 0
    assert "composes with the inline lock, not with --via-subworkflow" in refused.output
    assert "Hint:" in refused.output and text(locked, "order_update") == before


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


def test_a_guard_made_before_it_had_its_own_chain_reads_back_upgrades_and_unwraps(
    locked: Path, invoke: Invoke
) -> None:
    """tests/fixtures/upgrade/guard_0fc8367.template.json is order_update guarded by
    n8nlock at 0fc8367, when a guard was the "Lock …" chain with the guard's settings."""
    original = text(locked, "order_update")
    legacy = (CORPUS.parent / "fixtures" / "upgrade" / "guard_0fc8367.template.json").read_text()
    (locked / "workflows" / "order_update.template.json").write_text(legacy)
    guard = read_guard(json.loads(legacy))
    assert guard is not None and guard.dedupe_window_seconds == 600
    assert read_configs(json.loads(legacy)) == (None, None)
    assert add_dedupe(invoke, locked, "order_update").exit_code == 0
    renamed = workflow(locked, "order_update")
    names = {str(n["name"]) for n in graph.nodes(renamed)}
    assert "Dedupe Context" in names and "Lock Context" not in names
    assert read_guard(renamed) == guard
    (locked / "workflows" / "order_update.template.json").write_text(legacy)
    result = invoke("unwrap", "--workflow-key", "order_update", cwd=locked)
    assert result.exit_code == 0, explain(result)
    assert json.loads(text(locked, "order_update")) == json.loads(original)
