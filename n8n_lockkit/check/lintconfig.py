"""Which rules `n8nlock validate` applies, and whether warnings fail the run.

The workspace may set `select`, `ignore` and `strict` in `n8nlock.toml` at its root, or under
`[tool.n8nlock]` in its `pyproject.toml`. When both exist, `n8nlock.toml` wins and the other is
ignored with a note (ruff reads `ruff.toml` before `pyproject.toml` the same way). The command
line comes last: `--select` starts over (it replaces the file's `select` and `ignore`),
`--ignore` adds to what is ignored, `--strict/--no-strict` replaces `strict`.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from n8n_lockkit.check.rules import RULE_IDS
from n8n_lockkit.errors import LockkitError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

CONFIG_FILE = "n8nlock.toml"
PYPROJECT = "pyproject.toml"
KEYS = ("ignore", "select", "strict")
_LISTS_RULES = "`n8nlock rules` lists the rule ids"


@dataclass(frozen=True)
class LintSettings:
    select: tuple[str, ...] | None = None  # None: every rule
    ignore: tuple[str, ...] = ()
    strict: bool = False  # warnings fail the run too

    def enabled(self) -> frozenset[str]:
        selected = RULE_IDS if self.select is None else frozenset(self.select)
        return selected - frozenset(self.ignore)


@dataclass(frozen=True)
class LoadedSettings:
    settings: LintSettings
    source: str | None  # the file they came from, relative to the workspace
    notes: tuple[str, ...] = ()


def _close(word: str, choices: Iterable[str]) -> str:
    matches = difflib.get_close_matches(word, sorted(choices), n=1)
    return f"did you mean {matches[0]!r}? " if matches else ""


def check_rule_ids(ids: Iterable[str], *, origin: str) -> tuple[str, ...]:
    """The ids, in order and once each; an unknown id is an input error naming `origin`."""
    checked = tuple(dict.fromkeys(ids))
    for rule_id in checked:
        if rule_id not in RULE_IDS:
            raise LockkitError(
                f"{origin}: unknown rule {rule_id!r}",
                hint=f"{_close(rule_id, RULE_IDS)}{_LISTS_RULES}",
            )
    return checked


def split_rule_ids(values: Iterable[str]) -> list[str]:
    """`--ignore a,b --ignore c` → [a, b, c]."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _read_toml(path: Path, display: str) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise LockkitError(f"{display}: cannot read ({err})") from err
    except tomllib.TOMLDecodeError as err:
        raise LockkitError(
            f"{display}: not valid TOML ({err})", hint="fix the file at the line given"
        ) from err


def _rule_list(table: Mapping[str, Any], key: str, origin: str) -> tuple[str, ...] | None:
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise LockkitError(
            f"{origin}: {key} must be a list of rule ids",
            hint=f'for example {key} = ["code-sandbox", "wait-explicit-interval"]',
        )
    return check_rule_ids(value, origin=f"{origin} {key}")


def parse_settings(table: Mapping[str, Any], origin: str) -> LintSettings:
    """Settings from one TOML table; `origin` names it in errors."""
    for key in table:
        if key not in KEYS:
            raise LockkitError(
                f"{origin}: unknown key {key!r}",
                hint=f"{_close(key, KEYS)}the keys are {', '.join(KEYS)}",
            )
    strict = table.get("strict", False)
    if not isinstance(strict, bool):
        raise LockkitError(f"{origin}: strict must be true or false", hint="strict = true")
    return LintSettings(
        select=_rule_list(table, "select", origin),
        ignore=_rule_list(table, "ignore", origin) or (),
        strict=strict,
    )


def _pyproject_table(root: Path) -> dict[str, Any] | None:
    path = root / PYPROJECT
    if not path.is_file():
        return None
    tool = _read_toml(path, PYPROJECT).get("tool")
    table = tool.get("n8nlock") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise LockkitError(
            f"{PYPROJECT}: tool.n8nlock must be a table", hint="write it as [tool.n8nlock]"
        )
    return table


def load_settings(root: Path) -> LoadedSettings:
    """The workspace's validate settings: n8nlock.toml, else [tool.n8nlock], else defaults."""
    config = root / CONFIG_FILE
    if not config.is_file():
        table = _pyproject_table(root)
        if table is None:
            return LoadedSettings(LintSettings(), None)
        origin = f"{PYPROJECT} [tool.n8nlock]"
        return LoadedSettings(parse_settings(table, origin), origin)
    settings = parse_settings(_read_toml(config, CONFIG_FILE), CONFIG_FILE)
    try:
        shadowed = _pyproject_table(root) is not None
    except LockkitError:
        shadowed = False  # n8nlock.toml decides; a broken pyproject.toml is not ours to judge
    note = f"{CONFIG_FILE} is used; [tool.n8nlock] in {PYPROJECT} is ignored"
    return LoadedSettings(settings, CONFIG_FILE, (note,) if shadowed else ())


def with_command_line(
    settings: LintSettings,
    *,
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    strict: bool | None = None,
) -> LintSettings:
    """The file's settings overlaid by `--select`, `--ignore` and `--strict/--no-strict`."""
    selected = check_rule_ids(split_rule_ids(select), origin="--select")
    ignored = check_rule_ids(split_rule_ids(ignore), origin="--ignore")
    if selected:
        settings = LintSettings(select=selected, ignore=(), strict=settings.strict)
    return replace(
        settings,
        ignore=tuple(dict.fromkeys((*settings.ignore, *ignored))),
        strict=settings.strict if strict is None else strict,
    )
