"""docs/reference/cli.md is the `--help` of every command as the code prints it now.

A command or option added, renamed or removed without `make docs-reference` fails here.
"""

from __future__ import annotations

import difflib

import click
import pytest

from scripts.gen_cli_reference import REFERENCE, contexts, render

FIX = "run `make docs-reference` and commit docs/reference/cli.md"
COMMANDS = contexts()


def test_the_reference_is_what_the_generator_writes_now() -> None:
    committed = REFERENCE.read_text(encoding="utf-8") if REFERENCE.exists() else ""
    current = render()
    diff = difflib.unified_diff(
        committed.splitlines(), current.splitlines(), "committed", "--help now", lineterm="", n=1
    )
    shown = "\n".join(list(diff)[:40])
    assert committed == current, f"docs/reference/cli.md is stale: {FIX}\n{shown}"


@pytest.mark.parametrize("ctx", COMMANDS, ids=[c.command_path for c in COMMANDS])
def test_the_reference_names_every_command_and_option(ctx: click.Context) -> None:
    committed = REFERENCE.read_text(encoding="utf-8") if REFERENCE.exists() else ""
    heading = f"## `{ctx.command_path}`"
    assert heading in committed, f"{ctx.command_path} is missing from the reference: {FIX}"
    own = committed.split(heading, 1)[1].split("\n## ", 1)[0]
    for parameter in ctx.command.get_params(ctx):
        if isinstance(parameter, click.Option) and not parameter.hidden:
            for name in parameter.opts:
                assert name in own, f"{ctx.command_path} {name} is missing: {FIX}"


def test_the_help_does_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    before = render()
    monkeypatch.setenv("COLUMNS", "40")
    assert render() == before
