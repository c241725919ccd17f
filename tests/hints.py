"""Whether a hint (or a docs line) names only commands and options that exist.

A hint is read as the user reads it: each `n8nlock COMMAND …` it quotes must be a command,
with options COMMAND takes; each other `--option` it names must be an option of the command
the user typed (or of `n8nlock` itself). click's own introspection of the `n8nlock` group is
the truth.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence

import click

from n8n_lockkit.cli import main

_QUOTED = re.compile(r"`([^`]*)`")
_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def options_of(command: click.Command | None) -> set[str]:
    """Every spelling of every option of `command` (both sides of --x/--no-x), and the
    group's own."""
    found = {"--help", "-h"}
    for owner in (main, command):
        if owner is None:
            continue
        for param in owner.params:
            if isinstance(param, click.Option):
                found.update(param.opts)
                found.update(param.secondary_opts)
    return found


def command_named(words: Sequence[str]) -> tuple[click.Command | None, list[str]]:
    """The command an argv names (after the group's options), and the words after it."""
    rest = list(words)
    while rest and rest[0].startswith("-"):
        takes_value = rest[0] in ("-w", "--workspace")
        rest = rest[2:] if takes_value else rest[1:]
    if not rest:
        return None, []
    return main.commands.get(rest[0]), rest[1:]


def _command_lines(text: str) -> Iterator[tuple[str, list[str]]]:
    """(the quoted text, its words) of every `n8nlock …` command line the text quotes."""
    for quoted in _QUOTED.findall(text):
        if quoted.startswith("n8nlock ") or quoted == "n8nlock":
            try:
                words = shlex.split(quoted.replace("…", ""))
            except ValueError:
                words = quoted.split()
            yield quoted, words[1:]


def untrue_claims(text: str, typed: Sequence[str]) -> list[str]:
    """What `text` names that does not exist: for a hint shown for argv `typed`."""
    problems: list[str] = []
    for quoted, words in _command_lines(text):
        named, rest = command_named(words)
        if named is None and words and not words[0].startswith("-"):
            problems.append(f"{quoted!r}: n8nlock has no command {words[0]!r}")
            continue
        for option in (w.split("=")[0] for w in rest if w.startswith("--")):
            if option not in options_of(named):
                problems.append(f"{quoted!r}: {named.name if named else 'n8nlock'} has no {option}")
    typed_command, _ = command_named(typed)
    # n8nlock's command lines were checked above; n8n's own CLI (`n8n export:workflow …`)
    # has options of its own.
    bare = _QUOTED.sub(
        lambda m: "" if m.group(1).startswith(("n8nlock", "n8n ")) else m.group(0), text
    )
    for option in _OPTION.findall(bare):
        if option not in options_of(typed_command):
            shown = typed_command.name if typed_command else "n8nlock"
            problems.append(f"{option}: {shown} has no such option")
    return problems
