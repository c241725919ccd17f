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
    "docs/reference/keys.md",
    "docs/key-namespaces.md",
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


DOC_PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *SKILLS],
    key=lambda p: str(p),
)
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
_INLINE = re.compile(r"`(n8nlock [^`]+)`")
# A synopsis (`[--env E]`, `KEY|ID`, `…`, an upper-case placeholder, a shell variable) shows
# options; a command line is also run through the parser.
_SYNOPSIS = re.compile(r"[\[\]|…<>$]|\.\.\.|(?<![\w-])[A-Z][A-Z_]*(?![\w-])")


def command_lines(text: str) -> list[str]:
    """Every `n8nlock …` command line of a page: in code blocks (a trailing backslash joins
    the next line; a `$ ` prompt is dropped) and in inline code."""
    found = []
    for block in _FENCE.findall(text):
        joined = re.sub(r"\\\n\s*", " ", block)
        for raw in joined.splitlines():
            if len(raw) - len(raw.lstrip()) >= 10:
                continue  # an option's help, wrapped, in docs/reference/cli.md
            line = raw.strip().removeprefix("$ ").split(" #")[0].strip()
            if line.startswith("n8nlock ") or line == "n8nlock":
                found.append(line)
    return found + _INLINE.findall(_FENCE.sub("", text))


DOC_LINES = [
    (page.relative_to(ROOT).as_posix(), line)
    for page in DOC_PAGES
    for line in dict.fromkeys(command_lines(page.read_text()))
]


def test_the_docs_have_command_lines_to_check() -> None:
    assert len(DOC_LINES) > 100


@pytest.mark.parametrize(
    ("page", "line"), DOC_LINES, ids=[f"{page}: {line}" for page, line in DOC_LINES]
)
def test_every_command_line_in_the_docs_names_a_command_and_its_options(
    page: str, line: str
) -> None:
    from tests.hints import untrue_claims

    assert untrue_claims(f"`{line}`", []) == []


RUNNABLE = [(page, line) for page, line in DOC_LINES if not _SYNOPSIS.search(line)]


@pytest.mark.parametrize(
    ("page", "line"), RUNNABLE, ids=[f"{page}: {line}" for page, line in RUNNABLE]
)
def test_every_command_line_in_the_docs_parses(page: str, line: str) -> None:
    import shlex

    from tests.hints import command_named

    words = shlex.split(line)[1:]
    command, rest = command_named(words)
    if command is None or not rest:
        return  # the group's own options (`n8nlock --version`), or a command named in prose
    with main.make_context("n8nlock", list(words), resilient_parsing=True) as group:
        try:
            command.make_context(command.name, rest, parent=group)
        except click.UsageError as err:
            pytest.fail(f"{page}: `{line}`: {err.format_message()}")
