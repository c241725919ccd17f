"""Every command has help with an example, and the README and docs/commands.md document it."""

from __future__ import annotations

import re
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


@pytest.mark.parametrize("page", ["README.md", "docs/commands.md"])
@pytest.mark.parametrize("name", COMMANDS)
def test_the_readme_and_the_commands_page_document_every_command(name: str, page: str) -> None:
    assert f"n8nlock {name}" in (ROOT / page).read_text(), f"{page} leaves out n8nlock {name}"


def test_python_dash_m_runs_the_cli() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "n8n_lockkit", "--version"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("n8nlock, version ")


def test_bundled_example_envs_are_valid() -> None:
    from n8n_lockkit.workspace.envconfig import load_env
    from n8n_lockkit.workspace.layout import Workspace

    example = Workspace(ROOT)
    assert example.env_names(), "envs/ holds no example env"
    for name in example.env_names():
        load_env(example, name)


SKILLS = sorted((ROOT / "skills").glob("*.md"))
TOPICS = [
    "n8nlock create-lock",
    "n8nlock copy-primitive",
    "n8nlock add-lock-to-workflow",
    "n8nlock add-rate-limit",
    "n8nlock validate",
    "n8nlock push",
    "n8nlock redis-credential",
    "n8n-lock-",
    "n8n-ratelimit-",
    "When not to use",
]


@pytest.mark.parametrize("skill", SKILLS, ids=[p.stem for p in SKILLS])
def test_every_skill_has_front_matter(skill: Path) -> None:
    text = skill.read_text()
    front = text.split("---\n")[1]
    assert f"name: {skill.stem}\n" in front
    assert "description: " in front


@pytest.mark.parametrize("topic", TOPICS)
def test_the_skills_cover_each_topic(topic: str) -> None:
    assert any(topic in skill.read_text() for skill in SKILLS), f"no skill covers {topic!r}"


def test_the_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines (at most 200): move text to docs/"
    first_screen = "\n".join(lines[:15])
    assert "make demo" in first_screen and "make test" in first_screen


@pytest.mark.parametrize("page", [ROOT / "README.md", *SKILLS], ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    """mkdocs --strict checks the links inside docs/; these pages link into it from outside."""
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
        if "://" not in target:
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"
