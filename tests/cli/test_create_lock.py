from __future__ import annotations

import json
from pathlib import Path

import pytest

from n8n_lockkit.workspace.scaffold import env_text
from tests.conftest import Invoke, explain, snapshot

ALL_FLAGS = ("--include-error-handler", "--include-rate-limit")


def workflow_names(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "workflows").glob("*.json"))


def test_create_lock_writes_and_registers_the_two_lock_primitives(
    workspace: Path, invoke: Invoke
) -> None:
    result = invoke("create-lock", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert workflow_names(workspace) == [
        "lock_acquisition.template.json",
        "lock_release.template.json",
    ]
    env = (workspace / "envs" / "dev.yml").read_text()
    assert "lock_acquisition: {id: '', name: 'n8nlock: Lock Acquisition'}" in env
    assert "# workflow key -> {id, name}; ids are filled when pushed" in env


def test_flags_add_the_handler_the_rate_limit_and_lock_scopes(
    workspace: Path, invoke: Invoke
) -> None:
    env_file = workspace / "envs" / "dev.yml"
    env_file.write_text(env_file.read_text().replace("lockScopes: []", ""))
    result = invoke("create-lock", *ALL_FLAGS, cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert len(workflow_names(workspace)) == 4
    assert "lockScopes: []" in env_file.read_text()


def test_running_create_lock_again_changes_nothing(workspace: Path, invoke: Invoke) -> None:
    invoke("create-lock", *ALL_FLAGS, cwd=workspace)
    before = snapshot(workspace)
    result = invoke("create-lock", *ALL_FLAGS, cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert snapshot(workspace) == before
    assert "identical  workflows/lock_acquisition.template.json" in result.stderr
    assert "nothing to do" in result.stderr


def test_a_changed_primitive_is_kept_unless_forced(workspace: Path, invoke: Invoke) -> None:
    invoke("create-lock", cwd=workspace)
    primitive = workspace / "workflows" / "lock_release.template.json"
    primitive.write_text(primitive.read_text().replace("Lock Release", "My Release"))
    edited = primitive.read_text()

    kept = invoke("create-lock", cwd=workspace)
    assert kept.exit_code == 0, explain(kept)
    assert primitive.read_text() == edited
    assert "differs from the shipped primitive and was kept" in kept.stderr

    forced = invoke("create-lock", "--force-overwrite", cwd=workspace)
    assert forced.exit_code == 0, explain(forced)
    assert "My Release" not in primitive.read_text()


def test_dry_run_shows_the_plan_and_writes_nothing(workspace: Path, invoke: Invoke) -> None:
    before = snapshot(workspace)
    result = invoke("create-lock", "--dry-run", *ALL_FLAGS, cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert snapshot(workspace) == before
    assert "create  workflows/rate_limit_check.template.json" in result.stderr
    assert "update  envs/dev.yml" in result.stderr


def test_json_output_lists_every_change(workspace: Path, invoke: Invoke) -> None:
    result = invoke("create-lock", "-o", "json", "--dry-run", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    document = json.loads(result.stdout)
    assert document["dry_run"] is True
    assert {"path": "envs/dev.yml", "action": "update"} in document["changes"]


def test_several_envs_without_env_write_nothing(workspace: Path, invoke: Invoke) -> None:
    (workspace / "envs" / "prod.yml").write_text(env_text("prod"))
    before = snapshot(workspace)
    result = invoke("create-lock", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    assert "several envs (dev, prod)" in result.stderr
    assert snapshot(workspace) == before


def test_each_named_env_is_registered(workspace: Path, invoke: Invoke) -> None:
    (workspace / "envs" / "prod.yml").write_text(env_text("prod"))
    result = invoke("create-lock", "--env", "dev", "--env", "prod", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    for env in ("dev", "prod"):
        assert "lock_release:" in (workspace / "envs" / f"{env}.yml").read_text()


def test_unknown_env_is_refused_before_writing(workspace: Path, invoke: Invoke) -> None:
    before = snapshot(workspace)
    result = invoke("create-lock", "--env", "stage", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    assert result.stderr.splitlines() == [
        "Error: unknown env 'stage': envs/stage.yml does not exist",
        "Hint: available envs: dev",
    ]
    assert snapshot(workspace) == before


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        ("name: dev\nn8n: [unclosed\n", "envs/dev.yml:3: not valid YAML"),
        ("name: dev\nn8n:\n  url: ftp://x\n  apiKeyEnv: K\n", "envs/dev.yml::$.n8n.url"),
    ],
)
def test_a_broken_env_file_is_one_clear_line_and_no_change(
    workspace: Path, invoke: Invoke, broken: str, message: str
) -> None:
    (workspace / "envs" / "dev.yml").write_text(broken)
    before = snapshot(workspace)
    result = invoke("create-lock", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    assert result.stderr.startswith(f"Error: {message}")
    assert "Traceback" not in result.output
    assert snapshot(workspace) == before


def test_outside_a_workspace_says_how_to_make_one(tmp_path: Path, invoke: Invoke) -> None:
    result = invoke("create-lock", cwd=tmp_path)
    assert result.exit_code == 3, explain(result)
    assert "no n8nlock workspace" in result.stderr
    assert "Hint: run `n8nlock init`" in result.stderr


def test_workspace_is_found_from_a_subfolder(workspace: Path, invoke: Invoke) -> None:
    result = invoke("create-lock", cwd=workspace / "workflows")
    assert result.exit_code == 0, explain(result)
    assert len(workflow_names(workspace)) == 2


def test_workspace_option_overrides_discovery(
    workspace: Path, tmp_path: Path, invoke: Invoke
) -> None:
    result = invoke("--workspace", workspace, "create-lock", cwd=tmp_path)
    assert result.exit_code == 0, explain(result)


def test_a_read_only_workflows_folder_changes_nothing(workspace: Path, invoke: Invoke) -> None:
    (workspace / "workflows").chmod(0o555)
    before = snapshot(workspace)
    try:
        result = invoke("create-lock", cwd=workspace)
    finally:
        (workspace / "workflows").chmod(0o755)
    assert result.exit_code == 5, explain(result)
    assert "read-only; nothing was changed" in result.stderr
    assert snapshot(workspace) == before


def test_a_workflows_symlink_leaving_the_workspace_is_refused(
    workspace: Path, tmp_path: Path, invoke: Invoke
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (workspace / "workflows" / ".gitkeep").unlink()
    (workspace / "workflows").rmdir()
    (workspace / "workflows").symlink_to(outside)
    result = invoke("create-lock", cwd=workspace)
    assert result.exit_code == 5, explain(result)
    assert "outside the workspace" in result.stderr
    assert list(outside.iterdir()) == []


def test_the_removed_poll_interval_option_says_what_to_do(workspace: Path, invoke: Invoke) -> None:
    before = snapshot(workspace)
    result = invoke("create-lock", "--poll-interval-seconds", "0.5", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    error, hint = result.stderr.splitlines()
    assert error.startswith("Error: --poll-interval-seconds is gone: the engine decides how")
    assert hint == "Hint: drop --poll-interval-seconds from the command; nothing else changes"
    assert snapshot(workspace) == before
