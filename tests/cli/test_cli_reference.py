"""docs/reference/cli.md is the `--help` of every command as the code prints it now.

A command or option added, renamed or removed without `make docs-reference` fails here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from scripts.gen_cli_reference import REFERENCE, contexts

ROOT = Path(__file__).parent.parent.parent
FIX = "run `make docs-reference` and commit docs/reference/cli.md"
COMMANDS = contexts()


@pytest.mark.parametrize("columns", ["40", "250"])
def test_the_reference_is_what_make_docs_reference_writes_now(columns: str) -> None:
    """Run as `make docs-reference` runs it (a fresh process), in a narrow and a wide terminal."""
    done = subprocess.run(
        [sys.executable, "-m", "scripts.gen_cli_reference", "--check"],
        cwd=ROOT,
        env={**os.environ, "COLUMNS": columns},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"{FIX}\n{done.stdout}{done.stderr}"


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
