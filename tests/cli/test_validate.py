from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Invoke, explain

FIXTURES = Path(__file__).parent.parent / "fixtures" / "rules"


@pytest.fixture
def locked_workspace(workspace: Path, invoke: Invoke) -> Path:
    result = invoke("create-lock", "--include-error-handler", "--include-rate-limit", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    return workspace


def test_a_workspace_of_primitives_is_clean(locked_workspace: Path, invoke: Invoke) -> None:
    result = invoke("validate", cwd=locked_workspace)
    assert result.exit_code == 0, explain(result)
    assert "4 file(s) checked, 0 problem(s): all good" in result.stderr


def test_a_problem_names_file_json_path_and_rule(locked_workspace: Path, invoke: Invoke) -> None:
    bad = (FIXTURES / "connection-target-exists" / "bad.json").read_text()
    (locked_workspace / "workflows" / "orders.template.json").write_text(bad)
    result = invoke("validate", cwd=locked_workspace)
    assert result.exit_code == 1, explain(result)
    assert result.stdout == (
        "workflows/orders.template.json::$.connections.Webhook.main[0][0].node: "
        "connection to unknown node 'Shpae' [connection-target-exists]\n"
    )


def test_json_output_is_stable(locked_workspace: Path, invoke: Invoke) -> None:
    bad = (FIXTURES / "code-sandbox" / "bad.json").read_text()
    (locked_workspace / "workflows" / "orders.template.json").write_text(bad)
    result = invoke(
        "validate", "-o", "json", "workflows/orders.template.json", cwd=locked_workspace
    )
    assert result.exit_code == 1, explain(result)
    assert json.loads(result.stdout) == {
        "status": "fail",
        "files": ["workflows/orders.template.json"],
        "findings": [
            {
                "path": "workflows/orders.template.json",
                "location": "$.nodes[1].parameters.jsCode",
                "rule": "code-sandbox",
                "message": "Code node 'Shape': require() is blocked in n8n's Code sandbox",
                "hint": "n8n Cloud never allows it; self-hosted needs "
                "NODE_FUNCTION_ALLOW_BUILTIN/EXTERNAL",
            }
        ],
    }


def test_malformed_json_is_a_finding_with_line_and_column(workspace: Path, invoke: Invoke) -> None:
    (workspace / "workflows" / "broken.json").write_text('{"name": "x",\n  "nodes": [}\n')
    result = invoke("validate", cwd=workspace)
    assert result.exit_code == 1, explain(result)
    assert result.stdout.startswith("workflows/broken.json::line 2, column 13: not valid JSON")
    assert "Traceback" not in result.output


def test_a_missing_path_is_an_input_error(workspace: Path, invoke: Invoke) -> None:
    result = invoke("validate", "workflows/nope.json", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    assert "Error: workflows/nope.json: no such file or folder" in result.stderr


def test_with_env_every_placeholder_must_resolve(locked_workspace: Path, invoke: Invoke) -> None:
    assert invoke("validate", "--env", "dev", cwd=locked_workspace).exit_code == 0
    env = locked_workspace / "envs" / "dev.yml"
    env.write_text(env.read_text().replace('  redis: {id: "", name: ""}', "  other: {}"))
    result = invoke("validate", "--env", "dev", cwd=locked_workspace)
    assert result.exit_code == 1, explain(result)
    assert "{{@:env:credentials.redis.id}} not found in the env file" in result.stdout


def test_an_unknown_env_is_an_input_error(locked_workspace: Path, invoke: Invoke) -> None:
    result = invoke("validate", "--env", "prod", cwd=locked_workspace)
    assert result.exit_code == 3, explain(result)


def test_an_empty_workspace_is_clean(workspace: Path, invoke: Invoke) -> None:
    result = invoke("validate", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert "0 file(s) checked" in result.stderr


def test_rules_lists_every_rule_id(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("rules", cwd=tmp_path)
    assert result.exit_code == 0, explain(result)
    assert "primitive-marker-forbidden" in result.stdout
