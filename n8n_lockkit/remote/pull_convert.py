"""A workflow as n8n holds it, turned back into the file a user writes (pure functions).

What the API adds goes: the workflow's id, versionId, active, meta, timestamps, shared,
tags, pinData, staticData and the rest; the file keeps name, nodes, connections and settings.
Node ids stay: n8n keys state on them (poll cursors) and an editor export has them. Values
that differ per instance become placeholders again: the ids of credentials the env file
names, and the ids of workflows it registers (Execute Workflow targets, errorWorkflow).

A node n8n holds as the local file has it keeps the file's text, placeholders included; so do
n8nlock's own nodes in a wrapped workflow and a primitive's Code (whose lockScopes push wrote
in), and `upgrade` and `add-lock-to-workflow` read them back as before.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from n8n_lockkit.errors import PlaceholderError
from n8n_lockkit.remote.push_compare import DEFAULT_SETTINGS, node_matches, setting_matches
from n8n_lockkit.remote.push_items import SETTINGS_WHEN_NONE
from n8n_lockkit.workspace import placeholders
from n8n_lockkit.workspace.layout import key_of_name

# The top-level fields of a workflow file; n8n adds the others.
FILE_FIELDS = ("name", "nodes", "connections", "settings")
# What n8n adds to a node that the file may not have: an id, and a webhook id for an empty one.
_NODE_ADDITIONS = ("id", "webhookId")

# Settings n8n 1.123.81 adds on save, at their default, when a file has none: a file
# without them says the same (callerPolicy: the instance's default policy).
_ADDED_SETTINGS = {"availableInMCP": False, "callerPolicy": "workflowsFromSameOwner"}

Workflow = dict[str, Any]


@dataclass(frozen=True)
class UnknownCredential:
    """A credential a pulled workflow uses and the env file does not name."""

    kind: str  # its type, e.g. slackApi
    credential_id: str
    name: str
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class EnvIds:
    """The per-instance ids one env knows: workflow id → key, credential id → name."""

    workflows: Mapping[str, str]
    credentials: Mapping[str, str]


def workflow_placeholder(key: str) -> str:
    return f"{{{{@:env:workflows.{key}.id}}}}"


def credential_placeholders(name: str) -> dict[str, str]:
    return {
        "id": f"{{{{@:env:credentials.{name}.id}}}}",
        "name": f"{{{{@:env:credentials.{name}.name}}}}",
    }


def template_of(remote: Mapping[str, Any], ids: EnvIds) -> tuple[Workflow, list[UnknownCredential]]:
    """The file for a workflow n8n holds, and the credentials the env does not name."""
    workflow: Workflow = {k: copy.deepcopy(remote[k]) for k in FILE_FIELDS if k in remote}
    unknown: dict[str, tuple[str, str, str, list[str]]] = {}
    _template_in_place(workflow, ids, unknown)
    found = [
        UnknownCredential(kind, credential_id, name, tuple(nodes))
        for credential_id, (kind, _, name, nodes) in unknown.items()
    ]
    return workflow, found


def _template_in_place(
    workflow: Workflow, ids: EnvIds, unknown: dict[str, tuple[str, str, str, list[str]]]
) -> None:
    for node in workflow.get("nodes") or []:
        if isinstance(node, dict):
            _template_node(node, ids, unknown)
    settings = workflow.get("settings")
    if isinstance(settings, dict):
        target = settings.get("errorWorkflow")
        if isinstance(target, str) and target in ids.workflows:
            settings["errorWorkflow"] = workflow_placeholder(ids.workflows[target])


def _template_node(
    node: dict[str, Any], ids: EnvIds, unknown: dict[str, tuple[str, str, str, list[str]]]
) -> None:
    credentials = node.get("credentials")
    if not isinstance(credentials, dict):
        credentials = {}
    for kind, ref in credentials.items():
        credential_id = ref.get("id") if isinstance(ref, dict) else None
        if not isinstance(credential_id, str) or not credential_id:
            continue  # a reference by name only: nothing instance-specific to replace
        if credential_id in ids.credentials:
            credentials[kind] = credential_placeholders(ids.credentials[credential_id])
        else:
            entry = unknown.setdefault(
                credential_id, (str(kind), credential_id, str(ref.get("name") or ""), [])
            )
            entry[3].append(str(node.get("name")))
    parameters = node.get("parameters")
    if isinstance(parameters, dict) and "workflowId" in parameters:
        parameters["workflowId"] = _workflow_reference(parameters["workflowId"], ids)


def _workflow_reference(value: Any, ids: EnvIds) -> Any:
    """An Execute Workflow target: a bare id (version 1) or a resource locator."""
    if isinstance(value, str):
        return workflow_placeholder(ids.workflows[value]) if value in ids.workflows else value
    if not isinstance(value, dict) or value.get("value") not in ids.workflows:
        return value
    workflow_id = str(value["value"])
    placeholder = workflow_placeholder(ids.workflows[workflow_id])
    located = {**value, "value": placeholder}
    url = value.get("cachedResultUrl")
    if isinstance(url, str):
        located["cachedResultUrl"] = url.replace(workflow_id, placeholder)
    return located


def foreign_references(workflow: Mapping[str, Any]) -> list[str]:
    """Workflow ids the file still names literally: ids the env does not register.

    They are right on this instance only; the same file pushed to another env would call,
    or hand its errors to, whatever has that id there.
    """
    found = []
    for node in _nodes(workflow):
        parameters = node.get("parameters")
        target = parameters.get("workflowId") if isinstance(parameters, dict) else None
        value = target.get("value") if isinstance(target, dict) else target
        if _is_literal_id(value):
            found.append(f"node {node.get('name')!r} calls workflow {value}")
    settings = workflow.get("settings")
    error_workflow = settings.get("errorWorkflow") if isinstance(settings, dict) else None
    if _is_literal_id(error_workflow) and error_workflow != "DEFAULT":
        found.append(f"settings.errorWorkflow names workflow {error_workflow}")
    return found


def _is_literal_id(value: Any) -> bool:
    return (
        isinstance(value, str)
        and bool(value)
        and not value.startswith("=")
        and not placeholders.PLACEHOLDER.search(value)
    )


def merge_local(
    pulled: Workflow,
    remote: Mapping[str, Any],
    local_text: str,
    env: Mapping[str, Any],
    ids: EnvIds,
    *,
    keep_name: bool,
) -> Workflow:
    """`pulled`, keeping the local file's text for every part n8n holds as the file has it.

    Unchanged nodes, connections and settings keep their placeholders and key order, so a
    workflow nobody changed on n8n pulls to the very file it was pushed from. `keep_name`:
    n8n's name is the one the env records, so the file's own (push sends the env's) stays.
    """
    try:
        local = json.loads(local_text)
        hydrated = json.loads(placeholders.resolve_text(local_text, env))
    except (json.JSONDecodeError, PlaceholderError):
        return pulled
    if not isinstance(local, dict) or not isinstance(hydrated, dict):
        return pulled
    merged = dict(pulled)
    local_nodes = {
        str(node.get("name")): (node, hydrated_node)
        for node, hydrated_node in zip(_nodes(local), _nodes(hydrated), strict=True)
    }
    remote_nodes = _nodes(remote)
    merged["nodes"] = [
        _kept_node(local_nodes.get(str(remote_node.get("name"))), remote_node, pulled_node)
        for remote_node, pulled_node in zip(remote_nodes, _nodes(pulled), strict=True)
    ]
    if "connections" in local and hydrated.get("connections") == remote.get("connections"):
        merged["connections"] = local["connections"]
    local_settings = hydrated.get("settings", SETTINGS_WHEN_NONE)
    if settings_equivalent(local_settings, remote.get("settings")):
        if "settings" in local:
            merged["settings"] = local["settings"]
        else:
            merged.pop("settings", None)  # push sends its default for a file without any
    if keep_name and "name" in local:
        merged["name"] = local["name"]
    # What the file kept may name, literally, a workflow or credential the env knows by now.
    kept = copy.deepcopy({k: merged[k] for k in FILE_FIELDS if k in merged})
    _template_in_place(kept, ids, {})
    return kept


def _nodes(workflow: Mapping[str, Any]) -> list[dict[str, Any]]:
    nodes = workflow.get("nodes")
    return [n for n in nodes if isinstance(n, dict)] if isinstance(nodes, list) else []


def _kept_node(
    local: tuple[dict[str, Any], dict[str, Any]] | None,
    remote: dict[str, Any],
    pulled: dict[str, Any],
) -> dict[str, Any]:
    if local is not None and node_equivalent(local[1], remote):
        return local[0]
    return pulled


def node_equivalent(hydrated: Mapping[str, Any], remote: Mapping[str, Any]) -> bool:
    """n8n holds the node as the file has it, and has nothing in it the file lacks.

    Push's own check is one-sided (n8n may add to what it is sent); pull must also notice
    what someone added in the editor. An id, and a webhook id for an empty one, are n8n's.
    """
    if not node_matches(hydrated, remote):
        return False
    additions = {k: remote[k] for k in _NODE_ADDITIONS if k in remote and not hydrated.get(k)}
    rest = {k: v for k, v in remote.items() if k not in additions}
    return node_matches(rest, hydrated)


def settings_equivalent(local: Any, remote: Any) -> bool:
    """Same settings, where one left at its default counts as absent (n8n drops those)."""
    local = local if isinstance(local, dict) else {}
    remote = remote if isinstance(remote, dict) else {}
    if not all(setting_matches(k, v, remote) for k, v in local.items()):
        return False
    defaults = {**DEFAULT_SETTINGS, **_ADDED_SETTINGS}
    return all(k in local or (k in defaults and defaults[k] == v) for k, v in remote.items())


def derive_key(name: str, taken: set[str]) -> str:
    """A workflow key for a name n8n shows, by the rule that gives a file's key (so n8n's
    download `Sync Orders (v2).json` and a pull agree): `Sync Orders (v2)` → `Sync_Orders_v2`."""
    base = key_of_name(name) or "workflow"
    key, number = base, 2
    while key in taken:
        key, number = f"{base}-{number}", number + 1
    return key
