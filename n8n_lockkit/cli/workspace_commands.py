"""Commands that set up a workspace: init, create-lock, copy-primitive."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from n8n_lockkit.cli.common_options import (
    AppContext,
    apply_plan,
    dry_run_option,
    env_option,
    force_option,
    output_option,
    pass_app,
    removed_poll_option,
)
from n8n_lockkit.cli.completion import primitive_names
from n8n_lockkit.cli.output import show_lines
from n8n_lockkit.workspace import scaffold
from n8n_lockkit.workspace.layout import Workspace


@click.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), default=".")
# It names the env files it creates: there is nothing to complete.
@env_option("Env file to create", multiple=True, default=" [default: dev]", complete=False)
@click.option(
    "--url",
    default=scaffold.DEFAULT_URL,
    show_default=True,
    help="Base URL of the n8n instance the new env files point at.",
)
@click.option(
    "--key-prefix",
    default="",
    metavar="PREFIX",
    help="Namespace in front of every Redis key of the new envs (keyPrefix:), for envs that "
    "share one Redis, e.g. staging: (letters, digits, ':', '_', '-'); default none.",
)
@dry_run_option
@output_option()
def init(
    directory: Path, envs: Sequence[str], url: str, key_prefix: str, dry_run: bool, fmt: str
) -> None:
    """Create a workspace: envs/<env>.yml and workflows/.

    Existing files are kept, so running it again only adds missing envs. Put workflows
    into workflows/ as n8n downloads them (any *.json): a file's key is its name without
    .template.json or .json, other characters made _ (`My workflow (1).json` is
    My_workflow_1).

    \b
    Example:
        n8nlock init my-automations --env dev --env prod
        n8nlock init . --env staging --key-prefix staging:
    """
    root = directory.resolve()
    plan = scaffold.plan_init(root, envs or ["dev"], url, key_prefix)
    apply_plan(Workspace(root), plan, dry_run=dry_run, fmt=fmt)


@click.command("create-lock")
@env_option("Env to register in", multiple=True)
@click.option(
    "--include-error-handler",
    is_flag=True,
    help="Also install error_handler_lock_cleanup and ensure lockScopes exists.",
)
@click.option("--include-rate-limit", is_flag=True, help="Also install rate_limit_check.")
@click.option(
    "--include-renew",
    is_flag=True,
    help="Also install lock_renew (for add-lock-to-workflow --renew-before).",
)
@force_option
@removed_poll_option
@dry_run_option
@output_option()
@pass_app
def create_lock(
    app: AppContext,
    envs: Sequence[str],
    include_error_handler: bool,
    include_rate_limit: bool,
    include_renew: bool,
    force_overwrite: bool,
    dry_run: bool,
    fmt: str,
) -> None:
    """Install the lock primitives and register them in the env(s).

    Writes workflows/lock_acquisition.template.json and lock_release.template.json
    (and the handler and rate limit when asked) and adds each key to the env's
    `workflows:` map. Running it again changes nothing.

    \b
    Example:
        n8nlock create-lock --include-error-handler --include-rate-limit --env dev
    """
    from n8n_lockkit.primitives import installer
    from n8n_lockkit.primitives.render import RenderOptions
    from n8n_lockkit.workspace import envconfig

    workspace = app.workspace()
    selected = envconfig.select_envs(workspace, envs)
    primitives = installer.lock_primitives(
        include_error_handler=include_error_handler,
        include_rate_limit=include_rate_limit,
        include_renew=include_renew,
    )
    change_plan = installer.plan_create_lock(
        workspace,
        selected,
        primitives,
        force_overwrite=force_overwrite,
        options=RenderOptions(),
    )
    apply_plan(workspace, change_plan, dry_run=dry_run, fmt=fmt)


@click.command("copy-primitive")
@click.argument("name", required=False, shell_complete=primitive_names)
@click.option("--list", "list_only", is_flag=True, help="List the primitives and exit.")
@force_option
@removed_poll_option
@dry_run_option
@output_option()
@pass_app
def copy_primitive(
    app: AppContext,
    name: str | None,
    list_only: bool,
    force_overwrite: bool,
    dry_run: bool,
    fmt: str,
) -> None:
    """Copy one primitive into workflows/ without registering it anywhere.

    \b
    Example:
        n8nlock copy-primitive --list
        n8nlock copy-primitive rate_limit_check
    """
    from n8n_lockkit.primitives import installer
    from n8n_lockkit.primitives.catalogue import PRIMITIVES, get_primitive
    from n8n_lockkit.primitives.render import RenderOptions

    if list_only or name is None:
        show_lines(f"{p.key:<28} {p.summary}" for p in PRIMITIVES.values())
        if name is None and not list_only:
            raise click.UsageError("name a primitive to copy (see the list above)")
        return
    workspace = app.workspace()
    change_plan = installer.plan_copy_primitive(
        workspace,
        get_primitive(name),
        force_overwrite=force_overwrite,
        options=RenderOptions(),
    )
    apply_plan(workspace, change_plan, dry_run=dry_run, fmt=fmt)
