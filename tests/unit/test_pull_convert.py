from __future__ import annotations

import json
from typing import Any

from n8n_lockkit.remote.diff import compare, node_differences
from n8n_lockkit.remote.pull_convert import (
    EnvIds,
    UnknownCredential,
    derive_key,
    merge_local,
    node_equivalent,
    settings_equivalent,
    template_of,
)
from n8n_lockkit.remote.sync_state import file_digest

IDS = EnvIds(workflows={"wfA": "lock_acquisition"}, credentials={"c1": "redis"})
ENV = {
    "workflows": {"lock_acquisition": {"id": "wfA", "name": "acquire"}},
    "credentials": {"redis": {"id": "c1", "name": "Redis"}},
}


def redis_node(credential: str = "c1", **extra: Any) -> dict[str, Any]:
    return {
        "name": "Read",
        "type": "n8n-nodes-base.redis",
        "parameters": {"operation": "get"},
        "credentials": {"redis": {"id": credential, "name": "Redis on n8n"}},
        **extra,
    }


def remote_workflow(*nodes: dict[str, Any], **settings: Any) -> dict[str, Any]:
    return {
        "id": "wf9",
        "versionId": "v1",
        "active": False,
        "meta": {},
        "pinData": {"Read": [{"json": {"secret": 1}}]},
        "staticData": None,
        "name": "Orders",
        "nodes": list(nodes),
        "connections": {},
        "settings": {"executionOrder": "v1", **settings},
    }


def test_template_keeps_what_a_user_writes_and_drops_what_the_api_adds() -> None:
    workflow, unknown = template_of(remote_workflow(redis_node()), IDS)
    assert list(workflow) == ["name", "nodes", "connections", "settings"]
    assert unknown == []


def test_known_ids_become_placeholders_in_credentials_calls_and_error_workflow() -> None:
    call = {
        "name": "Lock",
        "type": "n8n-nodes-base.executeWorkflow",
        "parameters": {"workflowId": "wfA"},
    }
    workflow, _ = template_of(remote_workflow(redis_node(), call, errorWorkflow="wfA"), IDS)
    assert workflow["nodes"][0]["credentials"]["redis"] == {
        "id": "{{@:env:credentials.redis.id}}",
        "name": "{{@:env:credentials.redis.name}}",
    }
    assert workflow["nodes"][1]["parameters"]["workflowId"] == (
        "{{@:env:workflows.lock_acquisition.id}}"
    )
    assert workflow["settings"]["errorWorkflow"] == "{{@:env:workflows.lock_acquisition.id}}"


def test_an_id_the_env_does_not_know_stays_and_is_reported() -> None:
    call = {"name": "Other", "type": "x", "parameters": {"workflowId": "wfZ"}}
    workflow, unknown = template_of(remote_workflow(redis_node("c7"), call), IDS)
    assert workflow["nodes"][1]["parameters"]["workflowId"] == "wfZ"
    assert unknown == [UnknownCredential("redis", "c7", "Redis on n8n", ("Read",))]


def test_a_node_n8n_holds_unchanged_keeps_the_files_text() -> None:
    local_node = redis_node("{{@:env:credentials.redis.id}}")
    local_text = json.dumps({"name": "Orders", "nodes": [local_node], "connections": {}})
    remote = remote_workflow(redis_node(id="n8n-node-id"))
    pulled, _ = template_of(remote, IDS)
    merged = merge_local(pulled, remote, local_text, ENV, IDS, keep_name=True)
    assert merged == {"name": "Orders", "nodes": [local_node], "connections": {}}


def test_a_node_changed_on_n8n_comes_from_n8n() -> None:
    local_node = redis_node("{{@:env:credentials.redis.id}}")
    local_text = json.dumps({"name": "Orders", "nodes": [local_node], "connections": {}})
    remote = remote_workflow(redis_node(disabled=True))
    pulled, _ = template_of(remote, IDS)
    merged = merge_local(pulled, remote, local_text, ENV, IDS, keep_name=True)
    assert merged["nodes"][0]["disabled"] is True


def test_node_equivalence_sees_additions_made_in_the_editor_but_not_n8ns_ids() -> None:
    assert node_equivalent(redis_node(), redis_node(id="x", webhookId="w"))
    assert not node_equivalent(redis_node(), redis_node(notes="added in the editor"))


def test_settings_n8n_adds_at_their_default_are_no_difference() -> None:
    local = {"executionOrder": "v1"}
    added = {**local, "availableInMCP": False, "callerPolicy": "workflowsFromSameOwner"}
    assert settings_equivalent(local, added)
    assert not settings_equivalent(local, {**local, "callerPolicy": "any"})
    assert settings_equivalent({**local, "timezone": "DEFAULT"}, local)


def test_keys_come_from_names_and_never_collide() -> None:
    assert derive_key("Sync Orders (v2)", set()) == "Sync_Orders_v2"
    assert derive_key("Sync Orders", {"Sync_Orders"}) == "Sync_Orders-2"
    assert derive_key("¿?", set()) == "workflow"


def test_file_digest_ignores_formatting_only() -> None:
    assert file_digest(json.loads('{"a": 1, "b": [1]}')) == file_digest({"b": [1], "a": 1})
    assert file_digest({"a": 1}) != file_digest({"a": 2})


def test_compare_names_the_parameter_that_differs() -> None:
    sent_node = redis_node(parameters={"operation": "set"})
    held_node = redis_node(id="x")
    assert node_differences(sent_node, held_node) == ["parameters.operation"]
    changes = compare({"name": "n", "nodes": [sent_node]}, {"name": "n", "nodes": [held_node]})
    assert [c.kind for c in changes] == ["node-changed"]
