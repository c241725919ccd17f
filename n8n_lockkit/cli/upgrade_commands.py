"""`n8nlock upgrade`: the whole workspace at this n8nlock's format, in one plan."""

from __future__ import annotations

from collections.abc import Sequence

import click

from n8n_lockkit.cli.common_options import (
    AppContext,
    dry_run_option,
    env_option,
    force_option,
    output_option,
    pass_app,
)
from n8n_lockkit.cli.output import echo_json, plan_as_dict, show_plan, warn


@click.command("upgrade")
@env_option("Env file to update", multiple=True, default="Default: every env of the workspace.")
@force_option
@click.option(
    "--inline",
    is_flag=True,
    help="Also move locks that call the lock_acquisition / lock_release primitives into the "
    "workflows themselves (the faster form; see docs/performance.md).",
)
@dry_run_option
@output_option()
@pass_app
def upgrade(
    app: AppContext,
    envs: Sequence[str],
    force_overwrite: bool,
    inline: bool,
    dry_run: bool,
    fmt: str,
) -> None:
    """Bring every primitive, wrapped workflow and env file to this n8nlock's format.

    Renders the primitives again (one edited by hand is kept, with a warning, unless
    --force-overwrite), wraps every wrapped workflow again in place with the scope, TTL,
    wait, slots, error handler, renewals and rate limit it already has, and registers what
    the envs now need. All files change together, or none. Running it again changes
    nothing. Then push what it lists; before that push, read docs/upgrading.md:
    callers still waiting in the old format must finish first (push checks).

    \b
    Example:
        n8nlock upgrade --dry-run
        n8nlock upgrade
        n8nlock upgrade --inline -o json
        n8nlock push --env prod
    """
    from n8n_lockkit.rewrite.plans.upgrade import plan_upgrade
    from n8n_lockkit.workspace import envconfig, plan

    workspace = app.workspace()
    names = list(dict.fromkeys(envs)) or workspace.env_names()
    selected = [envconfig.load_env(workspace, name) for name in names]
    result = plan_upgrade(workspace, selected, force_overwrite=force_overwrite, inline=inline)
    if fmt == "json":
        document = plan_as_dict(workspace, result.plan, dry_run=dry_run)
        document["workflows"] = [item.as_dict() for item in result.items]
        document["push"] = result.to_push
        echo_json(document)
        for message in result.plan.messages:
            warn(message)
    else:
        show_plan(workspace, result.plan, dry_run=dry_run, fmt=fmt)
        for item in result.items:
            found = "none" if item.found_format is None else f"format {item.found_format}"
            note = f" ({item.note})" if item.note else ""
            click.echo(f"  {item.key}: {item.kind}, {found} -> {item.action}{note}", err=True)
        if result.to_push:
            pending = "would change" if dry_run else "changed"
            click.echo(
                f"{len(result.to_push)} workflow(s) {pending}: push them with "
                f"`n8nlock push{''.join(f' --env {n}' for n in names[:1])}` "
                f"({', '.join(result.to_push)})",
                err=True,
            )
    if not dry_run:
        plan.apply(result.plan, workspace.root)
