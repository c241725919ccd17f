from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from n8n_lockkit.workspace.envconfig import load_env
from n8n_lockkit.workspace.layout import Workspace
from tests.cli.fake_n8n import API_KEY, BASE, FakeN8n
from tests.conftest import Invoke, explain, snapshot

PRIMITIVES = ("lock_acquisition", "lock_release", "error_handler_lock_cleanup")


@pytest.fixture
def fake() -> FakeN8n:
    return FakeN8n()


def point_at(workspace: Path, url: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the dev env at `url` and give it the fake's API key; returns the env file."""
    env = workspace / "envs" / "dev.yml"
    env.write_text(env.read_text().replace("http://127.0.0.1:5678", url))
    monkeypatch.setenv("N8N_API_KEY", API_KEY)
    return env


@pytest.fixture
def ready(workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace with the primitives, pointing at the fake n8n with a credential linked."""
    point_at(workspace, BASE, monkeypatch)
    for args in (
        ("create-lock", "--include-error-handler"),
        ("redis-credential", "--link", "cred-9", "--name", "Redis dev"),
    ):
        result = invoke(*args, cwd=workspace)
        assert result.exit_code == 0, explain(result)
    return workspace


def recorded_ids(workspace: Path) -> dict[str, str]:
    workflows = load_env(Workspace(workspace), "dev").data["workflows"]
    return {key: entry["id"] for key, entry in workflows.items()}


def name_of(workspace: Path, key: str) -> str:
    return str(load_env(Workspace(workspace), "dev").data["workflows"][key]["name"])


def published(workspace: Path, fake: FakeN8n) -> set[str]:
    """The keys of the workflows the fake n8n has published."""
    workflows = fake.workflows
    return {
        key for key, id_ in recorded_ids(workspace).items() if workflows.get(id_, {}).get("active")
    }


def write_workflow(workspace: Path, key: str, workflow: dict[str, Any]) -> None:
    (workspace / "workflows" / f"{key}.template.json").write_text(json.dumps(workflow))


def node(name: str, node_type: str, **parameters: Any) -> dict[str, Any]:
    return {
        "name": name,
        "type": node_type,
        "typeVersion": 1,
        "position": [0, 0],
        "parameters": parameters,
    }


def calls(key: str) -> dict[str, Any]:
    """An Execute Workflow node calling the workflow `key` of this workspace."""
    reference = {"__rl": True, "mode": "id", "value": f"{{{{@:env:workflows.{key}.id}}}}"}
    return node(f"Call {key}", "n8n-nodes-base.executeWorkflow", workflowId=reference)


def caller(workspace: Path, key: str = "orders", *, trigger: str = "webhook") -> None:
    """A webhook workflow that calls lock_acquisition and names the cleanup handler."""
    start = (
        node("Webhook", "n8n-nodes-base.webhook", path=key, httpMethod="POST")
        if trigger == "webhook"
        else node("Every hour", "n8n-nodes-base.scheduleTrigger")
    )
    workflow = {
        "name": key,
        "active": True,
        "id": "old",
        "nodes": [start, calls("lock_acquisition")],
        "connections": {
            start["name"]: {
                "main": [[{"node": "Call lock_acquisition", "type": "main", "index": 0}]]
            }
        },
        "settings": {"errorWorkflow": "{{@:env:workflows.error_handler_lock_cleanup.id}}"},
    }
    write_workflow(workspace, key, workflow)


def outcomes(result_stdout: str) -> dict[str, dict[str, Any]]:
    return {w["key"]: w for w in json.loads(result_stdout)["workflows"]}


def failing_push(ready: Path, invoke: Invoke, *flags: str) -> tuple[dict[str, dict[str, Any]], str]:
    """`push FLAGS -o json`, which must exit 4: each workflow's outcome by key, and stderr."""
    result = invoke("push", *flags, "-o", "json", cwd=ready)
    assert result.exit_code == 4, explain(result)
    return outcomes(result.stdout), result.stderr


# creating, updating, recording


def test_push_creates_in_dependency_order_and_records_ids(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    caller(ready)
    result = invoke("push", cwd=ready)
    assert result.exit_code == 0, explain(result)
    created = [w["name"] for w in fake.workflows.values()]
    assert created.index("orders") == len(created) - 1
    env = (ready / "envs" / "dev.yml").read_text()
    ids = recorded_ids(ready)
    assert f"orders: {{id: {ids['orders']}, name: orders}}" in env
    assert "# static scopes that error_handler_lock_cleanup cleans" in env
    orders = fake.workflows[ids["orders"]]
    assert orders["settings"]["errorWorkflow"] == ids["error_handler_lock_cleanup"]
    assert orders["nodes"][1]["parameters"]["workflowId"]["value"] == ids["lock_acquisition"]
    assert ("POST", "/workflows") in fake.calls  # read-only keys were dropped, or n8n says 400


@pytest.mark.parametrize("major", [2, 1], ids=["n8n-2.x", "n8n-1.x"])
@pytest.mark.parametrize("flags", [(), ("--activate",)], ids=["plain", "activate"])
def test_pushing_twice_sends_no_write(
    ready: Path, invoke: Invoke, major: int, flags: tuple[str, ...]
) -> None:
    fake = FakeN8n(major)
    caller(ready)
    assert invoke("push", *flags, cwd=ready).exit_code == 0
    writes = len(fake.writes)
    result = invoke("push", *flags, cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert fake.writes[writes:] == []
    assert "4 identical" in result.stderr


@pytest.mark.parametrize("flags", [(), ("--activate",)], ids=["plain", "activate"])
def test_dry_run_sends_no_write_and_writes_no_file(
    ready: Path, invoke: Invoke, fake: FakeN8n, flags: tuple[str, ...]
) -> None:
    before = snapshot(ready)
    result = invoke("push", "--dry-run", "-o", "json", *flags, cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert fake.writes == []
    assert snapshot(ready) == before
    assert {k: w["action"] for k, w in outcomes(result.stdout).items()} == {
        "lock_acquisition": "create",
        "lock_release": "create",
        "error_handler_lock_cleanup": "create",
    }


# activation: nothing goes live unasked, what goes live gets what it references


def test_a_plain_push_publishes_nothing(ready: Path, invoke: Invoke, fake: FakeN8n) -> None:
    caller(ready)
    result = invoke("push", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert published(ready, fake) == set()
    assert [c for c in fake.calls if c[1].endswith("/activate")] == []
    assert "4 workflow(s): 4 create, 0 published" in result.stderr


def test_no_activate_is_still_accepted_and_means_the_default(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    caller(ready)
    result = invoke("push", "--no-activate", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert published(ready, fake) == set()


def test_a_published_workflow_stays_published_across_an_update(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    caller(ready)
    assert invoke("push", "--activate", cwd=ready).exit_code == 0
    orders = ready / "workflows" / "orders.template.json"
    orders.write_text(orders.read_text().replace('"path": "orders"', '"path": "orders-v2"'))
    result = invoke("push", cwd=ready)
    assert result.exit_code == 0, explain(result)
    stored = fake.by_name("orders")
    assert stored["active"] is True
    assert stored["activeVersionId"] == stored["versionId"]  # the update is what runs
    assert stored["nodes"][0]["parameters"]["path"] == "orders-v2"
    assert "update  orders" in result.stderr


def test_activate_key_publishes_what_it_references_even_when_pushed_earlier(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    caller(ready)
    assert invoke("push", "--no-activate", cwd=ready).exit_code == 0
    result = invoke("push", "--activate", "orders", "-o", "json", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert published(ready, fake) == {"orders", "lock_acquisition", "error_handler_lock_cleanup"}
    assert outcomes(result.stdout) == {
        key: {
            "key": key,
            "action": action,
            "id": recorded_ids(ready)[key],
            "status": "ok",
            "published": True,
            "error": None,
            "hint": None,
        }
        for key, action in (
            ("error_handler_lock_cleanup", "none"),
            ("lock_acquisition", "none"),
            ("orders", "identical"),
        )
    }


@pytest.fixture
def live_orders(ready: Path, invoke: Invoke, fake: FakeN8n) -> Path:
    """Everything pushed, and `orders` published with what it calls; returns its file."""
    caller(ready)
    assert invoke("push", cwd=ready).exit_code == 0
    assert invoke("push", "--activate", "orders", cwd=ready).exit_code == 0
    return ready / "workflows" / "orders.template.json"


def test_updating_a_live_workflow_publishes_the_sub_workflow_it_now_calls(
    ready: Path, invoke: Invoke, fake: FakeN8n, live_orders: Path
) -> None:
    orders = live_orders
    assert "lock_release" not in published(ready, fake)
    workflow = json.loads(orders.read_text())
    workflow["nodes"].append(calls("lock_release"))
    orders.write_text(json.dumps(workflow))
    result = invoke("push", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert {"orders", "lock_release"} <= published(ready, fake)
    assert fake.by_name("orders")["activeVersionId"] == fake.by_name("orders")["versionId"]


def test_n8n_1x_refusing_to_activate_sub_workflows_is_not_an_error(
    ready: Path, invoke: Invoke
) -> None:
    fake = FakeN8n(major=1)
    caller(ready)
    result = invoke("push", "--activate", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert "skip  lock_release: this n8n runs it without publishing" in result.stderr
    assert published(ready, fake) == {"orders"}


def test_a_referenced_workflow_with_a_live_trigger_is_not_published_unasked(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    caller(ready, "billing", trigger="schedule")
    workflow = json.loads((ready / "workflows" / "billing.template.json").read_text())
    workflow["nodes"].append(node("Called", "n8n-nodes-base.executeWorkflowTrigger"))
    write_workflow(ready, "billing", workflow)
    write_workflow(
        ready,
        "report",
        {
            "nodes": [node("Every day", "n8n-nodes-base.scheduleTrigger"), calls("billing")],
            "connections": {},
        },
    )
    assert invoke("push", cwd=ready).exit_code == 0
    result = invoke("push", "--activate", "report", cwd=ready)
    assert result.exit_code == 4, explain(result)
    assert "billing" not in published(ready, fake)
    assert "failed  report (wf" in result.stderr
    assert "which is not published" in result.stderr
    assert result.stderr.splitlines()[-1] == (
        "Hint: publish the workflow it references too: `n8nlock push --activate billing` "
        "(push publishes a referenced workflow by itself only when it has no trigger of its own)"
    )
    assert "validate" not in result.stderr


# failures: the others go on, each is reported, nothing half-done goes unsaid


def test_a_refused_workflow_does_not_stop_the_others_and_its_callers_are_skipped(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    message = "request/body/settings/errorWorkflow must be string"
    fake.refuse_create[name_of(ready, "lock_acquisition")] = message
    caller(ready)
    report, stderr = failing_push(ready, invoke)
    assert report["lock_acquisition"]["status"] == "failed"
    assert report["lock_acquisition"]["error"] == (
        "not created: request/body/settings/errorWorkflow must be string"
    )
    assert report["orders"]["status"] == "skipped"
    assert report["orders"]["error"] == "it references lock_acquisition, which failed"
    assert set(recorded_ids(ready).values()) - {""} == set(fake.workflows)
    assert {k for k, id_ in recorded_ids(ready).items() if id_} == {
        "lock_release",
        "error_handler_lock_cleanup",
    }
    assert stderr.splitlines()[-2:] == [
        "Error: 1 of 4 workflow(s) failed: lock_acquisition; 1 skipped: orders",
        "Hint: run `n8nlock validate` on the workflow; n8n's message says what it refused",
    ]


def test_created_but_not_published_is_said_and_the_id_is_recorded(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    message = 'Cannot publish workflow: 1 node have configuration issues:\n\nNode "Webhook":\n  - x'
    fake.refuse_publish["orders"] = message
    caller(ready)
    result = invoke("push", "--activate", cwd=ready)
    assert result.exit_code == 4, explain(result)
    ids = recorded_ids(ready)
    assert fake.workflows[ids["orders"]]["active"] is False
    assert (
        f"failed  orders ({ids['orders']}): created, not published: Cannot publish workflow: "
        '1 node have configuration issues: Node "Webhook": - x'
    ) in result.stderr
    assert result.stderr.count("Error:") == 1 and result.stderr.count("Hint:") == 1
    assert "Hint: n8n's message names what stops it from publishing" in result.stderr


def test_a_sub_workflow_n8n_will_not_publish_fails_and_its_callers_are_skipped(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    refusal = "Cannot publish workflow: Credential not configured: Redis"
    fake.refuse_publish[name_of(ready, "lock_acquisition")] = refusal
    caller(ready)
    report, stderr = failing_push(ready, invoke, "--activate")
    assert report["lock_acquisition"]["error"] == f"created, not published: {refusal}"
    assert report["orders"]["status"] == "skipped"
    assert "runs it without publishing" not in stderr  # that is 1.x, and only 1.x
    assert recorded_ids(ready)["lock_acquisition"] in fake.workflows


def test_a_referenced_workflow_outside_the_push_that_n8n_refuses_is_reported(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    caller(ready)
    assert invoke("push", cwd=ready).exit_code == 0
    refusal = "Cannot publish workflow: Credential not configured: Redis"
    fake.refuse_publish[name_of(ready, "lock_acquisition")] = refusal
    report, _stderr = failing_push(ready, invoke, "--activate", "orders")
    assert (report["lock_acquisition"]["action"], report["lock_acquisition"]["error"]) == (
        "none",
        f"not published: {refusal}",
    )
    assert report["orders"]["error"] == (
        "not published: it references lock_acquisition, which n8n did not publish"
    )
    assert "orders" not in published(ready, fake)


def test_fail_fast_stops_at_the_first_failure(ready: Path, invoke: Invoke, fake: FakeN8n) -> None:
    fake.refuse_create[name_of(ready, "error_handler_lock_cleanup")] = "nope"
    report, _stderr = failing_push(ready, invoke, "--fail-fast")
    assert [w["status"] for w in report.values()] == ["failed", "skipped", "skipped"]
    assert report["lock_release"]["error"] == (
        "--fail-fast stopped the push at error_handler_lock_cleanup"
    )
    assert fake.workflows == {}


def test_a_refused_republish_keeps_the_draft_and_the_next_push_publishes_it(
    ready: Path, invoke: Invoke, fake: FakeN8n, live_orders: Path
) -> None:
    orders = live_orders
    orders.write_text(orders.read_text().replace('"path": "orders"', '"path": "orders-v2"'))
    fake.refuse_publish["orders"] = "Webhook path conflict"
    result = invoke("push", cwd=ready)
    assert result.exit_code == 4, explain(result)
    assert (
        "orders (wf4): saved as a draft, the previous version stays published: "
        "Webhook path conflict"
    ) in result.stderr
    del fake.refuse_publish["orders"]
    again = invoke("push", cwd=ready)
    assert again.exit_code == 0, explain(again)
    assert "identical  orders (wf4)" in again.stderr and "publish  orders (wf4)" in again.stderr
    assert fake.by_name("orders")["activeVersionId"] == fake.by_name("orders")["versionId"]


def test_a_recorded_id_that_vanished_offers_to_recreate(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    assert invoke("push", cwd=ready).exit_code == 0
    gone = recorded_ids(ready)["lock_release"]
    del fake.workflows[gone]
    writes = len(fake.writes)
    result = invoke("push", cwd=ready)
    assert result.exit_code == 4, explain(result)
    assert f"records id {gone}, but n8n has no workflow with that id" in result.stderr
    assert "Hint: push it again with --recreate-missing" in result.stderr
    assert fake.writes[writes:] == []
    again = invoke("push", "--recreate-missing", cwd=ready)
    assert again.exit_code == 0, explain(again)
    assert recorded_ids(ready)["lock_release"] not in (gone, "")


def test_a_referenced_workflow_gone_from_n8n_fails_the_one_that_needs_it(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    caller(ready)
    assert invoke("push", cwd=ready).exit_code == 0
    gone = recorded_ids(ready)["lock_acquisition"]
    del fake.workflows[gone]
    report, _stderr = failing_push(ready, invoke, "--activate", "orders")
    assert report["lock_acquisition"]["error"] == (
        f"not sent: envs/dev.yml records id {gone}, but n8n has no workflow with that id"
    )
    assert (
        report["orders"]["error"] == "not published: it references lock_acquisition, which failed"
    )
    assert "orders" not in published(ready, fake)


# what n8n rewrites on save does not make every push an update


def test_an_old_style_credential_reference_is_identical_on_the_second_push(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    chat = node("Chat", "n8n-nodes-base.mattermost")
    chat["credentials"] = {"mattermostApi": "Mattermost account"}
    write_workflow(ready, "notify", {"nodes": [chat], "connections": {}})
    assert invoke("push", "notify", cwd=ready).exit_code == 0
    assert fake.by_name("notify")["nodes"][0]["credentials"] == {
        "mattermostApi": {"id": None, "name": "Mattermost account"}
    }
    result = invoke("push", "notify", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert "identical  notify" in result.stderr
    assert fake.writes.count(("PUT", f"/workflows/{recorded_ids(ready)['notify']}")) == 0


def test_settings_n8n_drops_as_defaults_do_not_cause_an_update_every_time(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    start = node("Start", "n8n-nodes-base.manualTrigger")
    workflow = {
        "nodes": [start],
        "connections": {},
        "settings": {"executionOrder": "v1", "timezone": "DEFAULT", "errorWorkflow": "DEFAULT"},
    }
    write_workflow(ready, "tidy", workflow)
    assert invoke("push", "tidy", cwd=ready).exit_code == 0
    start["position"] = [100, 0]
    write_workflow(ready, "tidy", workflow)
    assert invoke("push", "tidy", cwd=ready).exit_code == 0
    assert "timezone" not in fake.by_name("tidy")["settings"]
    result = invoke("push", "tidy", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert "identical  tidy" in result.stderr


def test_a_trigger_s_runtime_state_is_neither_compared_nor_reset(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    every = node("Every hour", "n8n-nodes-base.scheduleTrigger")
    workflow: dict[str, Any] = {"nodes": [every], "connections": {}, "staticData": None}
    write_workflow(ready, "hourly", workflow)
    assert invoke("push", "hourly", cwd=ready).exit_code == 0
    state: dict[str, Any] = {"node:Every hour": {"recurrenceRules": []}}  # n8n writes it
    fake.by_name("hourly")["staticData"] = state
    assert "identical  hourly" in invoke("push", "hourly", cwd=ready).stderr
    every["position"] = [200, 0]
    write_workflow(ready, "hourly", workflow)
    result = invoke("push", "hourly", cwd=ready)
    assert "update  hourly" in result.stderr, explain(result)
    assert fake.by_name("hourly")["staticData"] == state


# connection and input errors stop everything at once


def test_missing_api_key_variable(
    ready: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> None:
    monkeypatch.delenv("N8N_API_KEY")
    result = invoke("push", cwd=ready)
    assert result.exit_code == 3, explain(result)
    assert "N8N_API_KEY is not set" in result.stderr
    assert fake.calls == []


def test_refused_key_is_exit_4_and_the_key_is_never_printed(
    ready: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> None:
    monkeypatch.setenv("N8N_API_KEY", "wrong-key-42")
    result = invoke("push", cwd=ready)
    assert result.exit_code == 4, explain(result)
    assert result.stderr.startswith("Error: n8n refused the API key (401")
    assert "wrong-key-42" not in result.output and API_KEY not in result.output
    assert len(fake.calls) == 1  # not once per workflow


def test_unresolved_placeholder_stops_before_anything_is_sent(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> None:
    point_at(workspace, BASE, monkeypatch)
    invoke("create-lock", cwd=workspace)
    result = invoke("push", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    assert "workflows/lock_acquisition.template.json: {{@:env:credentials.redis.id}} is empty" in (
        result.stderr
    )
    assert "redis-credential" in result.stderr
    assert fake.calls == []


def test_unreachable_instance(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    point_at(workspace, "http://127.0.0.1:9", monkeypatch)
    invoke("redis-credential", "--link", "c1", cwd=workspace)
    invoke("create-lock", cwd=workspace)
    result = invoke("push", cwd=workspace)
    assert result.exit_code == 4, explain(result)
    assert "cannot reach n8n at http://127.0.0.1:9" in result.stderr


def test_redis_credential_is_created_and_recorded(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> None:
    env = point_at(workspace, BASE, monkeypatch)
    result = invoke("redis-credential", "--host", "redis", "--port", "6380", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert 'redis: {id: "cred-1", name: "n8nlock redis"}' in env.read_text()
    again = invoke("redis-credential", "--host", "redis", cwd=workspace)
    assert again.exit_code == 0 and "identical" in again.stderr
    assert fake.calls.count(("POST", "/credentials")) == 1


@pytest.mark.parametrize("name", [None, "", "   "], ids=["absent", "empty", "blank"])
def test_a_workflow_without_a_usable_name_is_named_after_its_key(
    ready: Path, invoke: Invoke, fake: FakeN8n, name: str | None
) -> None:
    caller(ready)
    path = ready / "workflows" / "orders.template.json"
    workflow = json.loads(path.read_text())
    workflow.pop("name", None)
    if name is not None:
        workflow["name"] = name
    path.write_text(json.dumps(workflow))
    result = invoke("push", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert fake.workflows[recorded_ids(ready)["orders"]]["name"] == "orders"
    assert name_of(ready, "orders") == "orders"
