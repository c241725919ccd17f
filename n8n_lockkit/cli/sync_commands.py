"""Commands that bring n8n's side into view: pull, diff."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from n8n_lockkit.cli.common_options import (
    AppContext,
    dry_run_option,
    env_option,
    one_env,
    output_option,
    pass_app,
)
from n8n_lockkit.cli.completion import workflow_keys
from n8n_lockkit.cli.output import echo_json, plan_as_dict, progress, warn
from n8n_lockkit.errors import ExitCode

if TYPE_CHECKING:
    from n8n_lockkit.remote.diff import WorkflowDiff
    from n8n_lockkit.remote.pull import PullResult
    from n8n_lockkit.workspace.layout import Workspace


@click.command("pull")
@click.argument("selectors", nargs=-1, metavar="[ID|NAME|KEY]...", shell_complete=workflow_keys)
@env_option("Env to pull from")
@click.option("--all", "pull_all", is_flag=True, help="Pull every workflow on the instance.")
@click.option(
    "--key",
    metavar="KEY",
    help="File key for the one workflow pulled (default: its registered key, else from its name).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace local files changed since the last push or pull with n8n's version.",
)
@click.option(
    "--record-credentials",
    is_flag=True,
    help="Record the credentials the workflows use that the env file does not name, as "
    "credentials.<type>.",
)
@dry_run_option
@output_option()
@pass_app
def pull_command(
    app: AppContext,
    selectors: Sequence[str],
    env_name: str | None,
    pull_all: bool,
    key: str | None,
    force: bool,
    record_credentials: bool,
    dry_run: bool,
    fmt: str,
) -> None:
    """Write workflows from the env's n8n instance into the files of their keys in workflows/.

    Name workflows by id, by exact name, or by a key the env registers; with none, pull
    every workflow the env registers; --all takes every workflow on the instance. Each key
    and id is registered in the env file; a workflow without a key gets the one its name
    gives (as a file name does: docs/concepts.md#workflow-files), and a new file is
    workflows/<key>.template.json. The file is what you would write: what the API
    adds (the workflow's id, versionId, active, meta, timestamps, tags, pinData, ...) is
    dropped, and the ids of credentials the env names and of workflows it registers become
    {{@:env:...}} placeholders, so the same file pushes to every env. A credential the env
    does not name stops the pull (--record-credentials records it). Nodes n8n holds as
    the local file has them keep the file's text, n8nlock's own nodes included.

    A local file changed since the last push or pull, that n8n does not hold either, is
    not replaced (exit 7) unless --force. Pulling twice writes nothing the second time.

    \b
    Example:
        n8nlock pull --env dev "Sync orders" --key orders
        n8nlock pull --env dev --all --dry-run
        n8nlock pull --env prod --record-credentials
    """
    from n8n_lockkit.remote import connection, pull
    from n8n_lockkit.workspace import plan

    workspace = app.workspace()
    env = one_env(workspace, env_name)
    request = pull.Request(tuple(selectors), pull_all, key, force, record_credentials)
    client = connection.client_for(env)
    try:
        result = pull.Puller(workspace, env, client).plan(request)
    finally:
        client.close()
    _show_pull(workspace, env.name, result, dry_run=dry_run, fmt=fmt)
    if not dry_run:
        plan.apply(result.plan, workspace.root)


def _show_pull(
    workspace: Workspace, env: str, result: PullResult, *, dry_run: bool, fmt: str
) -> None:
    if fmt == "json":
        document = {
            "dry_run": dry_run,
            "env": env,
            "workflows": [
                {
                    "key": p.key,
                    "id": p.workflow_id,
                    "name": p.name,
                    "action": p.action,
                    "path": workspace.relative(p.path),
                    "forced": p.forced,
                }
                for p in result.workflows
            ],
            "credentials": [
                {"name": name, "type": c.kind, "id": c.credential_id, "credential": c.name}
                for name, c in result.credentials
            ],
            "changes": plan_as_dict(workspace, result.plan, dry_run=dry_run)["changes"],
            "warnings": result.warnings,
        }
        echo_json(document)
        return
    for pulled in result.workflows:
        where = f"{workspace.relative(pulled.path)} ({pulled.workflow_id}, {pulled.name!r})"
        progress(pulled.action, where)
        if pulled.forced:
            warn(f"{workspace.relative(pulled.path)}: local changes replaced (--force)")
    for name, credential in result.credentials:
        progress(
            "record",
            f"credentials.{name} = {credential.credential_id} ({credential.name!r}) in "
            f"envs/{env}.yml",
        )
    for message in result.warnings:
        warn(message)
    env_change = next(c for c in result.plan.changes if c.path.parent.name == "envs")
    if env_change.writes:
        progress("update", workspace.relative(env_change.path))
    counts = Counter(p.action for p in result.workflows)
    summary = ", ".join(f"{n} {a}" for a, n in sorted(counts.items())) or "nothing to pull"
    prefix = "dry run, nothing written: " if dry_run else ""
    click.echo(f"{prefix}{len(result.workflows)} workflow(s): {summary}", err=True)


@click.command("diff")
@click.argument("keys", nargs=-1, metavar="[KEY]...", shell_complete=workflow_keys)
@env_option("Env to compare with")
@output_option()
@pass_app
def diff_command(app: AppContext, keys: Sequence[str], env_name: str | None, fmt: str) -> None:
    """Show what push would change on the env's n8n, node by node; send nothing.

    Each workflow file (or each KEY) is filled in for the env, as push would send it, and
    compared with what n8n holds: nodes added, removed or changed (with the fields that
    differ), connections, settings and the name. What n8n adds on its own (node ids,
    defaults) is no difference. Exit 1 when anything differs, so CI can check for drift.

    \b
    Example:
        n8nlock diff --env prod
        n8nlock diff --env prod orders -o json
    """
    from n8n_lockkit.remote import connection, diff

    workspace = app.workspace()
    env = one_env(workspace, env_name)
    client = connection.client_for(env)
    try:
        diffs = diff.diff_workspace(workspace, env, client, keys)
    finally:
        client.close()
    _show_diff(env.name, diffs, fmt)
    if any(d.differs for d in diffs):
        raise SystemExit(int(ExitCode.FINDINGS))


_STATUS_COLOURS = {"identical": "cyan", "update": "yellow", "create": "green", "missing": "red"}
_MARKS = {"node-added": "+", "node-removed": "-"}


def _show_diff(env: str, diffs: Sequence[WorkflowDiff], fmt: str) -> None:
    if fmt == "json":
        document = {
            "env": env,
            "differs": any(d.differs for d in diffs),
            "workflows": [
                {
                    "key": d.key,
                    "id": d.workflow_id or None,
                    "status": d.status,
                    "changes": [c.as_dict() for c in d.changes],
                }
                for d in diffs
            ],
        }
        echo_json(document)
        return
    for entry in diffs:
        status = click.style(entry.status, fg=_STATUS_COLOURS[entry.status])
        click.echo(f"{entry.key} ({entry.workflow_id or 'not on n8n'}): {status}")
        for change in entry.changes:
            click.echo(f"    {_MARKS.get(change.kind, '~')} {_described(change)}")
    counts = Counter(d.status for d in diffs)
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no workflow files"
    click.echo(f"{len(diffs)} workflow(s) against {env}: {summary}", err=True)


def _described(change: Any) -> str:
    kind = change.kind
    if kind in ("node-added", "node-removed"):
        return f"node {change.node!r}"
    if kind == "node-changed":
        return f"node {change.node!r}: {', '.join(change.paths)}"
    if kind == "connections":
        return f"connections from {change.node!r}"
    if kind == "setting":
        return f"settings.{change.key}: {change.remote!r} -> {change.local!r}"
    if kind == "name":
        return f"name: {change.remote!r} -> {change.local!r}"
    return "nodes reordered" if kind == "nodes-reordered" else "other fields"
