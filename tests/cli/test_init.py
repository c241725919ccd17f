from __future__ import annotations

from pathlib import Path

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
