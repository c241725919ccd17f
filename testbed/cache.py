"""Layout of the install cache (~/.cache/n8nlock) and the lock that guards installs."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .progress import Progress

MARKER_NAME = ".n8nlock-installed"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "n8nlock"


def n8n_app_dir(version: str) -> Path:
    return cache_root() / f"n8n-{version}"


def node_dir(node_version: str) -> Path:
    return cache_root() / f"node-{node_version}"


@contextmanager
def install_lock(target: Path, progress: Progress) -> Iterator[None]:
    """Hold an exclusive lock for installing into `target`, across processes.

    The lock file sits next to the target (not inside it) because a failed install deletes
    the target's node_modules and must not delete the lock with it.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = target.with_name(target.name + ".lock")
    with lock_path.open("a") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(f"waiting for another process to finish installing into {target}")
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def read_marker(target: Path) -> str | None:
    try:
        return (target / MARKER_NAME).read_text().strip()
    except OSError:
        return None


def write_marker(target: Path, content: str) -> None:
    (target / MARKER_NAME).write_text(content + "\n")


def remove_marker(target: Path) -> None:
    (target / MARKER_NAME).unlink(missing_ok=True)
