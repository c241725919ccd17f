"""`n8nlock pull` against the in-memory n8n: the file a user writes, round trips, refusals."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import requests
import responses

from n8n_lockkit.remote import connection
from n8n_lockkit.remote.n8n_client import N8nClient
from n8n_lockkit.workspace.envconfig import load_env
from n8n_lockkit.workspace.layout import Workspace
from tests.cli.fake_n8n import API_KEY, BASE, FakeN8n
from tests.cli.test_push import node, point_at
from tests.conftest import Invoke, explain, snapshot

API_FIELDS = ("id", "versionId", "active", "meta", "createdAt", "updatedAt", "tags", "shared")


@pytest.fixture
def fake() -> FakeN8n:
    return FakeN8n()


def pushed_primitives(workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The primitives pushed to the fake n8n, with the Redis credential `cred-9` linked."""
    point_at(workspace, BASE, monkeypatch)
    for args in (
        ("create-lock", "--include-error-handler"),
        ("redis-credential", "--link", "cred-9", "--name", "Redis dev"),
        ("push",),
    ):
        result = invoke(*args, cwd=workspace)
        assert result.exit_code == 0, explain(result)
    return workspace


@pytest.fixture
def ready(workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n) -> Path:
    return pushed_primitives(workspace, invoke, monkeypatch)


def refused(root: Path, invoke: Invoke, exit_code: int, *args: str) -> list[str]:
    """Run `n8nlock ARGS`, which must fail with `exit_code` and change no file: its stderr."""
    before = snapshot(root)
    result = invoke(*args, cwd=root)
    assert result.exit_code == exit_code, explain(result)
    assert snapshot(root) == before
    return result.stderr.splitlines()


def env_data(root: Path, env: str = "dev") -> dict[str, Any]:
    return load_env(Workspace(root), env).data


def ids(root: Path, env: str = "dev") -> dict[str, str]:
    return {k: v["id"] for k, v in (env_data(root, env)["workflows"] or {}).items()}


def read(root: Path, key: str) -> dict[str, Any]:
    text = (root / "workflows" / f"{key}.template.json").read_text()
    workflow: dict[str, Any] = json.loads(text)
    return workflow


def picked_in_editor(workflow_id: str, name: str) -> dict[str, Any]:
    """An Execute Workflow target as the editor's list picks it (with its URL on n8n)."""
    return {
        "__rl": True,
        "mode": "list",
        "value": workflow_id,
        "cachedResultName": name,
        "cachedResultUrl": f"/workflow/{workflow_id}",
    }


def chain(name: str, nodes: list[dict[str, Any]], error_workflow: str) -> dict[str, Any]:
    """A workflow whose nodes run one after the other, with an error workflow."""
    links = {
        a["name"]: {"main": [[{"node": b["name"], "type": "main", "index": 0}]]}
        for a, b in itertools.pairwise(nodes)
    }
    settings = {"executionOrder": "v1", "errorWorkflow": error_workflow}
    return {"name": name, "nodes": nodes, "connections": links, "settings": settings}


def editor_workflow(fake: FakeN8n, root: Path, name: str = "Sync Orders") -> str:
    """A workflow made in n8n's editor: it calls lock_acquisition by id, names the cleanup
    handler as its error workflow and uses the Redis credential by id."""
    redis_node = node("Read", "n8n-nodes-base.redis", operation="get", key="orders")
    redis_node["credentials"] = {"redis": {"id": "cred-9", "name": "Redis dev"}}
    target = picked_in_editor(ids(root)["lock_acquisition"], "lock_acquisition")
    call = node("Lock", "n8n-nodes-base.executeWorkflow", workflowId=target)
    hook = node("Webhook", "n8n-nodes-base.webhook", path="orders", httpMethod="POST")
    handler = ids(root)["error_handler_lock_cleanup"]
    return fake.add(chain(name, [hook, call, redis_node], handler))


# the file a user writes


