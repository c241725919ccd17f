"""Hints are true: each names only commands and options that exist for what was typed.

Every hint a CLI test drives is checked against the command typed (the `invoke` fixture does
it, through tests/hints.py); here, every hint text in the package is checked as written, and
the hints issue 36 found untrue are driven one by one.
"""

from __future__ import annotations

import ast
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result

from n8n_lockkit.cli import main
from tests.conftest import Invoke, explain, snapshot
from tests.hints import options_of, untrue_claims

PACKAGE = Path(__file__).parent.parent.parent / "n8n_lockkit"
CORPUS = Path(__file__).parent.parent / "corpus"
SCOPE = "={{ 'order-' + $json.body.orderId }}"


def _texts(node: ast.expr) -> Iterator[str]:
    """The texts an expression can give, each value it interpolates as `X`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.JoinedStr):
        yield "".join(
            str(part.value) if isinstance(part, ast.Constant) else "X" for part in node.values
        )
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        for left in _texts(node.left):
            for right in _texts(node.right):
                yield left + right
    elif isinstance(node, ast.IfExp):
        yield from _texts(node.body)
        yield from _texts(node.orelse)


def hints_in_package() -> list[tuple[str, str]]:
    """(where, text) of every `hint=` the package passes to an error."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "hint":
                where = f"{path.relative_to(PACKAGE.parent)}:{node.value.lineno}"
                found += [(where, text) for text in _texts(node.value)]
    return found


HINTS = hints_in_package()
EVERY_OPTION = set().union(*(options_of(c) for c in main.commands.values()))


def test_the_package_has_hints_to_check() -> None:
    assert len(HINTS) > 80


@pytest.mark.parametrize(("where", "hint"), HINTS, ids=[w for w, _ in HINTS])
def test_every_command_line_a_hint_quotes_exists_with_its_options(where: str, hint: str) -> None:
    # The command the hint is shown for is checked where a test drives it (conftest); as
    # written, a bare option must at least be an option of some command.
    problems = [p for p in untrue_claims(hint, ["init"]) if "has no such option" not in p]
    problems += [
        f"{option}: no command has it"
        for option in untrue_claims(hint, ["init"])
        if "has no such option" in option and option.split(":")[0] not in EVERY_OPTION
    ]
    assert problems == []


