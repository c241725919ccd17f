"""Validate workflow files: the structure schema first, then every rule. Never prints."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from n8n_lockkit.errors import WorkflowFileError
from n8n_lockkit.findings import Finding, json_path
from n8n_lockkit.rules import RULES, WorkflowContext
from n8n_lockkit.workspace import Workspace, workflow_key


@dataclass(frozen=True)
class Report:
    files: tuple[str, ...]
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not self.findings


@cache
def _schema_validator() -> jsonschema.Draft202012Validator:
    text = resources.files("n8n_lockkit").joinpath("schemas/workflow.schema.json").read_text()
    return jsonschema.Draft202012Validator(json.loads(text))


def parse_workflow(text: str, display: str) -> tuple[dict[str, Any] | None, list[Finding]]:
    try:
        workflow = json.loads(text)
    except json.JSONDecodeError as err:
        where = f"line {err.lineno}, column {err.colno}"
        return None, [
            Finding(
                display,
                where,
                "json-syntax",
                f"not valid JSON: {err.msg}",
                "fix the JSON; an n8n export is one JSON object",
            )
        ]
    if not isinstance(workflow, dict):
        return None, [
            Finding(
                display,
                "$",
                "workflow-schema",
                "a workflow is a JSON object",
                "export the workflow from n8n, or start from `n8nlock init`",
            )
        ]
    return workflow, []


def check_workflow(
    workflow: dict[str, Any], *, display: str, key: str, env: Mapping[str, Any] | None = None
) -> list[Finding]:
    """All findings for one parsed workflow."""
    schema_errors = sorted(_schema_validator().iter_errors(workflow), key=lambda e: list(e.path))
    if schema_errors:
        return [
            Finding(
                display,
                json_path(list(e.path)),
                "workflow-schema",
                e.message,
                "n8n rejects workflows of this shape",
            )
            for e in schema_errors
        ]
    context = WorkflowContext(key=key, workflow=workflow, env=env)
    return [
        Finding(display, json_path(problem.where), rule.id, problem.message, problem.hint)
        for rule in RULES
        for problem in rule.check(context)
    ]


def check_file(path: Path, display: str, env: Mapping[str, Any] | None = None) -> list[Finding]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise WorkflowFileError(f"{display}: cannot read ({err})") from err
    workflow, findings = parse_workflow(text, display)
    if workflow is None:
        return findings
    return check_workflow(workflow, display=display, key=workflow_key(path), env=env)


def _expand(workspace: Workspace, paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.json") if p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise WorkflowFileError(
                f"{workspace.relative(path)}: no such file or folder",
                hint="give a workflow JSON file or a folder of them",
            )
    return files


def validate_files(
    workspace: Workspace, paths: Iterable[Path] = (), env: Mapping[str, Any] | None = None
) -> Report:
    """Findings for the given files and folders, or every workflow file of the workspace."""
    given = list(paths)
    files = _expand(workspace, given) if given else workspace.workflow_files()
    findings: list[Finding] = []
    for path in files:
        findings.extend(check_file(path, workspace.relative(path), env))
    return Report(tuple(workspace.relative(p) for p in files), tuple(findings))
