"""`n8nlock push` on a live instance: what goes live, what fails alone, what is not resent.

Each test builds its own workspace (primitives with the cleanup handler, plus the workflows
it needs) against the session's real n8n, once per version the suite runs with.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from click.testing import CliRunner, Result

from n8n_lockkit.cli import main
from n8n_lockkit.workspace.envconfig import load_env
from n8n_lockkit.workspace.layout import Workspace
from testbed.client import N8nClient
from testbed.endpoints import N8nInstance
from tests.e2e.lockbed import (
    API_KEY_VARIABLE,
    held_lanes,
    init_workspace,
    run_cli,
    tickets_drawn,
    wait_until,
)

PRIMITIVES = ("lock_acquisition", "lock_release", "error_handler_lock_cleanup")


@pytest.fixture
def root(n8n: N8nInstance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace with the lock primitives and the cleanup handler, nothing pushed yet."""
    monkeypatch.setenv(API_KEY_VARIABLE, n8n.api_key)
    workspace = init_workspace(tmp_path / "ws", n8n, [])
    run_cli(workspace, "create-lock", "--include-error-handler")
    return workspace


def n8nlock(root: Path, *args: str) -> Result:
    """Run the CLI without asserting success: some of these pushes must fail."""
    return CliRunner().invoke(main, ["--workspace", str(root), *args])


def explain(result: Result) -> str:
    return f"exit {result.exit_code}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def ids(root: Path) -> dict[str, str]:
    workflows = load_env(Workspace(root), "e2e").data["workflows"]
    return {key: str(entry["id"]) for key, entry in workflows.items()}


def stored(n8n_client: N8nClient, root: Path, key: str) -> dict[str, Any]:
    workflow: dict[str, Any] = n8n_client.api("GET", f"/workflows/{ids(root)[key]}")
    return workflow


def is_1x(n8n: N8nInstance) -> bool:
    return n8n.version.startswith("1.")


def write(root: Path, key: str, workflow: dict[str, Any]) -> None:
    (root / "workflows" / f"{key}.template.json").write_text(json.dumps(workflow, indent=2))


def node(name: str, node_type: str, version: float, **parameters: Any) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, name)),
        "name": name,
        "type": node_type,
        "typeVersion": version,
        "position": [0, 0],
        "parameters": parameters,
    }


def orders(root: Path, path: str, answer: str = "v1") -> None:
    """A webhook that answers with the last node, wrapped in the lock with cleanup on error."""
    webhook = node(
        "Webhook",
        "n8n-nodes-base.webhook",
        2,
        path=path,
        httpMethod="POST",
        responseMode="lastNode",
        options={},
    )
    webhook["webhookId"] = str(uuid.uuid5(uuid.NAMESPACE_URL, path))
    code = f"return [{{json: {{answer: '{answer}', order: $json.body.order}}}}];"
    workflow = {
        "name": f"orders {path}",
        "nodes": [webhook, node("Answer", "n8n-nodes-base.code", 2, jsCode=code)],
        "connections": {"Webhook": {"main": [[{"node": "Answer", "type": "main", "index": 0}]]}},
        "settings": {"executionOrder": "v1"},
    }
    write(root, "orders", workflow)
    run_cli(
        root,
        "add-lock-to-workflow",
        "--workflow-key",
        "orders",
        "--scope-expression",
        "={{ 'order-' + $json.body.order }}",
        "--ttl-seconds",
        "60",
        "--max-wait-seconds",
        "30",
        "--lock-on-error",
        "--via-subworkflow",  # so that it references the primitives push must publish
    )


def outcomes(result: Result) -> dict[str, dict[str, Any]]:
    return {w["key"]: w for w in json.loads(result.stdout)["workflows"]}


def test_a_plain_push_creates_every_workflow_unpublished(
    root: Path, n8n_client: N8nClient, unique_name: str
) -> None:
    orders(root, unique_name)
    result = n8nlock(root, "push")
    assert result.exit_code == 0, explain(result)
    for key in (*PRIMITIVES, "orders"):
        assert stored(n8n_client, root, key)["active"] is False, key
    assert not n8n_client.webhook_registered(unique_name, "POST")


