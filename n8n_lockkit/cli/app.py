"""The click group, the commands it registers, and the one place errors become output.

The command modules define their commands and never import this module: it imports them
and registers each command below (a new command is one more name in COMMANDS). What the
commands share (the app context and their common options) is in `common_options`.

Start-up time matters (shell completion runs the program on every Tab): the command modules
import only click and light modules at the top, and the library modules a command needs
inside the command's function.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from n8n_lockkit import DISTRIBUTION
from n8n_lockkit.cli.check_commands import rules_command, validate_command
from n8n_lockkit.cli.common_options import AppContext
from n8n_lockkit.cli.debounce_commands import add_debounce
from n8n_lockkit.cli.ops_commands import (
    forget_command,
    locks_command,
    reap_command,
    release_command,
    stats_command,
)
from n8n_lockkit.cli.output import show_error
from n8n_lockkit.cli.remote_commands import push_command, redis_credential
from n8n_lockkit.cli.sync_commands import diff_command, pull_command
from n8n_lockkit.cli.upgrade_commands import upgrade
from n8n_lockkit.cli.workspace_commands import copy_primitive, create_lock, init
from n8n_lockkit.cli.wrap_commands import (
    add_dedupe,
    add_lock_to_workflow,
    add_rate_limit,
    unwrap_workflow,
)
from n8n_lockkit.errors import LockkitError

COMMANDS = (
    init,
    create_lock,
    copy_primitive,
    add_lock_to_workflow,
    add_dedupe,
    add_rate_limit,
    add_debounce,
    unwrap_workflow,
    validate_command,
    rules_command,
    push_command,
    redis_credential,
    pull_command,
    diff_command,
    upgrade,
    locks_command,
    release_command,
    reap_command,
    stats_command,
    forget_command,
)


class LockkitGroup(click.Group):
    """The one place where our errors become a message, a hint and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LockkitError as error:
            app = ctx.find_object(AppContext)
            show_error(error, app.output if app is not None else "text")
            ctx.exit(int(error.exit_code))


@click.group(cls=LockkitGroup, context_settings={"help_option_names": ["-h", "--help"]})
# The version of pyproject.toml, read from the package's metadata only when --version asks.
@click.version_option(package_name=DISTRIBUTION, prog_name="n8nlock")
@click.option(
    "-w",
    "--workspace",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Workspace folder (default: the nearest folder above the current one with envs/).",
)
@click.pass_context
def main(ctx: click.Context, workspace: Path | None) -> None:
    """Safe coordination for n8n workflows: Redis locks and rate limits.

    \b
    Example:
        n8nlock init my-automations --env dev
        cd my-automations
        n8nlock create-lock --include-error-handler
        n8nlock validate
    """
    ctx.obj = AppContext(workspace)


# Commands that take no workspace: init creates one (its DIRECTORY), rules lists the rules.
_NO_WORKSPACE = ("init", "rules")


def _workspace_after_command(
    ctx: click.Context, param: click.Parameter, value: Path | None
) -> None:
    if value is not None:
        ctx.ensure_object(AppContext).workspace_option = value


def workspace_option() -> click.Option:
    """`--workspace PATH` after the command too (`n8nlock validate --workspace PATH`), as
    users type it: the same folder the group's option names."""
    return click.Option(
        ["-w", "--workspace"],
        type=click.Path(path_type=Path, file_okay=False),
        expose_value=False,
        callback=_workspace_after_command,
        help="Workspace folder, as `n8nlock --workspace PATH COMMAND` takes it.",
    )


for command in COMMANDS:
    if command.name not in _NO_WORKSPACE:
        command.params.append(workspace_option())
    main.add_command(command)
