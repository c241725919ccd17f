"""Pure operations on workflow graphs (plain dicts, as n8n stores them).

n8n keys connections by node *name*: `connections[source]["main"][output] = [{node, type,
index}]`. Nothing here mutates its input.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

Workflow = dict[str, Any]
Node = dict[str, Any]
Link = dict[str, Any]

STICKY_NOTE = "n8n-nodes-base.stickyNote"
_TRIGGER_TYPES = frozenset(
    {
        "n8n-nodes-base.webhook",
        "n8n-nodes-base.cron",
        "n8n-nodes-base.interval",
        "n8n-nodes-base.start",
    }
)


def is_trigger(node: Node) -> bool:
    node_type = str(node.get("type", ""))
    return node_type in _TRIGGER_TYPES or node_type.endswith("Trigger")


def triggers(workflow: Mapping[str, Any]) -> list[Node]:
    """Trigger nodes by type (never by array order), enabled ones only."""
    return [n for n in workflow.get("nodes", []) if is_trigger(n) and not n.get("disabled")]


def outputs(workflow: Workflow, name: str) -> list[list[Link]]:
    main = workflow.get("connections", {}).get(name, {}).get("main", [])
    return [list(targets or []) for targets in main]


def targets(workflow: Workflow, name: str) -> Iterator[str]:
    for links in outputs(workflow, name):
        for link in links:
            yield str(link["node"])


def output_count(node: Node) -> int:
    """How many main outputs a node has: known multi-output nodes, plus an error output."""
    parameters = node.get("parameters", {})
    node_type = node.get("type", "")
    count = 1
    if node_type in ("n8n-nodes-base.if", "n8n-nodes-base.splitInBatches"):
        count = 2
    elif node_type == "n8n-nodes-base.compareDatasets":
        count = 4
    elif node_type == "n8n-nodes-base.switch":
        count = _switch_outputs(node)
    elif node_type == "n8n-nodes-base.filter" and parameters.get("options", {}).get(
        "allowFailedItems"
    ):
        count = 2
    if node.get("onError") == "continueErrorOutput":
        count += 1
    return count


def _switch_outputs(node: Node) -> int:
    parameters = node.get("parameters", {})
    if float(node.get("typeVersion", 1)) < 3:
        return 4
    if parameters.get("mode") == "expression":
        return int(parameters.get("numberOutputs", 4))
    rules = parameters.get("rules", {}).get("values", [])
    extra = parameters.get("options", {}).get("fallbackOutput") == "extra"
    return len(rules) + (1 if extra else 0)


def reachable(workflow: Workflow, starts: Iterable[str]) -> list[str]:
    """Names reachable from `starts`, in n8n's depth-first execution order."""
    seen: list[str] = []
    stack = list(reversed(list(starts)))
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.append(name)
        stack.extend(reversed(list(targets(workflow, name))))
    return seen


def in_cycles(workflow: Workflow) -> set[str]:
    """Names of nodes on a loop (a node that can reach itself)."""
    names = [n["name"] for n in workflow.get("nodes", [])]
    return {name for name in names if name in reachable(workflow, targets(workflow, name))}


def terminal_outputs(workflow: Workflow, starts: Iterable[str]) -> list[tuple[str, int]]:
    """(node, output) pairs where an execution path ends: unconnected outputs of reachable
    nodes that are not on a loop, in execution order."""
    by_name = {n["name"]: n for n in workflow.get("nodes", [])}
    looping = in_cycles(workflow)
    found = []
    for name in reachable(workflow, starts):
        node = by_name.get(name)
        if node is None or node.get("type") == STICKY_NOTE or name in looping:
            continue
        connected = outputs(workflow, name)
        count = 1 if node.get("disabled") else max(output_count(node), len(connected))
        for index in range(count):
            if index >= len(connected) or not connected[index]:
                found.append((name, index))
    return found


def link(target: str, index: int = 0) -> Link:
    return {"node": target, "type": "main", "index": index}


def trim_outputs(main: list[list[Link]]) -> list[list[Link]]:
    """Drop trailing unconnected outputs: n8n reads a missing output as unconnected."""
    trimmed = [list(links) for links in main]
    while trimmed and not trimmed[-1]:
        trimmed.pop()
    return trimmed


def normalise(workflow: Workflow) -> None:
    """Trim trailing unconnected outputs in place (n8n reads them the same)."""
    connections = workflow.setdefault("connections", {})
    for name in list(connections):
        main = connections[name].get("main")
        if main is not None:
            connections[name]["main"] = trim_outputs(main)
            if not connections[name]["main"] and len(connections[name]) == 1:
                del connections[name]


def shift_body(workflow: Workflow, dx: int) -> None:
    """Move every node but the triggers `dx` to the right, in place."""
    for node in workflow["nodes"]:
        if not is_trigger(node) and "position" in node:
            node["position"] = [node["position"][0] + dx, node["position"][1]]
