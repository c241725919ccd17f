"""What the commands share: the app context, the options several commands take, the plan step.

A leaf of the command line: the command modules import it; it imports neither them nor the
app (`cli/app.py` imports the command modules and registers them with the group). Each option
is declared here once, so `--env`, `--scope`, `-o/--output` and `--redis-url` read the same in
every command that takes them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from n8n_lockkit.cli.completion import env_names
from n8n_lockkit.cli.output import show_plan
from n8n_lockkit.errors import OptionError
from n8n_lockkit.workspace.layout import Workspace

if TYPE_CHECKING:
    from n8n_lockkit.workspace.envconfig import EnvFile
    from n8n_lockkit.workspace.plan import Plan

F = TypeVar("F", bound=Callable[..., Any])

# ops.redis_access.URL_VARIABLE, spelled out so that --help need not import redis (a test
# keeps the two equal).
URL_VARIABLE = "N8NLOCK_REDIS_URL"


@dataclass
class AppContext:
    """What the group's options say, handed to every command (`pass_app`)."""

    workspace_option: Path | None
    # What -o/--output chose: an error is then shown in that form too (cli/app.py).
    output: str = "text"

    def workspace(self) -> Workspace:
        return Workspace.chosen(self.workspace_option)


pass_app = click.make_pass_decorator(AppContext)


def one_env(workspace: Workspace, env_name: str | None) -> EnvFile:
    """The env `--env` names, or the workspace's only one."""
    from n8n_lockkit.workspace import envconfig

    return envconfig.select_envs(workspace, [env_name] if env_name else [])[0]


ONLY_ENV = "Optional when the workspace has exactly one."


def env_option(
    what: str, *, multiple: bool = False, default: str = ONLY_ENV, complete: bool = True
) -> Callable[[F], F]:
    """`--env NAME`: the command's parameter is `envs` (a tuple) when repeatable, else
    `env_name`. `what` says what the env is for; `default`, what happens without it."""
    repeatable = " (repeatable)" if multiple else ""
    return click.option(
        "--env",
        "envs" if multiple else "env_name",
        multiple=multiple,
        metavar="NAME",
        help=" ".join(part for part in (f"{what}{repeatable}.", default) if part),
        shell_complete=env_names if complete else None,
    )


def scope_filter_option(f: F) -> F:
    """`--scope GLOB`: which scopes the operator commands look at."""
    return click.option(
        "--scope",
        metavar="GLOB",
        help="Only scopes matching this glob (* ? [abc]). Default: every scope.",
    )(f)


_FORMAT_HELP = {
    "text": "text for people",
    "json": "json for scripts and CI",
    "prometheus": "prometheus for a textfile collector",
}


def output_option(*formats: str) -> Callable[[F], F]:
    """`-o/--output` (the command's parameter `fmt`): text or json, or the formats given."""
    formats = formats or ("text", "json")
    return click.option(
        "-o",
        "--output",
        "fmt",
        type=click.Choice(formats),
        default="text",
        show_default=True,
        callback=_remember_output,
        help=", ".join(_FORMAT_HELP[name] for name in formats) + " (on stdout).",
    )


def _remember_output(ctx: click.Context, param: click.Parameter, value: str) -> str:
    app = ctx.find_object(AppContext)
    if app is not None:
        app.output = value
    return value


def redis_url_option(help_text: str) -> Callable[[F], F]:
    """`--redis-url URL` (or N8NLOCK_REDIS_URL): where the CLI reaches Redis."""
    return click.option(
        "--redis-url", metavar="URL", envvar=URL_VARIABLE, show_envvar=True, help=help_text
    )


def dry_run_option(f: F) -> F:
    return click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")(f)


def force_option(f: F) -> F:
    return click.option(
        "--force-overwrite",
        is_flag=True,
        help="Replace primitive files that differ from what n8nlock ships.",
    )(f)


def _removed_poll_interval(ctx: click.Context, param: click.Parameter, value: object) -> None:
    if value is not None:
        raise OptionError(
            "--poll-interval-seconds is gone: the engine decides how a waiter waits (it sleeps "
            "until its expected turn, docs/lock-engine.md), so no interval is set any more",
            hint="drop --poll-interval-seconds from the command; nothing else changes",
        )


def removed_poll_option(f: F) -> F:
    """`--poll-interval-seconds`, hidden: scripts written for engine v1 that still pass it
    get our error saying what to do, not click's "no such option"."""
    return click.option(
        "--poll-interval-seconds",
        hidden=True,
        expose_value=False,
        callback=_removed_poll_interval,
        help="Gone: the engine decides how a waiter waits.",
    )(f)


# rewrite.plans.options.DEFAULT, spelled out so that --help need not import the rewriter (a
# test keeps the two equal): the value that puts an option of a wrapping command back to its
# default.
DEFAULT = "default"


def _option_name(param: click.Parameter | None) -> str:
    return param.opts[0] if param is not None and param.opts else "the option"


class Count(click.ParamType[Any]):
    """A whole number (its minimum is the library's to check), or `default` when the option
    has one. A wrong value is our OptionError, not click's usage text."""

    name = "integer"

    def __init__(self, *, resettable: bool = True) -> None:
        self.resettable = resettable

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        text = str(value).strip()
        if self.resettable and text == DEFAULT:
            return DEFAULT
        try:
            return int(text)
        except ValueError:
            also = f" or `{DEFAULT}`" if self.resettable else ""
            raise OptionError(
                f"{_option_name(param)} takes a whole number{also}, not {value!r}",
                hint=f"e.g. {_option_name(param)} 60",
            ) from None


class OneOf(click.Choice[str]):
    """One of `choices`, or `default` (which is `default_choice`). A wrong value is our
    OptionError, not click's usage text."""

    def __init__(self, choices: tuple[str, ...], default_choice: str) -> None:
        super().__init__((*choices, DEFAULT))
        self.default_choice = default_choice
        self.real_choices = choices

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            raise OptionError(
                f"{_option_name(param)} {value!r} is not one of {', '.join(self.real_choices)}",
                hint=f"pass one of them, or {DEFAULT} ({self.default_choice})",
            ) from None


def apply_plan(workspace: Workspace, change_plan: Plan, *, dry_run: bool, fmt: str) -> None:
    """Show the plan, then write it (all files or none) unless this is a dry run. With -o
    json the files are written first: a write that fails prints its error as the one JSON
    document, not after the plan's."""
    from n8n_lockkit.workspace import plan

    if fmt == "json" and not dry_run:
        plan.apply(change_plan, workspace.root)
    show_plan(workspace, change_plan, dry_run=dry_run, fmt=fmt)
    if fmt != "json" and not dry_run:
        plan.apply(change_plan, workspace.root)