def test_activate_key_after_no_activate_publishes_what_it_references_and_it_runs(
    root: Path,
    n8n: N8nInstance,
    n8n_client: N8nClient,
    redis_client: redis.Redis,
    unique_name: str,
) -> None:
    orders(root, unique_name)
    assert n8nlock(root, "push", "--no-activate").exit_code == 0
    result = n8nlock(root, "push", "--activate", "orders")
    assert result.exit_code == 0, explain(result)
    assert stored(n8n_client, root, "orders")["active"] is True
    for key in PRIMITIVES:
        # n8n 2.x runs only published sub-workflows; 1.x runs them as they are and refuses
        # to activate some (an Error Trigger, a version 1 Execute Workflow Trigger).
        tolerated = f"skip  {key}: this n8n runs it without publishing" in result.stderr
        assert stored(n8n_client, root, key)["active"] or (is_1x(n8n) and tolerated), key
    answer = n8n_client.call_webhook(unique_name, "POST", json={"order": unique_name})
    assert (answer.status_code, answer.json()) == (200, {"answer": "v1", "order": unique_name})
    assert tickets_drawn(redis_client, f"order-{unique_name}") == 1  # acquired,
    assert held_lanes(redis_client, f"order-{unique_name}") == []  # then released
    again = n8nlock(root, "push", "--activate", "orders")
    assert again.exit_code == 0, explain(again)
    assert again.stderr == (
        f" identical  orders ({ids(root)['orders']})\n1 workflow(s): 1 identical, 0 published\n"
    )


def test_a_published_workflow_stays_published_across_an_update(
    root: Path, n8n_client: N8nClient, unique_name: str
) -> None:
    orders(root, unique_name)
    assert n8nlock(root, "push", "--activate").exit_code == 0
    orders(root, unique_name, answer="v2")
    result = n8nlock(root, "push")
    assert result.exit_code == 0, explain(result)
    assert f"update  orders ({ids(root)['orders']})" in result.stderr
    live = stored(n8n_client, root, "orders")
    assert live["active"] is True
    assert live["activeVersionId"] == live["versionId"]

    def answers_v2() -> bool:
        answer = n8n_client.call_webhook(unique_name, "POST", json={"order": unique_name})
        return bool(answer.json() == {"answer": "v2", "order": unique_name})

    # n8n 2.x swaps the live version through an outbox, a moment after the update returns.
    wait_until(answers_v2, timeout=15, what="the updated version answers")


def test_a_refused_workflow_does_not_stop_the_others(
    root: Path, n8n: N8nInstance, n8n_client: N8nClient, unique_name: str
) -> None:
    orders(root, unique_name)
    manual = node("Start", "n8n-nodes-base.manualTrigger", 1)
    # The API refuses a null errorWorkflow (both versions), so this one is never created.
    write(
        root, "broken", {"nodes": [manual], "connections": {}, "settings": {"errorWorkflow": None}}
    )
    reference = {"__rl": True, "mode": "id", "value": "{{@:env:workflows.broken.id}}"}
    calls_broken = node("Call broken", "n8n-nodes-base.executeWorkflow", 1.2, workflowId=reference)
    write(root, "calls_broken", {"nodes": [manual, calls_broken], "connections": {}})
    # Saved, but not published: 2.x wants the Mattermost credential, 1.x a valid cron.
    every = node(
        "Every",
        "n8n-nodes-base.scheduleTrigger",
        1.2,
        rule={"interval": [{"field": "cronExpression", "expression": "not a cron"}]},
    )
    post = node("Post", "n8n-nodes-base.mattermost", 1, channelId="x", message="hi")
    write(
        root,
        "unpublishable",
        {
            "nodes": [every, post],
            "connections": {"Every": {"main": [[{"node": "Post", "type": "main", "index": 0}]]}},
        },
    )
    result = n8nlock(root, "push", "--activate", "-o", "json")
    assert result.exit_code == 4, explain(result)
    report = outcomes(result)
    assert report["broken"]["status"] == "failed"
    assert report["broken"]["error"].startswith("not created: request/body/settings/errorWorkflow")
    assert report["calls_broken"]["status"] == "skipped"
    assert report["calls_broken"]["error"] == "it references broken, which failed"
    assert report["unpublishable"]["status"] == "failed"
    assert report["unpublishable"]["error"].startswith("created, not published: ")
    assert report["unpublishable"]["id"] == ids(root)["unpublishable"] != ""
    assert stored(n8n_client, root, "unpublishable")["active"] is False
    assert report["orders"]["status"] == "ok" and report["orders"]["published"] is True
    assert n8n_client.webhook_registered(unique_name, "POST")
    assert "broken" not in ids(root) and "calls_broken" not in ids(root)
    assert result.stderr.splitlines()[-2].startswith(
        "Error: 2 of 7 workflow(s) failed: broken, unpublishable; 1 skipped: calls_broken"
    ), explain(result)
    assert result.stderr.count("Hint:") == 1


