"""The workflow files one push sends: loading, ordering, checking and hydrating them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from n8n_lockkit.errors import LockkitError, PlaceholderError
from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.workspace import placeholders, workflow_json
from n8n_lockkit.workspace.layout import Workspace, workflow_key

# What the public API accepts on create and update; everything else in a file is dropped.
SENT_FIELDS = ("name", "nodes", "connections", "settings", "staticData")
# n8n requires settings on create; a file without any is sent with these.
SETTINGS_WHEN_NONE = {"executionOrder": "v1"}


@dataclass(frozen=True)
class PushItem:
    key: str
    path: Path
    text: str
    workflow: dict[str, Any]

    @property
    def depends_on(self) -> tuple[str, ...]:
        return placeholders.workflow_references(self.text, self.key)


def load_items(workspace: Workspace, keys: Sequence[str]) -> list[PushItem]:
    """The workflow files to push: the named keys, or every file in workflows/."""
    paths = (
        [workspace.existing_workflow_path(k) for k in keys] if keys else workspace.workflow_files()
    )
    items = []
    for path in paths:
        display = workspace.relative(path)
        text = path.read_text(encoding="utf-8")
        workflow = workflow_json.parse(
            text,
            display,
            hint="fix the file at that place (`n8nlock validate` checks it); nothing was sent",
        )
        items.append(PushItem(workflow_key(path), path, text, workflow))
    return items


def order_items(items: Sequence[PushItem]) -> list[PushItem]:
    """Dependencies first; ties keep file order. A cycle cannot be pushed."""
    by_key = {item.key: item for item in items}
    ordered: list[PushItem] = []
    state: dict[str, str] = {}

    def visit(item: PushItem, trail: tuple[str, ...]) -> None:
        if state.get(item.key) == "done":
            return
        if state.get(item.key) == "visiting":
            raise LockkitError(
                f"workflows reference each other in a cycle: {' -> '.join((*trail, item.key))}",
                hint=placeholders.CYCLE_HINT,
            )
        state[item.key] = "visiting"
        for dependency in item.depends_on:
            if dependency in by_key:
                visit(by_key[dependency], (*trail, item.key))
        state[item.key] = "done"
        ordered.append(item)

    for item in items:
        visit(item, ())
    return ordered


def preflight(workspace: Workspace, items: Iterable[PushItem], env: Mapping[str, Any]) -> None:
    """Stop before anything is sent if a placeholder cannot resolve."""
    pushed = {item.key for item in items}
    for item in items:
        for problem in placeholders.push_refusals(item.text, env, pushed):
            raise PlaceholderError(
                f"{workspace.relative(item.path)}: {{{{@:env:{problem.path}}}}} {problem.reason}",
                hint=placeholders.refusal_hint(problem.path, env),
            )


def request_body(item: PushItem, env: Mapping[str, Any], name: str) -> dict[str, Any]:
    hydrated = json.loads(placeholders.resolve_text(item.text, env))
    body = {k: hydrated[k] for k in SENT_FIELDS if k in hydrated}
    body["name"] = name
    body.setdefault("settings", dict(SETTINGS_WHEN_NONE))
    return body


# Triggers a user starts by hand: n8n has nothing to activate for them.
PASSIVE_TRIGGERS = frozenset({"n8n-nodes-base.manualTrigger", "n8n-nodes-base.start"})
INTERNAL_TRIGGERS = frozenset(
    {"n8n-nodes-base.errorTrigger", "n8n-nodes-base.executeWorkflowTrigger"}
)


def webhooks(workflow: Mapping[str, Any]) -> list[tuple[str, tuple[str, ...]]]:
    """(path, HTTP methods) of every enabled Webhook node; `multipleMethods` lists several."""
    found = []
    for node in graph.nodes(workflow):
        parameters = node.get("parameters") or {}
        if node.get("type") != "n8n-nodes-base.webhook" or node.get("disabled"):
            continue
        if not parameters.get("path"):
            continue
        methods = parameters.get("httpMethod", "GET")
        listed = methods if isinstance(methods, list) else [methods]
        found.append((str(parameters["path"]), tuple(str(m).upper() for m in listed)))
    return found


def only_internal_triggers(workflow: Mapping[str, Any]) -> bool:
    """Started only by n8n itself: as a sub-workflow or as an error workflow."""
    triggers = {str(node.get("type")) for node in graph.triggers(workflow)}
    return bool(triggers) and triggers <= INTERNAL_TRIGGERS


def activatable(workflow: Mapping[str, Any]) -> bool:
    """Whether n8n can activate (publish) the workflow: it has a trigger that is not passive."""
    return any(node.get("type") not in PASSIVE_TRIGGERS for node in graph.triggers(workflow))
