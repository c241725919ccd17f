"""`n8nlock diff`: what push would change on n8n, node by node. Sends nothing.

A workflow differs exactly when push would send it (push_compare.holds decides both), so
`diff` exiting 0 means a push would write nothing. The changes say where: nodes added and
removed, the fields of a node that changed, the nodes whose connections changed, settings
and the name. Node parameters are compared as n8n stores them (it adds node ids and rewrites
credential references), so what n8n adds on its own is no difference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from n8n_lockkit.remote.n8n_client import N8nClient, N8nNotFound
from n8n_lockkit.remote.push import NEW_ID
from n8n_lockkit.remote.push_compare import (
    RUNTIME_FIELDS,
    credentials_match,
    holds,
    is_subset,
    setting_matches,
)
from n8n_lockkit.remote.push_items import PushItem, load_items, preflight, request_body
from n8n_lockkit.workspace.envconfig import EnvFile
from n8n_lockkit.workspace.layout import Workspace

# Enough paths to find the change; a node rewritten wholesale would list hundreds.
MAX_PATHS = 5


@dataclass(frozen=True)
class Change:
    """One difference; `kind` is node-added, node-removed, node-changed, nodes-reordered,
    connections, setting or name."""

    kind: str
    node: str = ""
    paths: tuple[str, ...] = ()  # node-changed: the fields that differ
    key: str = ""  # setting: which one
    local: Any = None  # setting, name: what push would send
    remote: Any = None  # and what n8n holds

    def as_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {"kind": self.kind}
        if self.node:
            document["node"] = self.node
        if self.kind == "node-changed":
            document["paths"] = list(self.paths)
        if self.kind == "setting":
            document["key"] = self.key
        if self.kind in ("setting", "name"):
            document.update({"local": self.local, "remote": self.remote})
        return document


@dataclass(frozen=True)
class WorkflowDiff:
    key: str
    workflow_id: str
    # identical | update | create (no id yet) | missing (the recorded id is gone from n8n)
    status: str
    changes: list[Change] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        return self.status != "identical"


def diff_workspace(
    workspace: Workspace, env: EnvFile, client: N8nClient, keys: Sequence[str]
) -> list[WorkflowDiff]:
    """Compare each workflow file (or the named ones) with what the env's n8n holds."""
    items = load_items(workspace, keys)
    env_data = env.data
    preflight(workspace, items, env_data)
    registered = env.workflow_ids()
    workflows = dict(env_data.get("workflows") or {})
    for item in items:
        if item.key not in registered:
            workflows[item.key] = {**workflows.get(item.key, {"name": item.key}), "id": NEW_ID}
    env_data["workflows"] = workflows
    return [_diff_one(item, env_data, registered.get(item.key, ""), client) for item in items]


def _diff_one(
    item: PushItem, env_data: Mapping[str, Any], workflow_id: str, client: N8nClient
) -> WorkflowDiff:
    entry = (env_data.get("workflows") or {}).get(item.key) or {}
    name = str(entry.get("name") or "") or str(item.workflow.get("name") or "").strip() or item.key
    body = request_body(item, env_data, name)
    if not workflow_id:
        return WorkflowDiff(item.key, "", "create")
    try:
        remote = client.get_workflow(workflow_id)
    except N8nNotFound:
        return WorkflowDiff(item.key, workflow_id, "missing")
    if holds(body, remote):
        return WorkflowDiff(item.key, workflow_id, "identical")
    changes = compare(body, remote) or [Change("other")]
    return WorkflowDiff(item.key, workflow_id, "update", changes)


def compare(body: Mapping[str, Any], remote: Mapping[str, Any]) -> list[Change]:
    """The differences between what push would send and what n8n holds."""
    changes: list[Change] = []
    if body.get("name") != remote.get("name"):
        changes.append(Change("name", local=body.get("name"), remote=remote.get("name")))
    changes += _node_changes(_by_name(body), _by_name(remote))
    local_connections = _as_dict(body.get("connections"))
    remote_connections = _as_dict(remote.get("connections"))
    for source in dict.fromkeys([*local_connections, *remote_connections]):
        if not is_subset(local_connections.get(source), remote_connections.get(source)):
            changes.append(Change("connections", source))
    remote_settings = _as_dict(remote.get("settings"))
    for key, value in _as_dict(body.get("settings")).items():
        if key not in RUNTIME_FIELDS and not setting_matches(key, value, remote_settings):
            changes.append(Change("setting", key=key, local=value, remote=remote_settings.get(key)))
    return changes


def _node_changes(local: dict[str, Any], remote: dict[str, Any]) -> list[Change]:
    changes = [Change("node-added", name) for name in local if name not in remote]
    changes += [Change("node-removed", name) for name in remote if name not in local]
    for name, node in local.items():
        if name in remote:
            paths = node_differences(node, remote[name])
            if paths:
                changes.append(Change("node-changed", name, tuple(paths[:MAX_PATHS])))
    shared = [name for name in local if name in remote]
    if not changes and shared != [name for name in remote if name in local]:
        changes.append(Change("nodes-reordered"))
    return changes


def node_differences(local: Mapping[str, Any], remote: Mapping[str, Any]) -> list[str]:
    """The paths (`parameters.options.timeout`) at which n8n's node lacks what push sends."""
    paths: list[str] = []
    for key, value in local.items():
        if key == "credentials" and isinstance(value, dict):
            stored = remote.get(key)
            paths += [
                f"credentials.{kind}"
                for kind, ref in value.items()
                if not credentials_match({kind: ref}, stored)
            ]
        elif key == "webhookId" and value == "":
            continue  # n8n mints one for an empty webhook id
        elif key not in remote:
            paths.append(key)
        else:
            paths += _differences(value, remote[key], key)
    return paths


def _differences(expected: Any, actual: Any, path: str) -> list[str]:
    if is_subset(expected, actual):
        return []
    if isinstance(expected, dict) and isinstance(actual, dict):
        return [
            p
            for key, value in expected.items()
            for p in (
                _differences(value, actual[key], f"{path}.{key}")
                if key in actual
                else [f"{path}.{key}"]
            )
        ]
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [
            p
            for index, (e, a) in enumerate(zip(expected, actual, strict=True))
            for p in _differences(e, a, f"{path}[{index}]")
        ]
    return [path]


def _by_name(workflow: Mapping[str, Any]) -> dict[str, Any]:
    nodes = workflow.get("nodes")
    listed = nodes if isinstance(nodes, list) else []
    return {str(n.get("name")): n for n in listed if isinstance(n, dict)}


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
