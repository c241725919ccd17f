"""With -o json, an error is one JSON object on stdout (docs/exit-codes.md), with the exit
code it has in text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.fake_n8n import FakeN8n
from tests.conftest import Invoke, explain, snapshot

CORPUS = Path(__file__).parents[1] / "corpus"


def test_an_error_with_json_output_is_one_json_object_on_stdout(
    workspace: Path, invoke: Invoke
) -> None:
    text = invoke("add-lock-to-workflow", "--workflow-key", "nope", "--scope-expression", "x",
                  cwd=workspace)  # fmt: skip
    result = invoke("add-lock-to-workflow", "--workflow-key", "nope", "--scope-expression", "x",
                    "-o", "json", cwd=workspace)  # fmt: skip
    assert result.exit_code == text.exit_code == 3, explain(result)
    assert result.stderr == ""
    error, hint = (line.split(": ", 1)[1] for line in text.stderr.splitlines())
    assert json.loads(result.stdout) == {"error": {"message": error, "hint": hint, "exit_code": 3}}


def test_no_workspace_with_json_output_is_json_too(tmp_path: Path, invoke: Invoke) -> None:
    result = invoke("validate", "-o", "json", cwd=tmp_path)
    assert result.exit_code == 3, explain(result)
    document = json.loads(result.stdout)
    assert document["error"]["message"].startswith("no n8nlock workspace")
    assert document["error"]["exit_code"] == 3


def test_a_write_error_in_json_mode_leaves_one_document(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    from n8n_lockkit.errors import WriteError
    from n8n_lockkit.workspace import plan

    def fail(*args: object, **kwargs: object) -> None:
        raise WriteError("workflows/order_update.template.json: read-only file system")

    shutil.copy(CORPUS / "order_update.template.json", workspace / "workflows")
    before = snapshot(workspace)
    monkeypatch.setattr(plan, "apply", fail)
    result = invoke("add-lock-to-workflow", "--workflow-key", "order_update",
                    "--scope-expression", "orders", "-o", "json", cwd=workspace)  # fmt: skip
    assert result.exit_code == 5, explain(result)
    assert json.loads(result.stdout) == {
        "error": {
            "message": "workflows/order_update.template.json: read-only file system",
            "hint": None,
            "exit_code": 5,
        }
    }
    assert snapshot(workspace) == before


@pytest.fixture
def fake() -> FakeN8n:
    return FakeN8n()


def test_a_push_whose_document_lists_the_failures_says_the_summary_on_stderr(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> None:
    from tests.cli.test_pull import pushed_primitives

    pushed_primitives(workspace, invoke, monkeypatch)
    shutil.copy(CORPUS / "order_update.template.json", workspace / "workflows" / "x.json")
    fake.refuse_create[json.loads((workspace / "workflows" / "x.json").read_text())["name"]] = "no"
    result = invoke("push", "x", "-o", "json", cwd=workspace)
    assert result.exit_code == 4, explain(result)
    document = json.loads(result.stdout)  # one document: the push's, with each failure
    assert [w["status"] for w in document["workflows"]] == ["failed"]
    assert "Error: 1 of 1 workflow(s) failed: x" in result.stderr
