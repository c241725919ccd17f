"""Everything n8nlock shows: plans, findings, warnings and errors."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click

from n8n_lockkit.check.findings import Severity
from n8n_lockkit.errors import LockkitError
from n8n_lockkit.workspace.layout import Workspace
from n8n_lockkit.workspace.plan import Action, FileChange, Plan, SettingChange

if TYPE_CHECKING:
    # Only their types: the modules pull in jsonschema and requests.
    from n8n_lockkit.check.validate import Report
    from n8n_lockkit.remote.credentials import RedisPlan
    from n8n_lockkit.remote.push import PushResult

_VERB_COLOURS = {
    Action.CREATE: "green",
    Action.UPDATE: "yellow",
    Action.IDENTICAL: "cyan",
    Action.KEEP: "red",
}


def show_error(error: LockkitError, fmt: str = "text") -> None:
    """`Error:` and `Hint:` on stderr; with -o json, one JSON object on stdout instead (where
    the command's document would have been), docs/exit-codes.md. Called in the group's
    context, which shares `meta` with the command's."""
    if fmt == "json" and not _printed_json():
        echo_json(
            {
                "error": {
                    "message": error.message,
                    "hint": error.hint,
                    "exit_code": int(error.exit_code),
                }
            }
        )
        return
    click.secho("Error: ", fg="red", bold=True, nl=False, err=True)
    click.echo(error.message, err=True)
    if error.hint:
        click.echo(f"Hint: {error.hint}", err=True)


_JSON_PRINTED = "n8nlock.json_printed"


def echo_json(document: object) -> None:
    """One JSON document on stdout (what -o json prints)."""
    click.echo(json.dumps(document, indent=2))
    context = click.get_current_context(silent=True)
    if context is not None:
        context.meta[_JSON_PRINTED] = True


def _printed_json() -> bool:
    """Whether this run printed its JSON document already (an error after it, such as push's
    summary of failed workflows that the document lists, goes to stderr as text then)."""
    context = click.get_current_context(silent=True)
    return context is not None and bool(context.meta.get(_JSON_PRINTED))


def warn(message: str) -> None:
    click.secho("Warning: ", fg="yellow", nl=False, err=True)
    click.echo(message, err=True)


def _verb(change: FileChange) -> str:
    action = change.action
    return click.style(f"{action.value:>10}", fg=_VERB_COLOURS[action], bold=True)


def _shown(value: Any) -> str:
    """A setting's value in a line of text: words as they are, other text quoted."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_shown(v)}" for k, v in value.items())
    if isinstance(value, str) and not value.replace("-", "").replace("_", "").isalnum():
        return repr(value)
    return str(value)


def setting_line(change: SettingChange) -> str:
    """`orders: lock on_busy skip → wait`; a new or removed part with all its settings."""
    if not change.setting:
        return f"{change.subject} ({_shown(change.after or change.before)})"
    return f"{change.subject} {change.setting} {_shown(change.before)} → {_shown(change.after)}"


def show_plan(workspace: Workspace, plan: Plan, *, dry_run: bool, fmt: str) -> None:
    """Copier-style verbs on stderr (or one JSON document on stdout), the settings the plan
    changes, and its warnings."""
    if fmt == "json":
        echo_json(plan_as_dict(workspace, plan, dry_run=dry_run))
    else:
        for change in plan.changes:
            click.echo(f"{_verb(change)}  {workspace.relative(change.path)}", err=True)
        for setting in plan.setting_changes:
            progress(setting.verb, setting_line(setting))
    for message in plan.messages:
        warn(message)
    if fmt != "json" and dry_run:
        click.echo("dry run: nothing was written", err=True)
    elif fmt != "json" and not plan.has_writes:
        click.echo("nothing to do: everything is up to date", err=True)


def plan_as_dict(workspace: Workspace, plan: Plan, *, dry_run: bool) -> dict[str, Any]:
    document: dict[str, Any] = {
        "dry_run": dry_run,
        "changes": [
            {"path": workspace.relative(c.path), "action": c.action.value} for c in plan.changes
        ],
        "warnings": list(plan.messages),
    }
    if plan.settings is not None:
        document["settings"] = dict(plan.settings)
        document["changed"] = [c.as_dict() for c in plan.setting_changes]
    return document


_SEVERITY_COLOURS = {Severity.ERROR: "red", Severity.WARNING: "yellow"}


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def show_report(report: Report, fmt: str) -> None:
    """`file::$.path: severity: message [rule]` lines on stdout, the counts on stderr."""
    errors, warnings = report.count(Severity.ERROR), report.count(Severity.WARNING)
    if fmt == "json":
        document = {
            "status": "ok" if report.ok else "fail",
            "strict": report.strict,
            "counts": {"error": errors, "warning": warnings},
            "files": list(report.files),
            "findings": [f.as_dict() for f in report.findings],
        }
        echo_json(document)
        return
    for finding in report.findings:
        # A syntax error's line:col follows the file as editors read it; a JSONPath after ::
        joint = ":" if finding.rule == "json-syntax" else "::"
        location = click.style(f"{finding.path}{joint}{finding.location}", fg="yellow")
        severity = click.style(finding.severity.value, fg=_SEVERITY_COLOURS[finding.severity])
        click.echo(f"{location}: {severity}: {finding.message} [{finding.rule}]")
    summary = f"{len(report.files)} file(s) checked, {len(report.findings)} problem(s)"
    if not report.findings:
        summary += ": all good"
    else:
        summary += f": {_counted(errors, 'error')}, {_counted(warnings, 'warning')}"
        if warnings and report.ok:
            summary += " (warnings fail the run only with --strict)"
    click.echo(summary, err=True)


_PROGRESS_COLOURS = {
    "create": "green",
    "update": "yellow",
    "publish": "blue",
    "failed": "red",
    "remove": "red",
}


def progress(verb: str, text: str) -> None:
    colour = _PROGRESS_COLOURS.get(verb, "cyan")
    click.echo(f"{click.style(f'{verb:>10}', fg=colour, bold=True)}  {text}", err=True)


def show_push(result: PushResult, *, dry_run: bool, fmt: str) -> None:
    """One JSON document on stdout, or a summary line after the progress lines on stderr."""
    if fmt == "json":
        workflows = [
            {
                "key": o.key,
                "action": o.action,
                "id": o.workflow_id,
                "status": o.status,
                "published": o.published,
                "error": o.error or None,
                "hint": o.hint or None,
            }
            for o in result.outcomes
        ]
        echo_json({"dry_run": dry_run, "workflows": workflows})
        return
    # A failed workflow counts as failed, a dependency that was only published as published.
    counts = Counter(o.action for o in result.outcomes if o.status == "ok" and o.action != "none")
    parts = [f"{n} {a}" for a, n in sorted(counts.items())]
    parts.append(f"{sum(o.published for o in result.outcomes)} published")
    for status in ("failed", "skipped"):
        if count := sum(o.status == status for o in result.outcomes):
            parts.append(f"{count} {status}")
    prefix = "dry run, nothing sent: " if dry_run else ""
    click.echo(f"{prefix}{len(result.outcomes)} workflow(s): {', '.join(parts)}", err=True)


_ADDRESS_MISSING = (
    "where Redis is was not recorded, so `n8nlock locks`, `release`, `reap` and `stats` cannot "
    "reach it: run this again with --host H [--port P] [--database N] [--ssl] "
    "[--password-env VAR], or give those commands --redis-url"
)


def show_credential(planned: RedisPlan, env_path: str, *, dry_run: bool, fmt: str) -> None:
    """redis-credential's verbs on stderr (or one JSON document on stdout), and its warning."""
    settings = planned.settings
    warnings = [*planned.warnings, *([_ADDRESS_MISSING] if planned.address == "missing" else [])]
    if fmt == "json":
        credential = {"action": planned.action, "id": planned.credential_id or None}
        echo_json(
            {
                "dry_run": dry_run,
                "path": env_path,
                "changed": planned.changed,
                "credential": {**credential, "name": planned.name},
                "address": {
                    "action": planned.address,
                    "redis": settings.as_record() if settings.host else None,
                },
                "warnings": warnings,
            }
        )
    else:
        credential_id = planned.credential_id or "(the id n8n gives it)"
        progress(planned.action, f"credentials.redis = {credential_id} in {env_path}")
        if planned.address == "record":
            where = f"{settings.host}:{settings.port}/{settings.database}"
            progress("record", f"redis = {where} in {env_path}")
    for message in warnings:
        warn(message)
    if fmt != "json" and dry_run:
        click.echo("dry run: nothing was sent or written", err=True)


def show_lines(lines: Iterable[str]) -> None:
    for line in lines:
        click.echo(line)
