"""The click group, its shared options, and the one place errors become output.

Start-up time matters (shell completion runs the program on every Tab): the command modules
import only click and light modules at the top, and the library modules a command needs
inside the command's function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from n8n_lockkit import __version__
from n8n_lockkit.cli import completion, output
from n8n_lockkit.errors import LockkitError
from n8n_lockkit.workspace.layout import Workspace

if TYPE_CHECKING:
    from n8n_lockkit.workspace.plan import Plan

F = TypeVar("F", bound=Callable[..., Any])


class LockkitGroup(click.Group):
    """The one place where our errors become a message, a hint and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LockkitError as error:
            output.show_error(error)
            ctx.exit(int(error.exit_code))


@dataclass
class AppContext:
    workspace_option: Path | None

    def workspace(self) -> Workspace:
        if self.workspace_option is not None:
            return Workspace.at(self.workspace_option)
        return Workspace.find(Path.cwd())


pass_app = click.make_pass_decorator(AppContext)


def env_option(f: F) -> F:
    return click.option(
        "--env",
        "envs",
        multiple=True,
        metavar="NAME",
        help="Env to register in (repeatable). Optional when the workspace has exactly one.",
        shell_complete=completion.env_names,
    )(f)


def dry_run_option(f: F) -> F:
    return click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")(f)


def format_option(f: F) -> F:
    return click.option(
        "-o",
        "--output",
        "fmt",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="text for people, json for CI (on stdout).",
    )(f)


def force_option(f: F) -> F:
    return click.option(
        "--force-overwrite",
        is_flag=True,
        help="Replace primitive files that differ from what n8nlock ships.",
    )(f)


def poll_option(f: F) -> F:
    return click.option(
        "--poll-interval-seconds",
        type=click.FloatRange(0.1, 60),
        default=1.0,
        show_default=True,
        help="Kept for scripts written for engine v1; it changes nothing: waiters sleep until "
        "their expected turn, then look every 20 ms.",
    )(f)


def apply_plan(workspace: Workspace, change_plan: Plan, *, dry_run: bool, fmt: str) -> None:
    from n8n_lockkit.workspace import plan

    output.show_plan(workspace, change_plan, dry_run=dry_run, fmt=fmt)
    if not dry_run:
        plan.apply(change_plan, workspace.root)


@click.group(cls=LockkitGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="n8nlock")
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


# The commands: each module adds its own to `main` as it is imported; they import `main` from
# here, hence the import at the end. A new module of commands is one more name in this list.
from n8n_lockkit.cli import (  # noqa: E402, F401
    check_commands,
    ops_commands,
    remote_commands,
    sync_commands,
    upgrade_commands,
    workspace_commands,
    wrap_commands,
)
