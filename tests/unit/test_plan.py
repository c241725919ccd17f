from __future__ import annotations

import os
from pathlib import Path

import pytest

from n8n_lockkit.errors import WriteError
from n8n_lockkit.workspace.plan import Action, FileChange, Plan, apply


def test_actions() -> None:
    assert FileChange(Path("a"), None, "x").action is Action.CREATE
    assert FileChange(Path("a"), "x", "x").action is Action.IDENTICAL
    assert FileChange(Path("a"), "x", "y").action is Action.UPDATE
    assert FileChange(Path("a"), "x", "y", overwrite=False).action is Action.KEEP


def test_apply_writes_every_pending_file(tmp_path: Path) -> None:
    plan = Plan(
        (
            FileChange(tmp_path / "d" / "a.json", None, "A"),
            FileChange(tmp_path / "b.json", None, "B"),
        )
    )
    apply(plan, tmp_path)
    assert (tmp_path / "d" / "a.json").read_text() == "A"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.json", "b.json", "d"]


def test_a_read_only_file_stops_the_whole_plan(tmp_path: Path) -> None:
    first, locked = tmp_path / "first.json", tmp_path / "locked.json"
    first.write_text("old")
    locked.write_text("old")
    locked.chmod(0o444)
    plan = Plan((FileChange(first, "old", "new"), FileChange(locked, "old", "new")))
    with pytest.raises(WriteError, match="read-only"):
        apply(plan, tmp_path)
    assert first.read_text() == "old"


def test_a_failure_while_staging_leaves_every_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text("old")
    real_fdopen = os.fdopen
    calls = []

    def failing_fdopen(fd: int, *args: object, **kwargs: object) -> object:
        calls.append(fd)
        if len(calls) == 2:
            os.close(fd)
            raise OSError(28, "No space left on device", str(second))
        return real_fdopen(fd, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "fdopen", failing_fdopen)
    plan = Plan((FileChange(first, "old", "new"), FileChange(second, None, "new")))
    with pytest.raises(WriteError, match="No space left"):
        apply(plan, tmp_path)
    assert first.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.json"]


def test_a_symlink_inside_the_workspace_is_followed_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    apply(Plan((FileChange(link, "old", "new"),)), tmp_path)
    assert link.is_symlink() and real.read_text() == "new"


def test_a_symlink_leading_outside_the_workspace_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside.json"
    root.mkdir()
    outside.write_text("theirs")
    (root / "link.json").symlink_to(outside)
    with pytest.raises(WriteError, match="outside the workspace"):
        apply(Plan((FileChange(root / "link.json", "theirs", "ours"),)), root)
    assert outside.read_text() == "theirs"


def test_existing_file_mode_is_kept(tmp_path: Path) -> None:
    target = tmp_path / "env.yml"
    target.write_text("old")
    target.chmod(0o600)
    apply(Plan((FileChange(target, "old", "new"),)), tmp_path)
    assert target.stat().st_mode & 0o777 == 0o600
