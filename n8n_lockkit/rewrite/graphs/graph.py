"""Pure operations on workflow graphs (plain dicts, as n8n stores them).

n8n keys connections by node *name*: `connections[source]["main"][output] = [{node, type,
index}]`. Nothing here mutates its input.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from n8n_lockkit.rewrite.graphs import node_types

Workflow = dict[str, Any]
Node = dict[str, Any]
Link = dict[str, Any]

STICKY_NOTE = "n8n-nodes-base.stickyNote"


@dataclass(frozen=True)
class Entry:
    """Where an execution starts: one connected main output of a trigger."""

    node: str
    output: int
    output_count: int  # connected outputs of this node, for naming
    known: bool  # False: a node type n8n's catalogue does not know, taken as a trigger


def is_trigger(node: Node) -> bool:
    """Whether n8n's node catalogue says this node's type starts executions."""
    return node_types.is_trigger_type(str(node.get("type", "")))


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one: exports come in odd shapes."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """`value` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def nodes(workflow: Mapping[str, Any]) -> list[Node]:
    """The workflow's nodes that are objects with a name (exports can hold stranger things)."""
    found = as_list(workflow.get("nodes"))
    return [n for n in found if isinstance(n, dict) and isinstance(n.get("name"), str)]


def connections(workflow: Mapping[str, Any]) -> dict[str, Any]:
    return as_dict(workflow.get("connections"))


def _has_incoming(workflow: Mapping[str, Any]) -> set[str]:
    """Names of nodes any connection (main or AI) leads into."""
    names: set[str] = set()
    for by_kind in connections(workflow).values():
        for outputs_ in (by_kind or {}).values() if isinstance(by_kind, dict) else ():
            for links in outputs_ or ():
                names.update(
                    str(x["node"]) for x in links or () if isinstance(x, dict) and "node" in x
                )
    return names


def is_unknown_entry(workflow: Mapping[str, Any], node: Node, incoming: set[str]) -> bool:
    """A node of a type n8n does not ship (a community trigger, say) that nothing leads into
    but that leads somewhere: executions can only start there, so it is treated as a trigger."""
    node_type = str(node.get("type", ""))
    if node_types.is_known_type(node_type) or node["name"] in incoming:
        return False
    return any(outputs(workflow, node["name"]))


def triggers(workflow: Mapping[str, Any]) -> list[Node]:
    """Enabled nodes executions start from: catalogue triggers (by type, never by array
    order) and unknown-type entry nodes."""
    incoming = _has_incoming(workflow)
    return [
        n
        for n in nodes(workflow)
        if not n.get("disabled") and (is_trigger(n) or is_unknown_entry(workflow, n, incoming))
    ]


def entries(workflow: Mapping[str, Any]) -> list[Entry]:
    """Every connected main output of every enabled trigger, in trigger then output order."""
    found: list[Entry] = []
    for node in triggers(workflow):
        connected = [i for i, links in enumerate(outputs(workflow, node["name"])) if links]
        found.extend(Entry(node["name"], i, len(connected), is_trigger(node)) for i in connected)
    return found


def outputs(workflow: Mapping[str, Any], name: str) -> list[list[Link]]:
    """A node's main outputs; `null` outputs (older exports write them) read as unconnected."""
    by_kind = connections(workflow).get(name)
    main = by_kind.get("main") if isinstance(by_kind, dict) else None
    if not isinstance(main, list):
        return []
    return [
        [x for x in links if isinstance(x, dict) and isinstance(x.get("node"), str)]
        if isinstance(links, list)
        else []
        for links in main
    ]


def targets(workflow: Mapping[str, Any], name: str) -> Iterator[str]:
    for links in outputs(workflow, name):
        for link_ in links:
            yield str(link_["node"])


def output_count(node: Node) -> int:
    """How many main outputs a node has: known multi-output nodes, plus an error output."""
    parameters = as_dict(node.get("parameters"))
    node_type = node.get("type", "")
    count = 1
    if node_type in ("n8n-nodes-base.if", "n8n-nodes-base.splitInBatches"):
        count = 2
    elif node_type == "n8n-nodes-base.compareDatasets":
        count = 4
    elif node_type == "n8n-nodes-base.switch":
        count = _switch_outputs(node)
    elif node_type == "n8n-nodes-base.filter" and as_dict(parameters.get("options")).get(
        "allowFailedItems"
    ):
        count = 2
    if node.get("onError") == "continueErrorOutput":
        count += 1
    return count


