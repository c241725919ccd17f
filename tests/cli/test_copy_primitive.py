from __future__ import annotations

from pathlib import Path

from tests.conftest import Invoke, explain, snapshot


def test_list_shows_every_primitive(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("copy-primitive", "--list", cwd=tmp_path)
    assert result.exit_code == 0, explain(result)
    assert [line.split()[0] for line in result.stdout.splitlines()] == [
        "lock_acquisition",
        "lock_release",
        "lock_renew",
        "error_handler_lock_cleanup",
        "rate_limit_check",
    ]


def test_copies_one_file_and_registers_nothing(workspace: Path, invoke: Invoke) -> None:
    env_before = (workspace / "envs" / "dev.yml").read_text()
    result = invoke("copy-primitive", "rate_limit_check", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert [p.name for p in (workspace / "workflows").glob("*.json")] == [
        "rate_limit_check.template.json"
    ]
    assert (workspace / "envs" / "dev.yml").read_text() == env_before


def test_copying_again_is_identical(workspace: Path, invoke: Invoke) -> None:
    invoke("copy-primitive", "lock_release", cwd=workspace)
    before = snapshot(workspace)
    result = invoke("copy-primitive", "lock_release", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert snapshot(workspace) == before
    assert "identical" in result.stderr
    assert "not registered in any env" in result.stderr


def test_unknown_name_lists_the_available_ones(workspace: Path, invoke: Invoke) -> None:
    result = invoke("copy-primitive", "lock_acquire", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    assert "Error: unknown primitive 'lock_acquire'" in result.stderr
    assert "available primitives: lock_acquisition, lock_release" in result.stderr


def test_no_name_is_a_usage_error(workspace: Path, invoke: Invoke) -> None:
    result = invoke("copy-primitive", cwd=workspace)
    assert result.exit_code == 2, explain(result)