def test_pull_by_name_writes_the_file_with_placeholders_and_registers_the_key(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    workflow_id = editor_workflow(fake, ready)
    result = invoke("pull", "Sync Orders", cwd=ready)
    assert result.exit_code == 0, explain(result)
    pulled = read(ready, "Sync_Orders")
    assert list(pulled) == ["name", "nodes", "connections", "settings"]
    assert not set(API_FIELDS) & set(pulled)
    assert pulled["settings"]["errorWorkflow"] == (
        "{{@:env:workflows.error_handler_lock_cleanup.id}}"
    )
    target = pulled["nodes"][1]["parameters"]["workflowId"]
    assert target["value"] == "{{@:env:workflows.lock_acquisition.id}}"
    assert target["cachedResultUrl"] == "/workflow/{{@:env:workflows.lock_acquisition.id}}"
    assert pulled["nodes"][2]["credentials"] == {
        "redis": {
            "id": "{{@:env:credentials.redis.id}}",
            "name": "{{@:env:credentials.redis.name}}",
        }
    }
    assert pulled["nodes"][0]["id"] == f"{workflow_id}-node-0"  # n8n keys state on node ids
    assert env_data(ready)["workflows"]["Sync_Orders"] == {"id": workflow_id, "name": "Sync Orders"}
    assert "create  workflows/Sync_Orders.template.json" in result.stderr
    assert "1 workflow(s): 1 create" in result.stderr


def test_pull_then_push_sends_no_write_and_a_second_pull_writes_nothing(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    editor_workflow(fake, ready)
    assert invoke("pull", "Sync Orders", cwd=ready).exit_code == 0
    writes = len(fake.writes)
    pushed = invoke("push", cwd=ready)
    assert pushed.exit_code == 0, explain(pushed)
    assert fake.writes[writes:] == []
    before = snapshot(ready)
    again = invoke("pull", cwd=ready)
    assert again.exit_code == 0, explain(again)
    assert snapshot(ready) == before
    assert "4 workflow(s): 4 identical" in again.stderr


def test_pulling_what_n8nlock_pushed_gives_back_the_very_files(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    write = ready / "workflows" / "orders.template.json"
    hook = node("Webhook", "n8n-nodes-base.webhook", path="orders", httpMethod="POST")
    answer = node("Answer", "n8n-nodes-base.noOp")
    links = {"Webhook": {"main": [[{"node": "Answer", "type": "main", "index": 0}]]}}
    write.write_text(json.dumps({"name": "orders", "nodes": [hook, answer], "connections": links}))
    wrapped = invoke(
        "add-lock-to-workflow",
        "--workflow-key",
        "orders",
        "--scope-expression",
        "orders",
        "--lock-on-error",
        cwd=ready,
    )
    assert wrapped.exit_code == 0, explain(wrapped)
    assert invoke("push", cwd=ready).exit_code == 0
    before = snapshot(ready)
    result = invoke("pull", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert snapshot(ready) == before  # the handler's lockScopes and n8nlock's nodes included
    upgrade = invoke("upgrade", "--dry-run", cwd=ready)
    assert upgrade.exit_code == 0, explain(upgrade)


def test_a_change_made_in_n8n_replaces_only_the_node_it_touched(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    workflow_id = editor_workflow(fake, ready)
    assert invoke("pull", "Sync Orders", cwd=ready).exit_code == 0
    fake.workflows[workflow_id]["nodes"][2]["parameters"]["key"] = "orders-v2"
    fake.workflows[workflow_id]["nodes"][0]["disabled"] = True  # added, not changed
    result = invoke("pull", "Sync_Orders", cwd=ready)
    assert result.exit_code == 0, explain(result)
    pulled = read(ready, "Sync_Orders")
    assert pulled["nodes"][2]["parameters"]["key"] == "orders-v2"
    assert pulled["nodes"][2]["credentials"]["redis"]["id"] == "{{@:env:credentials.redis.id}}"
    assert pulled["nodes"][0]["disabled"] is True
    assert "update  workflows/Sync_Orders.template.json" in result.stderr


def test_dry_run_writes_nothing_and_json_says_what_would_happen(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    workflow_id = editor_workflow(fake, ready)
    before = snapshot(ready)
    result = invoke("pull", "--dry-run", "-o", "json", workflow_id, cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert snapshot(ready) == before
    document = json.loads(result.stdout)
    assert document["workflows"] == [
        {
            "key": "Sync_Orders",
            "id": workflow_id,
            "name": "Sync Orders",
            "action": "create",
            "path": "workflows/Sync_Orders.template.json",
            "forced": False,
        }
    ]
    assert {c["path"]: c["action"] for c in document["changes"]} == {
        "workflows/Sync_Orders.template.json": "create",
        "envs/dev.yml": "update",
        ".n8nlock/synced.json": "update",
    }


def test_key_names_the_file(ready: Path, invoke: Invoke, fake: FakeN8n) -> None:
    workflow_id = editor_workflow(fake, ready)
    result = invoke("pull", workflow_id, "--key", "orders", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert read(ready, "orders")["name"] == "Sync Orders"
    assert ids(ready)["orders"] == workflow_id


def test_all_follows_pages_skips_archived_and_links_what_it_pulls(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    fake.page_size = 2
    child = fake.add({"name": "Child", "nodes": [], "connections": {}, "settings": {}})
    call = node("Run child", "n8n-nodes-base.executeWorkflow", workflowId=child)
    fake.add({"name": "Parent", "nodes": [call], "connections": {}, "settings": {}})
    archived = fake.add({"name": "Old", "nodes": [], "connections": {}, "settings": {}})
    fake.workflows[archived]["isArchived"] = True
    result = invoke("pull", "--all", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert set(ids(ready)) == {
        "lock_acquisition",
        "lock_release",
        "error_handler_lock_cleanup",
        "Child",
        "Parent",
    }
    reference = read(ready, "Parent")["nodes"][0]["parameters"]["workflowId"]
    assert reference == "{{@:env:workflows.Child.id}}"
    assert "3 identical" in result.stderr and "2 create" in result.stderr


def test_pull_in_a_second_env_resolves_the_same_file(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    editor_workflow(fake, ready)
    assert invoke("pull", "Sync Orders", cwd=ready).exit_code == 0
    prod = ready / "envs" / "prod.yml"
    prod.write_text((ready / "envs" / "dev.yml").read_text().replace("name: dev", "name: prod"))
    env = load_env(Workspace(ready), "prod")
    for key in list(env.data["workflows"]):
        env.document.data["workflows"][key]["id"] = ""
    env.record_credential("redis", "cred-prod", "Redis prod")
    prod.write_text(env.document.dumps())
    assert invoke("push", "--env", "prod", cwd=ready).exit_code == 0
    assert ids(ready, "prod")["Sync_Orders"] != ids(ready)["Sync_Orders"]
    before = snapshot(ready / "workflows")
    result = invoke("pull", "--env", "prod", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert snapshot(ready / "workflows") == before
    prod_copy = fake.workflows[ids(ready, "prod")["Sync_Orders"]]
    assert prod_copy["nodes"][2]["credentials"]["redis"]["id"] == "cred-prod"


# refusals


def test_a_file_changed_here_and_on_n8n_is_kept_unless_force(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    workflow_id = editor_workflow(fake, ready)
    assert invoke("pull", "Sync Orders", cwd=ready).exit_code == 0
    path = ready / "workflows" / "Sync_Orders.template.json"
    path.write_text(path.read_text().replace('"orders"', '"orders-local"'))
    fake.workflows[workflow_id]["nodes"][2]["parameters"]["key"] = "orders-remote"
    assert refused(ready, invoke, 7, "pull") == [
        "Error: workflows/Sync_Orders.template.json: changed here since the last push or "
        "pull to dev, and n8n holds something else; nothing was written",
        "Hint: see what differs with `n8nlock diff --env dev`; push your changes, or pull "
        "again with --force to replace them with n8n's version",
    ]
    forced = invoke("pull", "--force", cwd=ready)
    assert forced.exit_code == 0, explain(forced)
    assert "local changes replaced (--force)" in forced.stderr
    assert read(ready, "Sync_Orders")["nodes"][2]["parameters"]["key"] == "orders-remote"


def test_a_file_nobody_pushed_from_here_is_kept_when_it_differs(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    (ready / ".n8nlock" / "synced.json").unlink()
    fake.workflows[ids(ready)["lock_release"]]["nodes"][0]["notes"] = "edited in n8n"
    assert refused(ready, invoke, 7, "pull", "lock_release")[0].startswith(
        "Error: workflows/lock_release.template.json: changed here since"
    )


def test_a_credential_the_env_does_not_name_stops_the_pull_and_says_how_to_record_it(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    slack = node("Post", "n8n-nodes-base.slack", text="hi")
    slack["credentials"] = {"slackApi": {"id": "cred-slack", "name": "Slack team"}}
    fake.add({"name": "Notify", "nodes": [slack], "connections": {}, "settings": {}})
    assert refused(ready, invoke, 3, "pull", "Notify") == [
        "Error: envs/dev.yml does not name 1 credential(s) these workflows use: slackApi "
        "'Slack team' (id cred-slack, in Notify)",
        "Hint: record them (as credentials.<type>) and pull again: "
        "`n8nlock pull --env dev Notify --record-credentials`",
    ]
    recorded = invoke("pull", "--env", "dev", "Notify", "--record-credentials", cwd=ready)
    assert recorded.exit_code == 0, explain(recorded)
    assert "record  credentials.slackApi = cred-slack ('Slack team') in envs/dev.yml" in (
        recorded.stderr
    )
    assert env_data(ready)["credentials"]["slackApi"] == {"id": "cred-slack", "name": "Slack team"}
    assert read(ready, "Notify")["nodes"][0]["credentials"]["slackApi"]["id"] == (
        "{{@:env:credentials.slackApi.id}}"
    )
    assert invoke("validate", "--env", "dev", cwd=ready).exit_code == 0


def test_an_unknown_id_or_name_says_what_is_close(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    editor_workflow(fake, ready)
    assert refused(ready, invoke, 3, "pull", "Sync Order") == [
        f"Error: n8n at {BASE} has no workflow with the id or name 'Sync Order'",
        "Hint: did you mean 'Sync Orders'? `n8nlock pull --env dev --all --dry-run` lists "
        "the workflows pull would take",
    ]
    by_id = invoke("pull", "nosuchid", cwd=ready)
    assert by_id.exit_code == 3, explain(by_id)


def test_a_name_several_workflows_share_lists_them(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    first = editor_workflow(fake, ready, "Twin")
    second = editor_workflow(fake, ready, "Twin")
    assert refused(ready, invoke, 3, "pull", "Twin") == [
        f"Error: 2 workflows on n8n are named 'Twin': {first} (not published, updated "
        f"2026-11-23), {second} (not published, updated 2026-11-23)",
        f"Hint: pull one by its id, e.g. `n8nlock pull --env dev {first}`",
    ]


def test_an_unreachable_instance_is_one_error(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    point_at(workspace, "http://n8n.down", monkeypatch)
    # The client retries a GET with backoff; the test need not sleep through it.
    monkeypatch.setattr(
        connection,
        "client_for",
        lambda env: N8nClient(str(env.data["n8n"]["url"]), API_KEY, sleep=lambda _: None),
    )
    responses.add(
        responses.GET,
        "http://n8n.down/api/v1/workflows",
        body=requests.ConnectionError("refused"),
    )
    result = invoke("pull", "--all", cwd=workspace)
    assert result.exit_code == 4, explain(result)
    assert result.stderr.splitlines() == [
        "Error: cannot reach n8n at http://n8n.down (ConnectionError)",
        "Hint: is n8n running? check n8n.url in the env file",
    ]


def test_nothing_registered_and_nothing_named_says_how(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> None:
    point_at(workspace, BASE, monkeypatch)
    result = invoke("pull", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    assert "registers no workflow with an id" in result.stderr


def test_key_with_several_workflows_is_refused(ready: Path, invoke: Invoke) -> None:
    result = invoke("pull", "--all", "--key", "x", cwd=ready)
    assert result.exit_code == 3, explain(result)
    assert result.stderr.startswith("Error: --key names the file of one workflow")


# the sync state push and pull keep


def test_push_records_what_it_sent_and_a_dry_run_records_nothing(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> None:
    point_at(workspace, BASE, monkeypatch)
    invoke("create-lock", cwd=workspace)
    invoke("redis-credential", "--link", "cred-9", cwd=workspace)
    state = workspace / ".n8nlock" / "synced.json"
    assert invoke("push", "--dry-run", cwd=workspace).exit_code == 0
    assert not state.exists()
    assert invoke("push", cwd=workspace).exit_code == 0
    recorded = json.loads(state.read_text())["envs"]["dev"]
    assert {key: entry["id"] for key, entry in recorded.items()} == ids(workspace)
    written = state.stat().st_mtime_ns
    assert invoke("push", cwd=workspace).exit_code == 0
    assert state.stat().st_mtime_ns == written  # nothing sent, nothing rewritten


def test_a_call_of_a_workflow_the_env_does_not_register_is_pulled_with_a_warning(
    ready: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    child = fake.add({"name": "Child", "nodes": [], "connections": {}, "settings": {}})
    call = node("Run child", "n8n-nodes-base.executeWorkflow", workflowId=child)
    fake.add({"name": "Parent", "nodes": [call], "connections": {}, "settings": {}})
    result = invoke("pull", "Parent", cwd=ready)
    assert result.exit_code == 0, explain(result)
    assert read(ready, "Parent")["nodes"][0]["parameters"]["workflowId"] == child
    assert (
        f"Warning: Parent: node 'Run child' calls workflow {child}, which envs/dev.yml does not "
        "register: pull that workflow too, or the file works on this instance only"
    ) in result.stderr
    assert invoke("pull", "Child", cwd=ready).exit_code == 0
    again = invoke("pull", "Parent", cwd=ready)  # unchanged here since the last pull
    assert "Warning" not in again.stderr
    assert read(ready, "Parent")["nodes"][0]["parameters"]["workflowId"] == (
        "{{@:env:workflows.Child.id}}"
    )
