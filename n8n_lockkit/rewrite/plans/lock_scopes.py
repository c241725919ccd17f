"""Which static scopes the workspace's workflows lock, so that a scope no workflow uses any
more can leave the env files' `lockScopes`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from n8n_lockkit.errors import LockkitError
from n8n_lockkit.primitives.catalogue import LOCK_ACQUISITION, PRIMITIVES
from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.wrapping.configs import LockConfig
from n8n_lockkit.rewrite.wrapping.scope import parse_scope
from n8n_lockkit.rewrite.wrapping.unwrap import read_configs, read_guard
from n8n_lockkit.workspace.layout import Workspace, workflow_key

_EXECUTE_WORKFLOW = "n8n-nodes-base.executeWorkflow"


def static_scope(expression: object) -> str | None:
    """The scope an expression always evaluates to, or None (dynamic, or not a scope)."""
    if not isinstance(expression, str):
        return None
    try:
        return parse_scope(expression).static
    except LockkitError:
        return None


def _direct_calls(workflow: dict[str, Any]) -> Iterator[object]:
    """The scope inputs of a workflow's own calls of lock_acquisition."""
    for node in graph.nodes(workflow):
        if node.get("type") != _EXECUTE_WORKFLOW:
            continue
        parameters = graph.as_dict(node.get("parameters"))
        target = parameters.get("workflowId")
        target = target.get("value") if isinstance(target, dict) else target
        if isinstance(target, str) and f"workflows.{LOCK_ACQUISITION.key}.id" in target:
            inputs = graph.as_dict(graph.as_dict(parameters.get("workflowInputs")).get("value"))
            yield inputs.get("scope")


def _scopes_of(workflow: dict[str, Any]) -> set[str]:
    lock, _ = read_configs(workflow)
    configs = (lock, read_guard(workflow))
    expressions: list[object] = [c.scope for c in configs if c is not None]
    expressions += _direct_calls(workflow)
    return {scope for e in expressions if (scope := static_scope(e)) is not None}


def scope_in_use(workspace: Workspace, scope: str, key: str, *wrapped: LockConfig | None) -> bool:
    """Whether `scope` is still locked: by `wrapped` (what workflow `key` is wrapped with
    now), or by another workflow of the workspace (wrapped, or calling lock_acquisition).
    A file that cannot be read counts as using it: a scope is taken out only when sure."""
    if scope in {static_scope(c.scope) for c in wrapped if c is not None}:
        return True
    for path in workspace.workflow_files():
        other = workflow_key(path)
        if other == key or other in PRIMITIVES:
            continue
        try:
            workflow = json.loads(path.read_text(encoding="utf-8"))
            if scope in _scopes_of(graph.as_dict(workflow)):
                return True
        except (OSError, ValueError, LookupError, TypeError, AttributeError, LockkitError):
            return True
    return False
