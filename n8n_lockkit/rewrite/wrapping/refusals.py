"""What wrapping refuses: a workflow n8n would not run, named at the place that is wrong."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from n8n_lockkit.primitives.formats import role_of
from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.graphs.graph import Workflow
from n8n_lockkit.rewrite.wrapping.configs import WrapError


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _node_problem(node: dict[str, object]) -> str | None:
    """What n8n's node schema refuses in one node, as far as wrapping depends on it."""
    position = node.get("position")
    if not (isinstance(position, list) and len(position) == 2 and all(map(_is_number, position))):
        return "has no position [x, y]"
    if not isinstance(node.get("type"), str):
        return "has no type"
    if "typeVersion" in node and not _is_number(node["typeVersion"]):
        return "has a typeVersion that is not a number"
    if not isinstance(node.get("parameters", {}), dict):
        return "has parameters that are not an object"
    return None


def _connection_problems(workflow: Workflow) -> Iterator[str]:
    for source, by_kind in graph.connections(workflow).items():
        for kind, outputs in by_kind.items():
            if not isinstance(outputs, list):
                yield f"connections[{source!r}][{kind!r}] is not a list of outputs"
                continue
            for index, links in enumerate(outputs):
                where = f"connections[{source!r}][{kind!r}][{index}]"
                if not isinstance(links, list):
                    yield f"{where} is not a list of links"
                elif not all(isinstance(x, dict) and isinstance(x.get("node"), str) for x in links):
                    yield f"{where} holds a link without a target node"


def check_shape(workflow: Workflow) -> None:
    """Refuse, with the place named, what n8n would not run and wrapping cannot handle.

    Call it on a normalised workflow: `null` outputs are fine by then.
    """
    for problem in _connection_problems(workflow):
        raise WrapError(
            problem,
            hint="n8n stores connections as {node: {main: [[{node, type, index}], …]}}; fix "
            "the file (`n8nlock validate` shows where)",
        )
    if not isinstance(workflow.get("settings", {}), dict):
        raise WrapError(
            "settings is not an object", hint='write it as {} or {"executionOrder": "v1"}'
        )
    names: set[str] = set()
    for index, node in enumerate(workflow.get("nodes") or []):
        name = node.get("name") if isinstance(node, dict) else None
        if not isinstance(name, str):
            raise WrapError(
                f"nodes[{index}] is not a node with a name",
                hint="every node is an object with name, type and position",
            )
        if name in names:
            raise WrapError(
                f"two nodes are named {name!r}",
                hint="rename one; n8n connects nodes by name (`n8nlock validate` shows both)",
            )
        names.add(name)
        refused = _node_problem(node)
        if refused:
            raise WrapError(
                f"node {name!r} {refused}",
                hint="n8n refuses such a node; open and save the workflow in n8n, or fix it "
                "by hand (`n8nlock validate` shows where)",
            )


def not_a_body_node(workflow: Workflow, target: str, node: dict[str, Any] | None) -> WrapError:
    """Why --renew-before cannot name `target` (its node, or None), and the nodes it can."""
    if node is None:
        why = "the workflow has no node of that name"
    elif graph.is_trigger(node):
        why = "that is a trigger; a renewal goes before a node of the body, which the lock guards"
    else:
        why = "that node is one n8nlock added"
    body = [
        repr(n["name"])
        for n in graph.nodes(workflow)
        if not role_of(n) and not graph.is_trigger(n) and n.get("type") != graph.STICKY_NOTE
    ]
    return WrapError(
        f"--renew-before {target!r}: {why}",
        hint=f"name a node of the body (the body's nodes: {', '.join(body) or 'none'})",
    )
