"""Commands that check workflows: validate, rules."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from n8n_lockkit.cli.common_options import AppContext, env_option, output_option, pass_app
from n8n_lockkit.cli.output import echo_json, show_lines, show_report, warn
from n8n_lockkit.errors import ExitCode


@click.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@env_option("Also check that every {{@:env:…}} placeholder resolves in this env", default="")
@click.option(
    "--select",
    multiple=True,
    metavar="RULE[,RULE…]",
    help="Apply only these rules (repeatable); replaces the workspace's select and ignore.",
)
@click.option(
    "--ignore",
    multiple=True,
    metavar="RULE[,RULE…]",
    help="Skip these rules (repeatable); adds to the workspace's ignore.",
)
@click.option(
    "--strict/--no-strict",
    default=None,
    help="Exit 1 on warnings too (default: only on errors, or the workspace's strict).",
)
@output_option()
@pass_app
def validate_command(
    app: AppContext,
    paths: Sequence[Path],
    env_name: str | None,
    select: Sequence[str],
    ignore: Sequence[str],
    strict: bool | None,
    fmt: str,
) -> None:
    """Check workflow files; exit 1 on any error (for CI).

    Checks every workflow file of the workspace, or the given files and folders. Each finding
    is an error (n8n would refuse the file) or a warning (n8n accepts it, but it risks
    misbehaving); warnings fail the run only with --strict. The workspace may set select,
    ignore and strict in n8nlock.toml or under [tool.n8nlock] in pyproject.toml.
    `n8nlock rules` lists the rules.

    \b
    Example:
        n8nlock validate
        n8nlock validate --ignore code-sandbox --strict
        n8nlock validate workflows/orders.template.json --env prod -o json
    """
    from n8n_lockkit.check import lintconfig, validate

    workspace = app.workspace()
    loaded = lintconfig.load_settings(workspace.root)
    settings = lintconfig.with_command_line(
        loaded.settings, select=select, ignore=ignore, strict=strict
    )
    env = None
    if env_name:
        from n8n_lockkit.workspace import envconfig  # ruamel: only when an env is asked for

        env = envconfig.load_env(workspace, env_name).data
    report = validate.validate_files(workspace, [p.absolute() for p in paths], env, settings)
    for note in loaded.notes:
        warn(note)
    show_report(report, fmt)
    if not report.ok:
        raise SystemExit(int(ExitCode.FINDINGS))


@click.command("rules")
@output_option()
def rules_command(fmt: str) -> None:
    """List the rules `n8nlock validate` applies, with their severity.

    \b
    Example:
        n8nlock rules
        n8nlock rules -o json
    """
    import textwrap

    from n8n_lockkit.check.rules import RULES

    if fmt == "json":
        echo_json([{"id": r.id, "severity": r.severity.value, "summary": r.summary} for r in RULES])
        return
    indent = " " * (_RULE_COLUMN + _SEVERITY_COLUMN)
    show_lines(
        textwrap.fill(
            f"{rule.id:<{_RULE_COLUMN}}{rule.severity.value:<{_SEVERITY_COLUMN}}{rule.summary}",
            width=_WIDTH,
            subsequent_indent=indent,
            break_on_hyphens=False,
        )
        for rule in RULES
    )


# `n8nlock rules`: the id, the severity, then the summary wrapped under itself.
_RULE_COLUMN, _SEVERITY_COLUMN, _WIDTH = 30, 9, 100
