"""Validate workflow files: every selected rule, the structure schema among them. Never prints."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from n8n_lockkit.check.findings import Finding, Severity
from n8n_lockkit.check.lintconfig import LintSettings
from n8n_lockkit.check.rules import RULE_IDS, RULES, Rule, WorkflowContext
from n8n_lockkit.errors import WorkflowFileError
from n8n_lockkit.jsonpath import json_path
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


def _finding(display: str, where: str, rule_id: str, message: str, hint: str) -> Finding:
    rule = _RULE_BY_ID[rule_id]
    return Finding(display, where, rule.id, rule.severity, message, hint)


def parse_workflow(text: str, display: str) -> tuple[dict[str, Any] | None, list[Finding]]:
    try:
        workflow = json.loads(text)
    except json.JSONDecodeError as err:
        where = f"line {err.lineno}, column {err.colno}"
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
                "a workflow is a JSON object",
                "export the workflow from n8n, or start from `n8nlock init`",
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
) -> list[Finding]:
    """All findings of `rules` for one parsed workflow, whatever its shape."""
    context = WorkflowContext(key=key, workflow=workflow, env=env)
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
) -> list[Finding]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise WorkflowFileError(f"{display}: cannot read ({err})") from err
    workflow, findings = parse_workflow(text, display)
    if workflow is None:
        return [f for f in findings if f.rule in enabled]
    rules = [rule for rule in RULES if rule.id in enabled]
    return check_workflow(workflow, display=display, key=workflow_key(path), env=env, rules=rules)


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
    files = _expand(workspace, given) if given else workspace.workflow_files()
    enabled = settings.enabled()
    displays = tuple(workspace.relative(p) for p in files)
    findings: list[Finding] = []
    for path, display in zip(files, displays, strict=True):
        findings.extend(check_file(path, display, env, enabled))
    return Report(displays, tuple(findings), settings.strict)
