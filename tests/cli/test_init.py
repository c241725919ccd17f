from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Invoke, explain, snapshot


def test_init_creates_env_and_workflows_folder(tmp_path: Path, invoke: Invoke) -> None:
    result = invoke("init", tmp_path / "ws", "--env", "dev", "--env", "prod")
    assert result.exit_code == 0, explain(result)
    assert sorted(p.name for p in (tmp_path / "ws" / "envs").iterdir()) == ["dev.yml", "prod.yml"]
    assert (tmp_path / "ws" / "workflows").is_dir()
    assert "create  envs/dev.yml" in result.stderr


def test_init_twice_changes_nothing(workspace: Path, invoke: Invoke) -> None:
    before = snapshot(workspace)
    result = invoke("init", workspace, "--env", "dev")
    assert result.exit_code == 0, explain(result)
    assert snapshot(workspace) == before
    assert "nothing to do" in result.stderr


def test_init_keeps_an_edited_env(workspace: Path, invoke: Invoke) -> None:
    env = workspace / "envs" / "dev.yml"
    env.write_text(env.read_text().replace("127.0.0.1:5678", "n8n.internal:5678"))
    result = invoke("init", workspace, "--env", "dev")
    assert result.exit_code == 0, explain(result)
    assert "n8n.internal" in env.read_text()
    assert "keep  envs/dev.yml" in result.stderr


def test_init_dry_run_writes_nothing(tmp_path: Path, invoke: Invoke) -> None:
    result = invoke("init", tmp_path / "ws", "--dry-run")
    assert result.exit_code == 0, explain(result)
    assert not (tmp_path / "ws").exists()
    assert "create  envs/dev.yml" in result.stderr


def test_init_refuses_a_bad_env_name(tmp_path: Path, invoke: Invoke) -> None:
    result = invoke("init", tmp_path / "ws", "--env", "../evil")
    assert result.exit_code == 3, explain(result)
    assert "invalid env name '../evil'" in result.stderr
    assert not (tmp_path / "ws").exists()


def test_init_keeps_n8nlock_state_out_of_git(tmp_path: Path, invoke: Invoke) -> None:
    root = tmp_path / "ws"
    result = invoke("init", root)
    assert result.exit_code == 0, explain(result)
    assert "create  .gitignore" in result.stderr
    assert ".n8nlock/\n" in (root / ".gitignore").read_text().splitlines(keepends=True)
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".n8nlock").mkdir()
    (root / ".n8nlock" / "synced.json").write_text("{}")
    ignored = subprocess.run(["git", "-C", str(root), "check-ignore", ".n8nlock/synced.json"])
    assert ignored.returncode == 0


def test_init_extends_the_users_gitignore_once(tmp_path: Path, invoke: Invoke) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".gitignore").write_text("# mine\n*.log\n!keep.log")  # no newline at the end
    result = invoke("init", root)
    assert result.exit_code == 0, explain(result)
    assert "update  .gitignore" in result.stderr
    text = (root / ".gitignore").read_text()
    assert text.startswith("# mine\n*.log\n!keep.log\n")
    assert text.splitlines()[-1] == ".n8nlock/"
    again = invoke("init", root)
    assert again.exit_code == 0, explain(again)
    assert (root / ".gitignore").read_text() == text
    assert "nothing to do" in again.stderr


@pytest.mark.parametrize("line", [".n8nlock", "/.n8nlock/", ".n8nlock/  "])
def test_init_leaves_a_gitignore_that_already_ignores_the_state(
    tmp_path: Path, invoke: Invoke, line: str
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".gitignore").write_text(f"*.log\n{line}\n")
    result = invoke("init", root)
    assert result.exit_code == 0, explain(result)
    assert (root / ".gitignore").read_text() == f"*.log\n{line}\n"
