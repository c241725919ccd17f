"""`n8nlock upgrade` on a workspace that n8nlock made before engine v2 (format 1).

tests/fixtures/upgrade/format1 was made by n8nlock at commit 5ecf9dc (the last before engine
v2) from our own corpus: `init`, `create-lock --include-error-handler --include-rate-limit
--include-renew`, and add-lock-to-workflow / add-rate-limit on four corpus workflows (a
dynamic and a static scope, fail-fast, --lock-on-error, --renew-before, rate limits).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from n8n_lockkit.primitives import formats
from n8n_lockkit.primitives.catalogue import PRIMITIVES
from n8n_lockkit.rewrite.wrapping.unwrap import read_configs
from n8n_lockkit.rewrite.wrapping.wrap import LockConfig, Rates
from tests.conftest import Invoke, explain, snapshot

FORMAT1 = Path(__file__).parents[1] / "fixtures" / "upgrade" / "format1"
WRAPPED = ("batch_loop", "multi_method_webhook", "order_update", "schedule_sync")


@pytest.fixture
def old_workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(FORMAT1, root)
    return root


def load(root: Path, key: str) -> dict[str, object]:
    workflow: dict[str, object] = json.loads(
        (root / "workflows" / f"{key}.template.json").read_text()
    )
    return workflow


def configs(root: Path) -> dict[str, tuple[LockConfig | None, Rates]]:
    return {key: read_configs(load(root, key)) for key in WRAPPED}


def test_the_fixture_is_format_1_throughout(old_workspace: Path) -> None:
    for path in (old_workspace / "workflows").glob("*.json"):
        assert formats.workflow_format(json.loads(path.read_text())) == 1, path.name


def test_upgrade_brings_every_file_to_this_format_and_keeps_every_setting(
    old_workspace: Path, invoke: Invoke
) -> None:
    before = configs(old_workspace)
    result = invoke("upgrade", cwd=old_workspace)
    assert result.exit_code == 0, explain(result)
    for path in (old_workspace / "workflows").glob("*.json"):
        assert formats.workflow_format(json.loads(path.read_text())) == formats.FORMAT
    assert configs(old_workspace) == before  # same scope, TTL, wait, handler, renewals, limits
    for key in PRIMITIVES:
        assert formats.is_pristine_primitive(key, load(old_workspace, key))
    assert "push them with `n8nlock push --env dev`" in result.stderr


def test_upgrade_keeps_locks_calling_the_primitives_unless_inline(
    old_workspace: Path, invoke: Invoke
) -> None:
    assert invoke("upgrade", cwd=old_workspace).exit_code == 0
    lock, _ = read_configs(load(old_workspace, "order_update"))
    assert lock is not None and lock.via_subworkflow
    result = invoke("upgrade", "--inline", cwd=old_workspace)
    assert result.exit_code == 0, explain(result)
    lock, _ = read_configs(load(old_workspace, "order_update"))
    assert lock is not None and not lock.via_subworkflow
    assert "lock moved into the workflow" in result.stderr


def test_running_upgrade_again_changes_nothing(old_workspace: Path, invoke: Invoke) -> None:
    assert invoke("upgrade", cwd=old_workspace).exit_code == 0
    after_first = snapshot(old_workspace)
    result = invoke("upgrade", "-o", "json", cwd=old_workspace)
    assert result.exit_code == 0, explain(result)
    assert snapshot(old_workspace) == after_first
    document = json.loads(result.stdout)
    assert {c["action"] for c in document["changes"]} == {"identical"}
    assert document["push"] == []
    assert {w["format"] for w in document["workflows"]} == {formats.FORMAT}


def test_dry_run_reports_the_plan_as_json_and_writes_nothing(
    old_workspace: Path, invoke: Invoke
) -> None:
    before = snapshot(old_workspace)
    result = invoke("upgrade", "--dry-run", "-o", "json", cwd=old_workspace)
    assert result.exit_code == 0, explain(result)
    assert snapshot(old_workspace) == before
    document = json.loads(result.stdout)
    assert document["dry_run"] is True
    rows = {w["key"]: w for w in document["workflows"]}
    assert rows["order_update"] == {
        "key": "order_update",
        "kind": "wrapped",
        "format": 1,
        "to_format": formats.FORMAT,
        "action": "update",
        "note": "",
    }
    assert rows["lock_acquisition"]["kind"] == "primitive"
    assert sorted(document["push"]) == sorted([*PRIMITIVES, *WRAPPED])


def test_a_primitive_edited_by_hand_is_kept_with_a_warning_unless_forced(
    old_workspace: Path, invoke: Invoke
) -> None:
    path = old_workspace / "workflows" / "lock_release.template.json"
    edited = path.read_text().replace("n8nlock: Lock Release", "n8nlock: Lock Release (ours)")
    path.write_text(edited)
    result = invoke("upgrade", cwd=old_workspace)
    assert result.exit_code == 0, explain(result)
    assert path.read_text() == edited
    assert "lock_release.template.json was edited by hand" in result.stderr
    assert "--force-overwrite" in result.stderr
    assert formats.workflow_format(load(old_workspace, "lock_acquisition")) == formats.FORMAT

    result = invoke("upgrade", "--force-overwrite", cwd=old_workspace)
    assert result.exit_code == 0, explain(result)
    assert formats.is_pristine_primitive("lock_release", load(old_workspace, "lock_release"))


def test_a_stamped_primitive_edited_by_hand_is_kept_too(
    old_workspace: Path, invoke: Invoke
) -> None:
    assert invoke("upgrade", cwd=old_workspace).exit_code == 0
    path = old_workspace / "workflows" / "lock_acquisition.template.json"
    edited = path.read_text().replace('"Lock Sleep"', '"Lock Nap"')
    path.write_text(edited)
    result = invoke("upgrade", cwd=old_workspace)
    assert path.read_text() == edited
    assert "lock_acquisition.template.json was edited by hand" in result.stderr


def test_broken_json_is_an_error_and_nothing_is_written(
    old_workspace: Path, invoke: Invoke
) -> None:
    (old_workspace / "workflows" / "order_update.template.json").write_text('{"nodes": [')
    before = snapshot(old_workspace)
    result = invoke("upgrade", cwd=old_workspace)
    assert result.exit_code == 3, explain(result)
    assert "Error: workflows/order_update.template.json:1:12: not valid JSON" in result.stderr
    assert "Hint:" in result.stderr
    assert "Traceback" not in result.stderr
    assert snapshot(old_workspace) == before


def test_a_wrapped_workflow_whose_lock_nodes_were_broken_is_kept(
    old_workspace: Path, invoke: Invoke
) -> None:
    path = old_workspace / "workflows" / "order_update.template.json"
    workflow = json.loads(path.read_text())
    for node in workflow["nodes"]:
        if str(node.get("notes", "")).startswith("n8nlock:lock-acquire"):
            del node["parameters"]["workflowInputs"]
    path.write_text(json.dumps(workflow))
    result = invoke("upgrade", cwd=old_workspace)
    assert result.exit_code == 0, explain(result)
    assert json.loads(path.read_text()) == workflow
    assert "order_update.template.json was kept as it is" in result.stderr
    assert formats.workflow_format(load(old_workspace, "schedule_sync")) == formats.FORMAT


def test_a_workflow_n8nlock_never_touched_is_left_alone(
    old_workspace: Path, invoke: Invoke
) -> None:
    plain = old_workspace / "workflows" / "plain.template.json"
    plain.write_text('{"name": "plain", "nodes": [], "connections": {}}\n')
    result = invoke("upgrade", "-o", "json", cwd=old_workspace)
    assert result.exit_code == 0, explain(result)
    assert "plain" not in {w["key"] for w in json.loads(result.stdout)["workflows"]}
    assert plain.read_text() == '{"name": "plain", "nodes": [], "connections": {}}\n'


def test_upgrade_registers_what_the_wrapped_workflows_need(
    old_workspace: Path, invoke: Invoke
) -> None:
    env = old_workspace / "envs" / "dev.yml"
    env.write_text(
        env.read_text().replace("  lock_renew: {id: '', name: 'n8nlock: Lock Renew'}\n", "")
    )
    result = invoke("upgrade", cwd=old_workspace)
    assert result.exit_code == 0, explain(result)
    assert "lock_renew: {id: '', name: 'n8nlock: Lock Renew'}" in env.read_text()


FORMAT2_UNSTAMPED = FORMAT1.parent / "format2_unstamped"


def test_a_workspace_of_engine_v2_before_the_stamps_upgrades_in_place(
    tmp_path: Path, invoke: Invoke
) -> None:
    # Made by n8nlock f672502: engine v2's nodes, inline and via sub-workflow, no stamps yet.
    root = tmp_path / "ws"
    shutil.copytree(FORMAT2_UNSTAMPED, root)
    before = {key: read_configs(load(root, key)) for key in ("order_update", "code_heavy")}
    result = invoke("upgrade", "--dry-run", "-o", "json", cwd=root)
    assert result.exit_code == 0, explain(result)
    rows = {w["key"]: w for w in json.loads(result.stdout)["workflows"]}
    assert {key: (row["format"], row["action"]) for key, row in rows.items()} == {
        "lock_acquisition": (2, "update"),
        "lock_release": (2, "update"),
        "order_update": (2, "update"),
        "code_heavy": (2, "update"),
        # code_heavy's lock has --lock-on-error: the handler it names is added. Its rate
        # limit now runs in the workflow, so rate_limit_check is not.
        "error_handler_lock_cleanup": (None, "create"),
    }
    assert invoke("upgrade", cwd=root).exit_code == 0
    after = {key: read_configs(load(root, key)) for key in ("order_update", "code_heavy")}
    assert after == before
    assert after["code_heavy"][0] is not None and after["code_heavy"][0].via_subworkflow
