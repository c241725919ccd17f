"""`n8nlock unwrap`: what add-lock-to-workflow and add-rate-limit added comes off again, the
notes too, and the file is the one the user had."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.test_add_lock import CORPUS, ORDER_SCOPE, add_lock, add_rate_limit, node_names
from tests.conftest import Invoke, explain


@pytest.fixture
def wrapped(workspace: Path, invoke: Invoke) -> Path:
    """order_update with a lock and a rate limit; the original kept beside it."""
    shutil.copy(CORPUS / "order_update.template.json", workspace / "workflows")
    assert add_rate_limit(invoke, workspace, "order_update", "api").exit_code == 0
    assert add_lock(invoke, workspace, "order_update", ORDER_SCOPE).exit_code == 0
    return workspace


def text(root: Path) -> str:
    return (root / "workflows" / "order_update.template.json").read_text()


def test_unwrap_gives_back_the_file_as_it_was(wrapped: Path, invoke: Invoke) -> None:
    result = invoke("unwrap", "--workflow-key", "order_update", cwd=wrapped)
    assert result.exit_code == 0, explain(result)
    assert json.loads(text(wrapped)) == json.loads(
        (CORPUS / "order_update.template.json").read_text()
    )


def test_unwrap_only_the_lock_keeps_the_rate_limit_and_its_note(
    wrapped: Path, invoke: Invoke, workspace: Path
) -> None:
    result = invoke("unwrap", "--workflow-key", "order_update", "--only", "lock", cwd=wrapped)
    assert result.exit_code == 0, explain(result)
    names = node_names(wrapped, "order_update")
    assert not [n for n in names if n.startswith("Lock ") or n == "n8nlock · Lock"]
    assert "Rate Limit Context" in names and "n8nlock · Rate Limit" in names
    # the same file as a rate limit added alone
    alone = wrapped.parent / "alone"
    shutil.copytree(wrapped, alone)
    shutil.copy(CORPUS / "order_update.template.json", alone / "workflows")
    assert add_rate_limit(invoke, alone, "order_update", "api").exit_code == 0
    assert text(wrapped) == text(alone)


def test_unwrap_only_the_rate_limit_keeps_the_lock(wrapped: Path, invoke: Invoke) -> None:
    result = invoke("unwrap", "--workflow-key", "order_update", "--only", "rate-limit", cwd=wrapped)
    assert result.exit_code == 0, explain(result)
    names = node_names(wrapped, "order_update")
    assert "Lock Context" in names and not [n for n in names if n.startswith("Rate Limit")]


def test_unwrap_twice_changes_nothing_the_second_time(wrapped: Path, invoke: Invoke) -> None:
    assert invoke("unwrap", "--workflow-key", "order_update", cwd=wrapped).exit_code == 0
    before = text(wrapped)
    again = invoke("unwrap", "--workflow-key", "order_update", "-o", "json", cwd=wrapped)
    assert again.exit_code == 0, explain(again)
    assert text(wrapped) == before
    assert "nothing to remove" in again.output


def test_unwrap_dry_run_writes_nothing(wrapped: Path, invoke: Invoke) -> None:
    before = text(wrapped)
    result = invoke("unwrap", "--workflow-key", "order_update", "--dry-run", cwd=wrapped)
    assert result.exit_code == 0, explain(result)
    assert text(wrapped) == before
    assert "order_update.template.json" in result.output
