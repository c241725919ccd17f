"""Commands that check workflows: validate, rules."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from n8n_lockkit import (
    envconfig,
    output,
    validate,
)
from n8n_lockkit.cli.app import (
    AppContext,
    format_option,
    main,
    pass_app,
)
from n8n_lockkit.errors import ExitCode
from n8n_lockkit.rules import RULES


@main.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--env",
    "env_name",
    metavar="NAME",
    help="Also check that every {{@:env:…}} placeholder resolves in this env.",
)
@format_option
@pass_app
def validate_command(
    app: AppContext, paths: Sequence[Path], env_name: str | None, fmt: str
) -> None:
    """Check workflow files; exit 1 on any problem (for CI).

    Checks every workflow file of the workspace, or the given files and folders.
    `n8nlock rules` lists the rules.

    \b
    Example:
        n8nlock validate
        n8nlock validate workflows/orders.template.json --env prod -o json
    """
    workspace = app.workspace()
    env = envconfig.load_env(workspace, env_name).data if env_name else None
    report = validate.validate_files(workspace, [p.absolute() for p in paths], env)
    output.show_report(report, fmt)
    if not report.ok:
        raise SystemExit(int(ExitCode.FINDINGS))


@main.command("rules")
def rules_command() -> None:
    """List the rules `n8nlock validate` applies.

    \b
    Example:
        n8nlock rules
    """
    output.show_lines(f"{rule.id:<30} {rule.summary}" for rule in RULES)
