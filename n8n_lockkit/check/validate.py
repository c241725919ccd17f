"""Validate workflow files: every selected rule, the structure schema among them. Never prints."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from n8n_lockkit.check.findings import Finding, Severity
from n8n_lockkit.check.lintconfig import LintSettings
from n8n_lockkit.check.rules import RULE_IDS, RULES, Rule, WorkflowContext
from n8n_lockkit.errors import WorkflowFileError
from n8n_lockkit.jsonpath import json_path
from n8n_lockkit.workspace import placeholders, workflow_json
from n8n_lockkit.workspace.layout import Workspace, workflow_key

_RULE_BY_ID = {rule.id: rule for rule in RULES}


@dataclass(frozen=True)
class Report:
    files: tuple[str, ...]
    findings: tuple[Finding, ...]
    strict: bool = False  # warnings fail the run too

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity is severity)

    @property
    def ok(self) -> bool:
        """No finding that fails the run: no error, and no warning when strict."""
        failing = {Severity.ERROR, Severity.WARNING} if self.strict else {Severity.ERROR}
        return not any(f.severity in failing for f in self.findings)


@dataclass(frozen=True)
class WorkspaceView:
    """What a file's checks see of the other workflow files: a push of the workspace sends
    them all (so their ids will exist), and what each references."""

    keys: frozenset[str] = frozenset()
    references: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, files: Iterable[Path]) -> WorkspaceView:
        references = {}
        for path in files:
            key = workflow_key(path)
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = ""  # check_file reports it
            references[key] = placeholders.workflow_references(text, key)
        return cls(frozenset(references), references)


def _finding(display: str, where: str, rule_id: str, message: str, hint: str) -> Finding:
    rule = _RULE_BY_ID[rule_id]
    return Finding(display, where, rule.id, rule.severity, message, hint)


def parse_workflow(text: str, display: str) -> tuple[dict[str, Any] | None, list[Finding]]:
    try:
        workflow = json.loads(text)
    except json.JSONDecodeError as err:
        where = workflow_json.syntax_location(err)  # line:col, shown as file:line:col
        return None, [
            _finding(
                display,
                where,
                "json-syntax",
                f"not valid JSON: {err.msg}",
                "fix the JSON; an n8n export is one JSON object",
            )
        ]
    if not isinstance(workflow, dict):
        return None, [
            _finding(
                display,
                "$",
                "workflow-schema",
                f"the file {workflow_json.problem_of(workflow)}",
                workflow_json.hint_for(workflow),
            )
        ]
    return workflow, []


def check_workflow(
    workflow: dict[str, Any],
    *,
    display: str,
    key: str,
    env: Mapping[str, Any] | None = None,
    rules: Iterable[Rule] = RULES,
    workspace: WorkspaceView | None = None,
) -> list[Finding]:
    """All findings of `rules` for one parsed workflow, whatever its shape; `workspace`: the
    other workflow files a push sends with it."""
    seen = workspace or WorkspaceView()
    context = WorkflowContext(
        key=key, workflow=workflow, env=env, pushed=seen.keys, references=seen.references
    )
    return [
        Finding(display, json_path(p.where), rule.id, rule.severity, p.message, p.hint)
        for rule in rules
        for p in rule.check(context)
    ]


def check_file(
    path: Path,
    display: str,
    env: Mapping[str, Any] | None = None,
    enabled: Collection[str] = RULE_IDS,
    workspace: WorkspaceView | None = None,
) -> list[Finding]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise WorkflowFileError(f"{display}: cannot read ({err})") from err
    workflow, findings = parse_workflow(text, display)
    if workflow is None:
        return [f for f in findings if f.rule in enabled]
    rules = [rule for rule in RULES if rule.id in enabled]
    key = workflow_key(path)
    return check_workflow(
        workflow, display=display, key=key, env=env, rules=rules, workspace=workspace
    )


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
    workspace: Workspace,
    paths: Iterable[Path] = (),
    env: Mapping[str, Any] | None = None,
    settings: LintSettings | None = None,
) -> Report:
    """Findings for the given files and folders, or every workflow file of the workspace."""
    settings = settings or LintSettings()
    given = list(paths)
    # The workspace's own files first: two of them for one key are an error, named or not.
    # `push` sends them all, so a reference to one of them needs no id yet.
    workspace_files = workspace.workflow_files()
    view = WorkspaceView.of(workspace_files)
    files = _expand(workspace, given) if given else workspace_files
    enabled = settings.enabled()
    displays = tuple(workspace.relative(p) for p in files)
    findings: list[Finding] = []
    for path, display in zip(files, displays, strict=True):
        findings.extend(check_file(path, display, env, enabled, view))
    return Report(displays, tuple(findings), settings.strict)
