"""An error workflow of the user's own that runs n8nlock's cleanup (docs/safety.md#your-own-
error-workflow): n8n runs one error workflow per workflow, and it cannot call the cleanup
handler as a sub-workflow (the handler starts from an Error Trigger only), so a user who keeps
their own copies the handler's nodes into it. Wrapping then keeps that error workflow."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.wrapping.settings import HANDLER_ID
from n8n_lockkit.workspace.layout import Workspace

_REFERENCE = re.compile(r"\{\{@:?env:workflows\.([A-Za-z0-9_-]+)\.id\}\}")


@cache
def _cleanup_scripts() -> frozenset[str]:
    """The code of every Code node of the cleanup handler, as n8nlock ships it."""
    from n8n_lockkit.primitives.cleanup import error_handler_lock_cleanup

    return frozenset(_scripts(error_handler_lock_cleanup()))


def _scripts(workflow: dict[str, Any]) -> list[str]:
    return [
        str(graph.as_dict(node.get("parameters")).get("jsCode"))
        for node in graph.nodes(workflow)
        if node.get("type") == "n8n-nodes-base.code" and not node.get("disabled")
    ]


def _read(path: Path) -> dict[str, Any]:
    try:
        workflow = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return workflow if isinstance(workflow, dict) else {}


def _file_of(workspace: Workspace, target: str) -> Path | None:
    """The workspace file of the error workflow `target` names: by its placeholder's key, or
    by the id an n8n download carries."""
    match = _REFERENCE.fullmatch(target)
    files = workspace.workflow_files_by_key()
    if match:
        return files.get(match.group(1))
    return next((p for p in files.values() if _read(p).get("id") == target), None)


def runs_cleanup(workspace: Workspace, workflow: dict[str, Any]) -> bool:
    """True when the workflow names an error workflow of its own (not the handler) whose file
    in the workspace runs every step of the cleanup handler."""
    target = graph.as_dict(workflow.get("settings")).get("errorWorkflow")
    if not isinstance(target, str) or target in ("", HANDLER_ID):
        return False
    path = _file_of(workspace, target)
    return path is not None and _cleanup_scripts() <= set(_scripts(_read(path)))
