from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import Invoke, explain

FIXTURES = Path(__file__).parent.parent / "fixtures" / "rules"
ORDERS = Path("workflows") / "orders.template.json"
# One error (connection-target-exists) and one warning (code-sandbox) in one workflow.
MIXED = FIXTURES / "connection-target-exists" / "bad.json"
WARNING_ONLY = FIXTURES / "code-sandbox" / "bad-env.json"
ERROR_LINE = (
    "workflows/orders.template.json::$.connections.Webhook.main[0][0].node: error: "
    "connection to unknown node 'Shpae' [connection-target-exists]"
)


@pytest.fixture
def locked_workspace(workspace: Path, invoke: Invoke) -> Path:
    result = invoke("create-lock", "--include-error-handler", "--include-rate-limit", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    return workspace


def put(workspace: Path, fixture: Path, target: Path = ORDERS) -> None:
    shutil.copy(fixture, workspace / target)


def with_env_warning(workspace: Path) -> None:
    """orders gets an error (unknown connection target) and a warning ($env in Code)."""
    workflow = json.loads(MIXED.read_text())
    workflow["nodes"][1]["parameters"]["jsCode"] = "return [{ json: { t: $env.TOKEN } }];"
    (workspace / ORDERS).write_text(json.dumps(workflow))


def test_a_workspace_of_primitives_is_clean(locked_workspace: Path, invoke: Invoke) -> None:
    result = invoke("validate", "--strict", cwd=locked_workspace)
    assert result.exit_code == 0, explain(result)
    assert "4 file(s) checked, 0 problem(s): all good" in result.stderr


def test_a_problem_names_file_json_path_severity_and_rule(
    locked_workspace: Path, invoke: Invoke
) -> None:
    put(locked_workspace, MIXED)
    result = invoke("validate", cwd=locked_workspace)
    assert result.exit_code == 1, explain(result)
    assert result.stdout == ERROR_LINE + "\n"
    assert result.stderr == "5 file(s) checked, 1 problem(s): 1 error, 0 warnings\n"


def test_warnings_alone_pass_and_say_so(workspace: Path, invoke: Invoke) -> None:
    put(workspace, WARNING_ONLY)
    result = invoke("validate", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert result.stdout.startswith(
        "workflows/orders.template.json::$.nodes[1].parameters.jsCode: warning: "
        "Code node 'Shape': $env fails the execution unless the instance sets "
        "N8N_BLOCK_ENV_ACCESS_IN_NODE=false"
    )
    assert result.stderr == (
        "1 file(s) checked, 1 problem(s): 0 errors, 1 warning "
        "(warnings fail the run only with --strict)\n"
    )


def test_strict_fails_on_warnings(workspace: Path, invoke: Invoke) -> None:
    put(workspace, WARNING_ONLY)
    result = invoke("validate", "--strict", cwd=workspace)
    assert result.exit_code == 1, explain(result)
    assert result.stderr == "1 file(s) checked, 1 problem(s): 0 errors, 1 warning\n"


def test_json_output_carries_severity_and_counts(workspace: Path, invoke: Invoke) -> None:
    put(workspace, WARNING_ONLY)
    result = invoke("validate", "-o", "json", str(ORDERS), cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert json.loads(result.stdout) == {
        "status": "ok",
        "strict": False,
        "counts": {"error": 0, "warning": 1},
        "files": ["workflows/orders.template.json"],
        "findings": [
            {
                "path": "workflows/orders.template.json",
                "location": "$.nodes[1].parameters.jsCode",
                "rule": "code-sandbox",
                "severity": "warning",
                "message": "Code node 'Shape': $env fails the execution unless the instance "
                "sets N8N_BLOCK_ENV_ACCESS_IN_NODE=false (blocked by default since n8n 2.0)",
                "hint": "pass the value in from the env file or a credential, or have the "
                "instance set N8N_BLOCK_ENV_ACCESS_IN_NODE=false",
            }
        ],
    }
    strict = invoke("validate", "-o", "json", "--strict", cwd=workspace)
    assert strict.exit_code == 1, explain(strict)
    assert json.loads(strict.stdout)["status"] == "fail"


@pytest.mark.parametrize(
    "args",
    [
        ("--ignore", "code-sandbox"),
        ("--ignore", "wait-explicit-interval,code-sandbox"),
        ("--ignore", "wait-explicit-interval", "--ignore", " code-sandbox "),
        ("--select", "connection-target-exists,unique-node-names"),
    ],
    ids=["ignore", "comma-list", "repeated", "select"],
)
def test_select_and_ignore_choose_the_rules(
    workspace: Path, invoke: Invoke, args: tuple[str, ...]
) -> None:
    with_env_warning(workspace)
    result = invoke("validate", "--strict", *args, cwd=workspace)
    assert result.exit_code == 1, explain(result)
    assert result.stdout == ERROR_LINE + "\n"


def test_select_of_a_warning_rule_leaves_the_error_out(workspace: Path, invoke: Invoke) -> None:
    with_env_warning(workspace)
    result = invoke("validate", "--select", "code-sandbox", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert "[code-sandbox]" in result.stdout
    assert "connection-target-exists" not in result.stdout


def test_an_unknown_rule_on_the_command_line_is_an_input_error(
    workspace: Path, invoke: Invoke
) -> None:
    result = invoke("validate", "--ignore", "code-sandbx", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    assert result.stderr == (
        "Error: --ignore: unknown rule 'code-sandbx'\n"
        "Hint: did you mean 'code-sandbox'? `n8nlock rules` lists the rule ids\n"
    )


@pytest.mark.parametrize(
    ("filename", "text"),
    [
        (
            "pyproject.toml",
            '[project]\nname = "flows"\n\n[tool.n8nlock]\nignore = ["code-sandbox"]\n',
        ),
        ("n8nlock.toml", 'ignore = ["code-sandbox"]\n'),
    ],
)
def test_the_workspace_config_ignores_rules(
    workspace: Path, invoke: Invoke, filename: str, text: str
) -> None:
    with_env_warning(workspace)
    (workspace / filename).write_text(text)
    result = invoke("validate", "--strict", cwd=workspace)
    assert result.exit_code == 1, explain(result)
    assert result.stdout == ERROR_LINE + "\n"


def test_n8nlock_toml_wins_over_pyproject_and_says_so(workspace: Path, invoke: Invoke) -> None:
    with_env_warning(workspace)
    (workspace / "pyproject.toml").write_text('[tool.n8nlock]\nselect = ["code-sandbox"]\n')
    (workspace / "n8nlock.toml").write_text('ignore = ["code-sandbox"]\n')
    result = invoke("validate", cwd=workspace)
    assert result.exit_code == 1, explain(result)
    assert result.stdout == ERROR_LINE + "\n"
    assert (
        "Warning: n8nlock.toml is used; [tool.n8nlock] in pyproject.toml is ignored"
        in result.stderr
    )


def test_the_command_line_overrides_the_config(workspace: Path, invoke: Invoke) -> None:
    put(workspace, WARNING_ONLY)
    (workspace / "n8nlock.toml").write_text('strict = true\nignore = ["code-sandbox"]\n')
    assert invoke("validate", cwd=workspace).exit_code == 0
    selected = invoke("validate", "--select", "code-sandbox", cwd=workspace)
    assert selected.exit_code == 1, explain(selected)  # --select starts over; strict stays
    relaxed = invoke("validate", "--select", "code-sandbox", "--no-strict", cwd=workspace)
    assert relaxed.exit_code == 0, explain(relaxed)


@pytest.mark.parametrize(
    ("text", "error", "hint"),
    [
        (
            'ignored = ["code-sandbox"]\n',
            "Error: n8nlock.toml: unknown key 'ignored'",
            "Hint: did you mean 'ignore'? the keys are ignore, select, strict",
        ),
        (
            'select = ["wait-explicit-intervals"]\n',
            "Error: n8nlock.toml select: unknown rule 'wait-explicit-intervals'",
            "Hint: did you mean 'wait-explicit-interval'? `n8nlock rules` lists the rule ids",
        ),
        (
            'ignore = "code-sandbox"\n',
            "Error: n8nlock.toml: ignore must be a list of rule ids",
            'Hint: for example ignore = ["code-sandbox", "wait-explicit-interval"]',
        ),
        ('strict = "yes"\n', "Error: n8nlock.toml: strict must be true or false", "Hint: "),
        ("ignore = [\n", "Error: n8nlock.toml: not valid TOML (", "Hint: fix the file"),
    ],
    ids=["unknown-key", "unknown-rule", "not-a-list", "strict-not-bool", "bad-toml"],
)
def test_a_bad_config_is_an_input_error(
    workspace: Path, invoke: Invoke, text: str, error: str, hint: str
) -> None:
    (workspace / "n8nlock.toml").write_text(text)
    result = invoke("validate", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    error_line, hint_line = result.stderr.splitlines()
    assert error_line.startswith(error)
    assert hint_line.startswith(hint)
    assert "Traceback" not in result.output


def test_an_unknown_key_in_pyproject_names_the_table(workspace: Path, invoke: Invoke) -> None:
    (workspace / "pyproject.toml").write_text("[tool.n8nlock]\nstrikt = true\n")
    result = invoke("validate", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    assert result.stderr.startswith(
        "Error: pyproject.toml [tool.n8nlock]: unknown key 'strikt'\nHint: did you mean 'strict'?"
    )


def test_a_pyproject_without_our_table_changes_nothing(workspace: Path, invoke: Invoke) -> None:
    put(workspace, WARNING_ONLY)
    (workspace / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    result = invoke("validate", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert "[code-sandbox]" in result.stdout


@pytest.mark.parametrize(
    "fixture",
    [
        FIXTURES / "workflow-schema" / "good-nameless.json",
        FIXTURES / "workflow-schema" / "good-null-outputs.json",
        FIXTURES / "node-reference-exists" / "good-unicode-escape.json",
        FIXTURES / "wait-explicit-interval" / "good-v1-exported.json",
        FIXTURES / "sub-trigger-explicit-inputs" / "good-v1.json",
        FIXTURES / "code-sandbox" / "good-helpers.json",
    ],
    ids=lambda p: f"{p.parent.name}/{p.stem}",
)
def test_shapes_n8n_exports_pass_strictly(workspace: Path, invoke: Invoke, fixture: Path) -> None:
    put(workspace, fixture)
    result = invoke("validate", "--strict", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert result.stdout == ""


def test_a_schema_problem_is_reported_with_the_other_rules(workspace: Path, invoke: Invoke) -> None:
    workflow = json.loads(WARNING_ONLY.read_text())
    workflow["connections"] = None
    workflow["settings"]["errorWorkflow"] = None
    (workspace / ORDERS).write_text(json.dumps(workflow))
    result = invoke("validate", cwd=workspace)
    assert result.exit_code == 1, explain(result)
    assert [line.rsplit(" ", 1)[-1] for line in result.stdout.splitlines()] == [
        "[workflow-schema]",
        "[api-settings-values]",
        "[code-sandbox]",
    ]
    assert "$.connections: error: expected object, found null" in result.stdout


def test_malformed_json_is_located_as_file_line_col_as_editors_read_it(
    workspace: Path, invoke: Invoke
) -> None:
    (workspace / "workflows" / "broken.json").write_text('{"name": "x",\n  "nodes": [}\n')
    result = invoke("validate", cwd=workspace)
    assert result.exit_code == 1, explain(result)
    assert result.stdout == (
        "workflows/broken.json:2:13: error: not valid JSON: Expecting value [json-syntax]\n"
    )
    assert "Traceback" not in result.output
    document = json.loads(invoke("validate", "-o", "json", cwd=workspace).stdout)
    assert document["findings"][0]["location"] == "2:13"
    wrapped = invoke("add-lock-to-workflow", "--workflow-key", "broken", "--scope-expression",
                     "orders", cwd=workspace)  # fmt: skip
    assert wrapped.exit_code == 3, explain(wrapped)
    assert wrapped.stderr.splitlines()[0] == (
        "Error: workflows/broken.json:2:13: not valid JSON: Expecting value"
    )


def test_a_file_holding_a_list_of_workflows_says_so_and_how_to_split_it(
    workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = {"name": "a", "nodes": [], "connections": {}}
    (workspace / "workflows" / "export.json").write_text(json.dumps([one, {**one, "name": "b"}]))
    split = (
        "n8nlock takes one workflow per file: export them one file each (`n8n export:workflow "
        "--all --separate --output=workflows/`), or split the list into one file per workflow"
    )
    result = invoke("validate", "-o", "json", cwd=workspace)
    assert result.exit_code == 1, explain(result)
    [finding] = json.loads(result.stdout)["findings"]
    assert finding["message"] == "the file holds a list of 2 workflows, not one workflow"
    assert finding["hint"] == split
    key = ("--key-expression", "={{ $json.id }}", "--window-seconds", "60")
    wrapped = invoke("add-dedupe", "--workflow-key", "export", *key, cwd=workspace)
    assert wrapped.exit_code == 3, explain(wrapped)
    assert wrapped.stderr.splitlines() == [
        "Error: workflows/export.json holds a list of 2 workflows, not one workflow",
        f"Hint: {split}",
    ]
    monkeypatch.setenv("N8N_API_KEY", "not used: push refuses before it sends")
    pushed = invoke("push", "--dry-run", cwd=workspace)
    assert pushed.exit_code == 3, explain(pushed)
    assert pushed.stderr.splitlines()[0] == wrapped.stderr.splitlines()[0]


def test_a_missing_path_is_an_input_error(workspace: Path, invoke: Invoke) -> None:
    result = invoke("validate", "workflows/nope.json", cwd=workspace)
    assert result.exit_code == 3, explain(result)
    assert "Error: workflows/nope.json: no such file or folder" in result.stderr


def linked(workspace: Path) -> Path:
    """The dev env with the Redis credential linked (as `redis-credential --link` records it)."""
    env = workspace / "envs" / "dev.yml"
    env.write_text(env.read_text().replace('redis: {id: "", name: ""}', "redis: {id: c1, name: R}"))
    return env


def test_with_env_every_placeholder_must_resolve(locked_workspace: Path, invoke: Invoke) -> None:
    env = linked(locked_workspace)
    assert invoke("validate", "--env", "dev", cwd=locked_workspace).exit_code == 0
    env.write_text(env.read_text().replace("  redis: {id: c1, name: R}", "  other: {}"))
    result = invoke("validate", "--env", "dev", cwd=locked_workspace)
    assert result.exit_code == 1, explain(result)
    assert "error: {{@:env:credentials.redis.id}} not found in the env file" in result.stdout


def test_an_unknown_env_is_an_input_error(locked_workspace: Path, invoke: Invoke) -> None:
    result = invoke("validate", "--env", "prod", cwd=locked_workspace)
    assert result.exit_code == 3, explain(result)


def test_an_empty_workspace_is_clean(workspace: Path, invoke: Invoke) -> None:
    result = invoke("validate", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    assert "0 file(s) checked" in result.stderr


def test_rules_lists_every_rule_with_its_severity(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("rules", cwd=tmp_path)
    assert result.exit_code == 0, explain(result)
    lines = {
        line.split()[0]: line.split()[1]
        for line in result.stdout.splitlines()
        if not line.startswith(" ")  # a summary's wrapped rest
    }
    assert lines["primitive-marker-forbidden"] == "error"
    assert lines["code-sandbox"] == "warning"
    assert lines["api-settings-values"] == "error"


def test_validate_with_env_fails_where_push_refuses_an_empty_credential_id(
    locked_workspace: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`init` leaves credentials.redis.id empty: push refuses it before it sends anything, so
    the CI gate `validate --env` says the same, offline."""
    result = invoke("validate", "--env", "dev", "-o", "json", cwd=locked_workspace)
    assert result.exit_code == 1, explain(result)
    found = [
        f
        for f in json.loads(result.stdout)["findings"]
        if f["path"].endswith("/lock_acquisition.template.json")
    ]
    refusal = (
        "{{@:env:credentials.redis.id}} is empty: the workflow or credential is not on n8n yet"
    )
    # one finding per placeholder and file, however many nodes use the credential
    assert [f["message"] for f in found if "redis.id" in f["message"]] == [
        f"{refusal} (11 places in this file)"
    ]
    assert found[0]["hint"] == (
        "run `n8nlock redis-credential --env dev` to create or link the Redis credential"
    )
    monkeypatch.setenv("N8N_API_KEY", "not used: push refuses before it sends")
    pushed = invoke("push", "--env", "dev", "--dry-run", "lock_acquisition", cwd=locked_workspace)
    assert pushed.exit_code == 3, explain(pushed)
    assert pushed.stderr.splitlines() == [
        f"Error: workflows/lock_acquisition.template.json: {refusal}",
        f"Hint: {found[0]['hint']}",
    ]


def test_validate_with_env_accepts_ids_that_push_mints_first_and_refuses_the_others(
    locked_workspace: Path, invoke: Invoke
) -> None:
    linked(locked_workspace)
    caller = json.loads((FIXTURES / "env-placeholder-resolves" / "good.json").read_text())
    (locked_workspace / "workflows" / "caller.json").write_text(json.dumps(caller))
    # lock_acquisition has no id yet, but it is a file of this workspace: push creates it first
    result = invoke("validate", "--env", "dev", cwd=locked_workspace)
    assert result.exit_code == 0, explain(result)
    (locked_workspace / "workflows" / "lock_acquisition.template.json").unlink()
    result = invoke("validate", "--env", "dev", cwd=locked_workspace)
    assert result.exit_code == 1, explain(result)
    assert "{{@:env:workflows.lock_acquisition.id}} is empty: the workflow or" in result.stdout


def test_validate_finds_the_reference_cycle_push_refuses(workspace: Path, invoke: Invoke) -> None:
    def calling(other: str) -> dict[str, object]:
        call = {
            "name": "Call",
            "type": "n8n-nodes-base.executeWorkflow",
            "typeVersion": 1,
            "position": [200, 0],
            "parameters": {"workflowId": f"{{{{@:env:workflows.{other}.id}}}}"},
        }
        return {"name": other, "nodes": [call], "connections": {}}

    (workspace / "workflows" / "a.json").write_text(json.dumps(calling("b")))
    (workspace / "workflows" / "b.json").write_text(json.dumps(calling("a")))
    result = invoke("validate", cwd=workspace)
    assert result.exit_code == 1, explain(result)
    assert (
        "workflows/a.json::$: error: workflows reference each other in a cycle: a -> b -> a "
        "[workflow-reference-cycle]"
    ) in result.stdout.splitlines()


def test_rules_shows_every_summary_whole(invoke: Invoke) -> None:
    from n8n_lockkit.check.rules import RULES

    result = invoke("rules")
    assert result.exit_code == 0, explain(result)
    shown = " ".join(result.stdout.split())
    for rule in RULES:
        assert rule.summary.endswith((".", ")")), f"{rule.id}: {rule.summary!r} is cut"
        assert f"{rule.id} {rule.severity.value} {rule.summary}" in shown
    rate = RULES[[r.id for r in RULES].index("rate-engine-current")]
    assert rate.summary.endswith("do not share one budget on a scope.")


def test_rules_as_json(invoke: Invoke) -> None:
    result = invoke("rules", "-o", "json")
    assert result.exit_code == 0, explain(result)
    document = json.loads(result.stdout)
    assert document[0] == {
        "id": "json-syntax",
        "severity": "error",
        "summary": "The file is JSON (checked as it is read: a file that is not reaches no other "
        "rule).",
    }
    assert {"lock-redis-once", "workflow-reference-cycle"} <= {rule["id"] for rule in document}
