"""`add-lock-to-workflow --park`: waiters that hold no n8n capacity (issue 33). What it writes,
that re-runs keep it, that `unwrap` gives the file back, and where it is refused. That parking
works is shown in a real n8n: tests/e2e/test_parking.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import Result

from n8n_lockkit.rewrite.wrapping.unwrap import read_configs
from tests.conftest import Invoke, explain, snapshot

CORPUS = Path(__file__).parent.parent / "corpus"


@pytest.fixture
def parked(workspace: Path, invoke: Invoke) -> Path:
    """A workspace with the lock's primitives and three corpus workflows, not wrapped yet."""
    result = invoke("create-lock", "--include-error-handler", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    for name in ("schedule_sync", "webhook_respond_node", "order_update"):
        shutil.copy(CORPUS / f"{name}.template.json", workspace / "workflows")
    return workspace


def _lock(invoke: Invoke, root: Path, key: str, *flags: str) -> Result:
    return invoke(
        "add-lock-to-workflow", "--workflow-key", key, "--scope-expression", "sync", *flags,
        cwd=root,
    )  # fmt: skip


def _nodes(root: Path, key: str) -> dict[str, dict[str, object]]:
    workflow = json.loads((root / "workflows" / f"{key}.template.json").read_text())
    return {str(n["name"]): n for n in workflow["nodes"]}


def _park_flag(root: Path, key: str) -> bool:
    workflow = json.loads((root / "workflows" / f"{key}.template.json").read_text())
    lock, _ = read_configs(workflow)
    assert lock is not None
    return lock.park


@pytest.mark.parametrize("key", ["schedule_sync", "webhook_respond_node"])
def test_park_adds_the_park_and_the_wake_validates_and_a_rerun_changes_nothing(
    parked: Path, invoke: Invoke, key: str
) -> None:
    result = _lock(invoke, parked, key, "--park")
    assert result.exit_code == 0, explain(result)
    nodes = _nodes(parked, key)
    park, wake = nodes["Lock Park"], nodes["Lock Wake"]
    assert park["type"] == "n8n-nodes-base.wait"
    assert park["parameters"]["resume"] == "webhook"  # type: ignore[index]
    assert park["parameters"]["limitWaitTime"] is True  # type: ignore[index]
    assert wake["type"] == "n8n-nodes-base.httpRequest"
    assert wake.get("retryOnFail") is None, "a resume sent twice could be taken twice"
    assert "$execution.resumeUrl" in json.dumps(nodes["Lock Context"]["parameters"])
    assert invoke("validate", cwd=parked).exit_code == 0
    before = snapshot(parked)
    again = _lock(invoke, parked, key)  # no --park: the lock keeps what it has
    assert again.exit_code == 0, explain(again)
    assert snapshot(parked) == before
    assert _park_flag(parked, key)


def test_no_park_takes_the_park_off_and_back_to_the_polling_lock(
    parked: Path, invoke: Invoke
) -> None:
    assert _lock(invoke, parked, "schedule_sync").exit_code == 0
    polling = snapshot(parked)
    assert _lock(invoke, parked, "schedule_sync", "--park").exit_code == 0
    result = _lock(invoke, parked, "schedule_sync", "--no-park")
    assert result.exit_code == 0, explain(result)
    assert snapshot(parked) == polling
    assert "Lock Park" not in _nodes(parked, "schedule_sync")


def test_no_park_gives_a_last_node_webhook_back_its_own_answer(
    parked: Path, invoke: Invoke
) -> None:
    assert _lock(invoke, parked, "order_update").exit_code == 0
    polling = snapshot(parked)
    assert _lock(invoke, parked, "order_update", "--park").exit_code == 0
    result = _lock(invoke, parked, "order_update", "--no-park")
    assert result.exit_code == 0, explain(result)
    assert snapshot(parked) == polling


def test_unwrap_gives_back_the_file_a_parked_lock_was_added_to(
    parked: Path, invoke: Invoke
) -> None:
    original = (parked / "workflows" / "webhook_respond_node.template.json").read_text()
    assert _lock(invoke, parked, "webhook_respond_node", "--park").exit_code == 0
    result = invoke("unwrap", "--workflow-key", "webhook_respond_node", cwd=parked)
    assert result.exit_code == 0, explain(result)
    restored = (parked / "workflows" / "webhook_respond_node.template.json").read_text()
    assert json.loads(restored) == json.loads(original)


def test_a_webhook_that_answers_with_its_last_node_is_answered_by_lock_respond_when_parked(
    parked: Path, invoke: Invoke
) -> None:
    """n8n answers a "last node" caller at once, with the Wait's items, when its execution
    parks: with --park the webhook answers through Lock Respond at the end instead, and
    unwrap gives the webhook back."""
    original = (parked / "workflows" / "order_update.template.json").read_text()
    result = _lock(invoke, parked, "order_update", "--park")
    assert result.exit_code == 0, explain(result)
    nodes = _nodes(parked, "order_update")
    assert nodes["Webhook"]["parameters"]["responseMode"] == "responseNode"  # type: ignore[index]
    assert nodes["Lock Respond"]["type"] == "n8n-nodes-base.respondToWebhook"
    assert invoke("validate", cwd=parked).exit_code == 0
    before = snapshot(parked)
    assert _lock(invoke, parked, "order_update").exit_code == 0
    assert snapshot(parked) == before
    result = invoke("unwrap", "--workflow-key", "order_update", cwd=parked)
    assert result.exit_code == 0, explain(result)
    restored = (parked / "workflows" / "order_update.template.json").read_text()
    assert json.loads(restored) == json.loads(original)


def test_park_with_via_subworkflow_is_refused(parked: Path, invoke: Invoke) -> None:
    result = _lock(invoke, parked, "schedule_sync", "--park", "--via-subworkflow")
    assert result.exit_code == 3, explain(result)
    assert "--park needs the inline lock" in result.output
