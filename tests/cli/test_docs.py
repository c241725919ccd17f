"""Every command has help with an example, and the README documents it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest

from n8n_lockkit.cli import main

ROOT = Path(__file__).parent.parent.parent
COMMANDS = sorted(main.commands)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help_with_an_example(name: str) -> None:
    command = main.commands[name]
    assert command.help and "Example:" in command.help, f"{name} lacks an example in its help"
    for parameter in command.params:
        if isinstance(parameter, click.Option):
            assert parameter.help, f"{name} {parameter.opts} has no help"


@pytest.mark.parametrize("name", COMMANDS)
def test_the_readme_documents_every_command(name: str) -> None:
    assert f"n8nlock {name}" in (ROOT / "README.md").read_text()


def test_python_dash_m_runs_the_cli() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "n8n_lockkit", "--version"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("n8nlock, version ")


def test_bundled_example_envs_are_valid() -> None:
    from n8n_lockkit.envconfig import load_env
    from n8n_lockkit.workspace import Workspace

    example = Workspace(ROOT)
    assert example.env_names(), "envs/ holds no example env"
    for name in example.env_names():
        load_env(example, name)
