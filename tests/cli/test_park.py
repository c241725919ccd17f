"""`add-lock-to-workflow --park`: waiters that hold no n8n capacity (issue 33). What it writes,
that it is a new lock's default wherever it works, that re-runs keep it, that `unwrap` gives
the file back, and where it is refused. That parking
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
    assert _lock(invoke, parked, "schedule_sync", "--no-park").exit_code == 0
    polling = snapshot(parked)
    assert _lock(invoke, parked, "schedule_sync", "--park").exit_code == 0
    result = _lock(invoke, parked, "schedule_sync", "--no-park")
    assert result.exit_code == 0, explain(result)
    assert snapshot(parked) == polling
    assert "Lock Park" not in _nodes(parked, "schedule_sync")


def test_no_park_gives_a_last_node_webhook_back_its_own_answer(
    parked: Path, invoke: Invoke
) -> None:
    assert _lock(invoke, parked, "order_update", "--no-park").exit_code == 0
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


@pytest.mark.parametrize("key", ["schedule_sync", "webhook_respond_node", "order_update"])
def test_a_new_lock_parks_its_waiters_without_being_told(
    parked: Path, invoke: Invoke, key: str
) -> None:
    """Issue 33: a line longer than n8n's concurrency limit must not stop the rest of n8n, so
    parking is the default, and the same file as --park."""
    result = _lock(invoke, parked, key)
    assert result.exit_code == 0, explain(result)
    assert "wait awake" not in result.output
    by_default = snapshot(parked)
    assert _park_flag(parked, key)
    assert _lock(invoke, parked, key, "--no-park").exit_code == 0
    assert not _park_flag(parked, key)
    assert _lock(invoke, parked, key).exit_code == 0  # a re-run keeps what the lock has
    assert not _park_flag(parked, key)
    assert _lock(invoke, parked, key, "--park").exit_code == 0
    assert snapshot(parked) == by_default


def test_a_sub_workflow_lock_or_one_whose_callers_do_not_wait_does_not_park(
    parked: Path, invoke: Invoke
) -> None:
    sub = _lock(invoke, parked, "schedule_sync", "--via-subworkflow")
    assert sub.exit_code == 0, explain(sub)
    assert not _park_flag(parked, "schedule_sync")
    assert "Lock Park" not in _nodes(parked, "schedule_sync")
    back = _lock(invoke, parked, "schedule_sync", "--no-via-subworkflow")  # the form changes:
    assert back.exit_code == 0, explain(back)
    assert _park_flag(parked, "schedule_sync")  # ...the default way of waiting comes with it
    skip = _lock(invoke, parked, "webhook_respond_node", "--on-busy", "skip")
    assert skip.exit_code == 0, explain(skip)
    assert not _park_flag(parked, "webhook_respond_node")


def _queue_mode(root: Path) -> None:
    env = root / "envs" / "dev.yml"
    env.write_text(env.read_text().replace("\nn8n:\n", "\nn8n:\n  queueMode: true\n", 1))


def test_in_a_queue_mode_env_a_webhook_waiting_for_its_answer_keeps_its_waiters_awake(
    parked: Path, invoke: Invoke
) -> None:
    """n8n answers a parked webhook caller with an empty 200 in queue mode: a webhook that
    waits for its answer keeps its waiters awake there (and the plan says so), a Schedule
    trigger parks, and validate --env has nothing to say about either."""
    _queue_mode(parked)
    webhook = _lock(invoke, parked, "webhook_respond_node")
    assert webhook.exit_code == 0, explain(webhook)
    assert not _park_flag(parked, "webhook_respond_node")
    assert "waiters wait awake: env dev runs n8n in queue mode" in webhook.output
    schedule = _lock(invoke, parked, "schedule_sync")
    assert schedule.exit_code == 0, explain(schedule)
    assert _park_flag(parked, "schedule_sync")
    assert "wait awake" not in schedule.output
    result = invoke("validate", "--env", "dev", cwd=parked)
    assert "park-webhook-queue-mode" not in result.output


def test_a_last_node_answer_lock_respond_cannot_give_keeps_the_waiters_awake(
    parked: Path, invoke: Invoke
) -> None:
    """A binary "last node" answer cannot be given by Lock Respond: --park refuses it, and a
    new lock without the flag waits awake and says why instead of refusing the wrap."""
    path = parked / "workflows" / "order_update.template.json"
    workflow = json.loads(path.read_text())
    webhook = next(n for n in workflow["nodes"] if n["name"] == "Webhook")
    webhook["parameters"]["responseData"] = "firstEntryBinary"
    path.write_text(json.dumps(workflow, indent=2) + "\n")
    refused = _lock(invoke, parked, "order_update", "--park")
    assert refused.exit_code == 3, explain(refused)
    result = _lock(invoke, parked, "order_update")
    assert result.exit_code == 0, explain(result)
    assert not _park_flag(parked, "order_update")
    assert "waiters wait awake" in result.output and "firstEntryBinary" in result.output
