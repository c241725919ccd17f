"""A workflow file's JSON, or what is wrong with it, said the same way by every command.

A syntax error is located as `file:line:col` (what editors jump to). A file that holds a list
of workflows is what n8n's `export:workflow --all` writes without `--separate`: each workflow
must be a file of its own.

Example:
    >>> problem_of([{"nodes": []}, {"nodes": []}])
    'holds a list of 2 workflows, not one workflow'
"""

from __future__ import annotations

import json
from typing import Any

from n8n_lockkit.errors import WorkflowFileError

SPLIT_HINT = (
    "n8nlock takes one workflow per file: export them one file each (`n8n export:workflow "
    "--all --separate --output=workflows/`), or split the list into one file per workflow"
)
NOT_A_WORKFLOW_HINT = "export the workflow from n8n as JSON (one workflow per file)"


def problem_of(value: Any) -> str | None:
    """Why parsed JSON is not one n8n workflow, or None when it is one."""
    if isinstance(value, list):
        if value and all(isinstance(v, dict) and "nodes" in v for v in value):
            return f"holds a list of {len(value)} workflows, not one workflow"
        return "holds a JSON list, not an n8n workflow"
    if not isinstance(value, dict):
        return "is not a JSON object, so not an n8n workflow"
    if not isinstance(value.get("nodes"), list):
        return "is not an n8n workflow (it has no list of nodes)"
    return None


def hint_for(value: Any) -> str:
    return SPLIT_HINT if isinstance(value, list) else NOT_A_WORKFLOW_HINT


def syntax_location(err: json.JSONDecodeError) -> str:
    return f"{err.lineno}:{err.colno}"


def parse(text: str, display: str, *, hint: str) -> dict[str, Any]:
    """The workflow in `text`, or one WorkflowFileError that says where or what is wrong
    (`hint`: what to do about a syntax error)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise WorkflowFileError(
            f"{display}:{syntax_location(err)}: not valid JSON: {err.msg}", hint=hint
        ) from err
    problem = problem_of(value)
    if problem is not None:
        raise WorkflowFileError(f"{display} {problem}", hint=hint_for(value))
    workflow: dict[str, Any] = value
    return workflow
