"""Plans of file changes, and applying them atomically (all files or none)."""

from __future__ import annotations

import contextlib
import enum
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from n8n_lockkit.errors import WriteError


class Action(str, enum.Enum):
    CREATE = "create"
    UPDATE = "update"
    IDENTICAL = "identical"
    KEEP = "keep"  # exists, differs, and we were not asked to overwrite it


@dataclass(frozen=True, slots=True)
class FileChange:
    """What one file holds now (`before`, None if absent) and what it should hold."""

    path: Path
    before: str | None
    after: str
    overwrite: bool = True
    note: str = ""

    @property
    def action(self) -> Action:
        if self.before is None:
            return Action.CREATE
        if self.before == self.after:
            return Action.IDENTICAL
        if not self.overwrite:
            return Action.KEEP
        return Action.UPDATE

    @property
    def writes(self) -> bool:
        return self.action in (Action.CREATE, Action.UPDATE)


@dataclass(frozen=True)
class SettingChange:
    """One setting a plan changes inside a file: `orders: lock` `on_busy` `skip` → `wait`.

    `setting` "" is the whole part (`before` None: it is new; `after` None: it goes), whose
    value is the mapping of its settings."""

    subject: str
    setting: str
    before: Any
    after: Any

    @property
    def verb(self) -> str:
        if self.before is None:
            return "create"
        return "remove" if self.after is None else "update"

    def as_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "setting": self.setting or None,
            "before": self.before,
            "after": self.after,
        }


@dataclass(frozen=True)
class Plan:
    changes: tuple[FileChange, ...]
    messages: tuple[str, ...] = field(default=())
    # What the files hold once the plan is applied, for -o json (a wrapped workflow's lock,
    # guard and rate limits), and the settings it changes on the way.
    settings: Mapping[str, Any] | None = None
    setting_changes: tuple[SettingChange, ...] = ()

    @property
    def has_writes(self) -> bool:
        return any(c.writes for c in self.changes)

    def pending(self) -> list[FileChange]:
        return [c for c in self.changes if c.writes]


def read_text_or_none(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _real_target(path: Path, root: Path) -> Path:
    """Where a write really lands; a symlink is followed, never replaced by a file."""
    target = path.resolve()
    if not target.is_relative_to(root.resolve()):
        raise WriteError(
            f"{path} resolves to {target}, outside the workspace {root}",
            hint="n8nlock only writes inside the workspace; remove or fix the symlink",
        )
    return target


def _check_writable(target: Path) -> None:
    # Mode bits, not os.access: as root os.access says yes to everything, and a user who
    # made a file read-only meant it.
    folder = target.parent
    while not folder.exists():
        folder = folder.parent
    for path in (target, folder):
        if path.exists() and not path.stat().st_mode & stat.S_IWUSR:
            raise WriteError(
                f"{path} is read-only; nothing was changed",
                hint="make it writable (chmod u+w) and run the command again",
            )


@contextlib.contextmanager
def _staged(target: Path, text: str) -> Iterator[Path]:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        if target.exists():
            tmp.chmod(stat.S_IMODE(target.stat().st_mode))
        else:
            tmp.chmod(0o644)
        yield tmp
    finally:
        tmp.unlink(missing_ok=True)


def apply(plan: Plan, root: Path) -> list[FileChange]:
    """Write every pending change, or none of them; returns what was written."""
    pending = plan.pending()
    targets = [_real_target(c.path, root) for c in pending]
    for target in targets:
        _check_writable(target)
    try:
        with contextlib.ExitStack() as stack:
            staged = [
                stack.enter_context(_staged(t, c.after))
                for t, c in zip(targets, pending, strict=True)
            ]
            # Every file is fully written before the first rename, so a failure while staging
            # leaves the workspace untouched; renames within one folder do not fail halfway.
            for tmp, target in zip(staged, targets, strict=True):
                tmp.replace(target)
    except OSError as err:
        raise WriteError(
            f"cannot write {err.filename or 'a file'}: {err.strerror}; nothing was changed",
            hint="check the folder's permissions and free space",
        ) from err
    return pending