def input_count(node: Node) -> int:
    """How many main inputs a node has: a Merge has `numberInputs` (2 unless set), others 1."""
    if node.get("type") != "n8n-nodes-base.merge":
        return 1
    count = as_dict(node.get("parameters")).get("numberInputs", 2)
    return count if isinstance(count, int) else 2


def _switch_outputs(node: Node) -> int:
    parameters = as_dict(node.get("parameters"))
    version = node.get("typeVersion", 1)
    if isinstance(version, (int, float)) and version < 3:
        return 4
    if parameters.get("mode") == "expression":
        outputs_ = parameters.get("numberOutputs", 4)
        return outputs_ if isinstance(outputs_, int) else 4  # an expression: n8n decides
    rules = as_dict(parameters.get("rules")).get("values")
    extra = as_dict(parameters.get("options")).get("fallbackOutput") == "extra"
    return (len(rules) if isinstance(rules, list) else 0) + (1 if extra else 0)


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
    names = [n["name"] for n in nodes(workflow)]
    return {name for name in names if name in reachable(workflow, targets(workflow, name))}


def terminal_outputs(workflow: Workflow, starts: Iterable[str]) -> list[tuple[str, int]]:
    """(node, output) pairs where an execution path ends: unconnected outputs of reachable
    nodes that are not on a loop, in execution order. The starts themselves are not ends:
    their outputs are where the wrapping goes."""
    by_name = {n["name"]: n for n in nodes(workflow)}
    starts = list(starts)
    looping = in_cycles(workflow)
    found = []
    for name in reachable(workflow, starts):
        node = by_name.get(name)
        if node is None or node.get("type") == STICKY_NOTE or name in looping or name in starts:
            continue
        connected = outputs(workflow, name)
        count = 1 if node.get("disabled") else max(output_count(node), len(connected))
        for index in range(count):
            if index >= len(connected) or not connected[index]:
                found.append((name, index))
    return found


def link(target: str, index: int = 0) -> Link:
    return {"node": target, "type": "main", "index": index}


def trim_outputs(main: list[list[Link] | None]) -> list[list[Link]]:
    """Drop trailing unconnected outputs: n8n reads a missing output as unconnected, and a
    `null` one (older exports write them) as an empty one."""
    trimmed = [[] if links is None else links for links in main]
    while trimmed and not trimmed[-1]:
        trimmed.pop()
    return trimmed


def normalise(workflow: Workflow) -> None:
    """Write connections the one way n8n reads them, in place: `null` outputs become empty,
    trailing unconnected main outputs go, and so does a source left with nothing."""
    found = workflow.get("connections")
    conns: dict[str, Any] = found if isinstance(found, dict) else {}
    workflow["connections"] = conns
    for name in list(conns):
        by_kind = conns[name]
        if not isinstance(by_kind, dict):
            del conns[name]
            continue
        for kind, outputs_ in by_kind.items():
            if outputs_ is None or isinstance(outputs_, list):
                by_kind[kind] = [[] if links is None else links for links in outputs_ or []]
        if isinstance(by_kind.get("main"), list):
            by_kind["main"] = trim_outputs(by_kind["main"])
            if not by_kind["main"]:
                del by_kind["main"]
        if not by_kind:
            del conns[name]


def shift_body(workflow: Workflow, dx: int) -> None:
    """Move every node but the triggers `dx` to the right, in place.

    A node whose x is not a whole number stays: x + dx rounds for such floats (184.57666135990007
    + 440 - 440 is not 184.57666135990007), so unwrap could not put it back where it was. Whole
    numbers stay whole under the shift, so wrap and unwrap pick the same nodes.
    """
    starts = {n["name"] for n in triggers(workflow)}
    for node in nodes(workflow):
        if is_trigger(node) or node["name"] in starts or "position" not in node:
            continue
        x = node["position"][0]
        if isinstance(x, int) or (isinstance(x, float) and x.is_integer()):
            node["position"] = [x + dx, node["position"][1]]