@pytest.fixture
def primed(workspace: Path, invoke: Invoke) -> Path:
    result = invoke("create-lock", "--include-error-handler", "--include-renew", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    shutil.copy(CORPUS / "order_update.template.json", workspace / "workflows")
    return workspace


def lock_order_update(invoke: Invoke, root: Path, *flags: str) -> Result:
    return invoke("add-lock-to-workflow", "--workflow-key", "order_update",
                  "--scope-expression", SCOPE, *flags, cwd=root)  # fmt: skip


def guard_order_update(invoke: Invoke, root: Path) -> Result:
    return invoke("add-dedupe", "--workflow-key", "order_update", "--key-expression",
                  "={{ $json.body.orderId }}", "--window-seconds", "60", cwd=root)  # fmt: skip


def with_error_workflow(root: Path, key: str, error_workflow: str) -> None:
    path = root / "workflows" / f"{key}.template.json"
    workflow = json.loads(path.read_text())
    workflow.setdefault("settings", {})["errorWorkflow"] = error_workflow
    path.write_text(json.dumps(workflow, indent=2))


def test_add_dedupe_on_a_workflow_with_its_own_error_workflow_names_no_lock_on_error(
    primed: Path, invoke: Invoke
) -> None:
    with_error_workflow(primed, "order_update", "alerts123")
    before = snapshot(primed)
    result = guard_order_update(invoke, primed)
    assert result.exit_code == 3, explain(result)
    assert snapshot(primed) == before
    assert result.stderr.splitlines() == [
        "Error: the workflow already names error workflow 'alerts123', and the duplicate guard "
        "needs the cleanup handler there to free a failed execution's key; n8n allows one "
        "error workflow",
        "Hint: run the cleanup in your own error workflow "
        "(docs/safety.md#your-own-error-workflow), then run this again",
    ]


def test_add_lock_on_error_with_its_own_error_workflow_offers_both_ways(
    primed: Path, invoke: Invoke
) -> None:
    with_error_workflow(primed, "order_update", "alerts123")
    result = lock_order_update(invoke, primed, "--lock-on-error")
    assert result.exit_code == 3, explain(result)
    assert result.stderr.splitlines()[1] == (
        "Hint: drop --lock-on-error (the lock then heals by TTL), or run the cleanup in your "
        "own error workflow (docs/safety.md#your-own-error-workflow)"
    )


def test_the_page_the_error_workflow_hint_points_to_exists() -> None:
    page = (PACKAGE.parent / "docs" / "safety.md").read_text()
    assert "\n## Your own error workflow\n" in page


def own_error_workflow(root: Path, with_cleanup: bool) -> None:
    """workflows/alerts.json: an error workflow of the user's, downloaded from n8n (id
    alerts123), that runs the cleanup's nodes beside its own (or not)."""
    handler = json.loads((root / "workflows/error_handler_lock_cleanup.template.json").read_text())
    trigger = handler["nodes"][0]
    nodes = handler["nodes"] if with_cleanup else [trigger]
    connections = handler["connections"] if with_cleanup else {}
    alert = {"name": "Alert", "type": "n8n-nodes-base.noOp", "typeVersion": 1, "position": [0, 300]}
    workflow = {
        "id": "alerts123",
        "name": "Alerts",
        "nodes": [*nodes, alert],
        "connections": connections,
    }
    (root / "workflows" / "alerts.json").write_text(json.dumps(workflow, indent=2))


@pytest.mark.parametrize(
    "reference", ["alerts123", "{{@:env:workflows.alerts.id}}"], ids=["n8n id", "placeholder"]
)
def test_an_own_error_workflow_that_runs_the_cleanup_is_kept_by_the_guard(
    primed: Path, invoke: Invoke, reference: str
) -> None:
    own_error_workflow(primed, with_cleanup=True)
    with_error_workflow(primed, "order_update", reference)
    result = guard_order_update(invoke, primed)
    assert result.exit_code == 0, explain(result)
    wrapped = json.loads((primed / "workflows/order_update.template.json").read_text())
    assert wrapped["settings"]["errorWorkflow"] == reference
    again = guard_order_update(invoke, primed)
    assert again.exit_code == 0, explain(again)
    assert "identical  workflows/order_update.template.json" in again.stderr


def test_an_own_error_workflow_without_the_cleanup_is_still_refused(
    primed: Path, invoke: Invoke
) -> None:
    own_error_workflow(primed, with_cleanup=False)
    with_error_workflow(primed, "order_update", "alerts123")
    result = guard_order_update(invoke, primed)
    assert result.exit_code == 3, explain(result)


def test_renew_before_a_trigger_says_it_is_a_trigger_and_lists_only_body_nodes(
    primed: Path, invoke: Invoke
) -> None:
    result = lock_order_update(invoke, primed, "--renew-before", "Webhook")
    assert result.exit_code == 3, explain(result)
    error, hint = result.stderr.splitlines()
    assert error == (
        "Error: --renew-before 'Webhook': that is a trigger; a renewal goes before a node of "
        "the body, which the lock guards"
    )
    assert hint.startswith("Hint: name a node of the body (the body's nodes: ")
    assert "'Webhook'" not in hint


def test_renew_before_an_unknown_node_says_there_is_none(primed: Path, invoke: Invoke) -> None:
    result = lock_order_update(invoke, primed, "--renew-before", "Nope")
    assert result.exit_code == 3, explain(result)
    assert result.stderr.startswith(
        "Error: --renew-before 'Nope': the workflow has no node of that name\n"
    )


def test_outside_a_workspace_the_hint_names_a_command_line_that_works(
    workspace: Path, tmp_path: Path, invoke: Invoke
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = invoke("validate", cwd=elsewhere)
    assert result.exit_code == 3, explain(result)
    assert result.stderr.splitlines()[1] == (
        "Hint: run `n8nlock init` to create one here, or pass --workspace PATH"
    )
    for argv in (["validate", "--workspace", workspace], ["--workspace", workspace, "validate"]):
        followed = invoke(*argv, cwd=elsewhere)
        assert followed.exit_code == 0, explain(followed)
        assert followed.stderr == "0 file(s) checked, 0 problem(s): all good\n"


def test_an_empty_key_expression_hint_names_the_option_add_dedupe_has(
    primed: Path, invoke: Invoke
) -> None:
    result = invoke("add-dedupe", "--workflow-key", "order_update", "--key-expression", "=",
                    "--window-seconds", "60", cwd=primed)  # fmt: skip
    assert result.exit_code == 3, explain(result)
    assert result.stderr.splitlines() == [
        "Error: the key expression is empty after '='",
        "Hint: e.g. --key-expression \"={{ 'order-' + $json.body.id }}\"",
    ]