def test_what_n8n_rewrites_on_save_does_not_make_the_next_push_an_update(
    root: Path, n8n_client: N8nClient, unique_name: str
) -> None:
    credential = {"accessToken": "t", "baseUrl": "http://mattermost.invalid"}
    real = f"Mattermost {unique_name}"
    n8n_client.api(
        "POST", "/credentials", {"name": real, "type": "mattermostApi", "data": credential}
    )
    posts = [
        ("Unknown name", "No such account"),  # old style, nothing of that name
        ("Unknown name again", "No such account"),
        ("Known name", real),  # old style, resolved to the credential's id
        ("Foreign id", {"id": "from-another-instance", "name": real}),
        ("Null id", {"id": None, "name": "No such account"}),
    ]
    nodes = [node("Start", "n8n-nodes-base.manualTrigger", 1)]
    for name, reference in posts:
        post = node(name, "n8n-nodes-base.mattermost", 1, channelId="x", message="hi")
        post["credentials"] = {"mattermostApi": reference}
        nodes.append(post)
    wait = node("Wait", "n8n-nodes-base.wait", 1.1, amount=1, unit="seconds")
    wait["webhookId"] = ""  # n8n mints one, anew on every save
    nodes.append(wait)
    settings = {
        "executionOrder": "v1",
        "timezone": "DEFAULT",
        "errorWorkflow": "DEFAULT",
        "executionTimeout": -1,
    }
    workflow = {"nodes": nodes, "connections": {}, "settings": settings}
    write(root, "rewrites", workflow)
    assert n8nlock(root, "push", "rewrites").exit_code == 0
    wait["position"] = [400, 0]  # an update: n8n drops settings left at their default then
    write(root, "rewrites", workflow)
    updated = n8nlock(root, "push", "rewrites")
    assert updated.exit_code == 0 and "update  rewrites" in updated.stderr, explain(updated)
    before = stored(n8n_client, root, "rewrites")
    result = n8nlock(root, "push", "rewrites")
    assert result.exit_code == 0, explain(result)
    assert f"identical  rewrites ({ids(root)['rewrites']})" in result.stderr
    after = stored(n8n_client, root, "rewrites")
    assert (after["versionId"], after["updatedAt"]) == (before["versionId"], before["updatedAt"])


def test_a_schedule_trigger_s_state_is_neither_compared_nor_reset(
    root: Path, n8n_client: N8nClient
) -> None:
    every = node(
        "Every",
        "n8n-nodes-base.scheduleTrigger",
        1.2,
        rule={"interval": [{"field": "seconds", "secondsInterval": 1}]},
    )
    # "staticData": null as exports have it; n8n fills it in once the trigger runs.
    workflow: dict[str, Any] = {"nodes": [every], "connections": {}, "staticData": None}
    write(root, "ticker", workflow)
    assert n8nlock(root, "push", "--activate", "ticker").exit_code == 0
    try:
        wait_until(
            lambda: bool(stored(n8n_client, root, "ticker")["staticData"]),
            timeout=15,
            what="n8n keeps the trigger's state",
        )
        state = stored(n8n_client, root, "ticker")["staticData"]
        again = n8nlock(root, "push", "ticker")
        assert "identical  ticker" in again.stderr, explain(again)
        every["position"] = [300, 0]
        write(root, "ticker", workflow)
        updated = n8nlock(root, "push", "ticker")
        assert "update  ticker" in updated.stderr, explain(updated)
        assert stored(n8n_client, root, "ticker")["staticData"] == state
    finally:
        n8n_client.api("POST", f"/workflows/{ids(root)['ticker']}/deactivate")
