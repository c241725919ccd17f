"""Every rule has fixtures: `good*.json` triggers no rule, `bad*.json` triggers its own.

A fixture may carry `<name>.case.json` with the workflow key (to play a primitive) and an
env (for placeholder rules). Every rule also survives any JSON shape without an exception.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from n8n_lockkit.check.findings import Severity
from n8n_lockkit.check.rules import RULES, Rule, WorkflowContext
from n8n_lockkit.check.rules.jsstring import decode_js_string
from n8n_lockkit.check.validate import WorkspaceView, check_workflow, parse_workflow
from n8n_lockkit.primitives import formats

FIXTURES = Path(__file__).parent.parent / "fixtures" / "rules"
CASES = sorted(p for p in FIXTURES.glob("*/*.json") if not p.name.endswith(".case.json"))
RULE_IDS = [rule.id for rule in RULES]


def _case(path: Path) -> dict[str, Any]:
    case_file = path.with_suffix(".case.json")
    return json.loads(case_file.read_text()) if case_file.exists() else {}


def _check(path: Path) -> list[str]:
    case = _case(path)
    workflow, findings = parse_workflow(path.read_text(), path.name)
    if workflow is not None:
        references = {k: tuple(v) for k, v in case.get("references", {}).items()}
        pushed = frozenset([*case.get("pushed", []), *references])
        workspace = WorkspaceView(pushed, references)
        findings = check_workflow(
            workflow,
            display=path.name,
            key=case.get("key", "orders"),
            env=case.get("env"),
            workspace=workspace,
        )
    return [f.rule for f in findings]


def test_every_rule_has_a_good_and_a_bad_fixture() -> None:
    for rule in RULES:
        names = {p.name for p in (FIXTURES / rule.id).glob("*.json")}
        assert "good.json" in names and "bad.json" in names, f"rule {rule.id} lacks fixtures"


def test_every_fixture_folder_names_a_rule() -> None:
    assert {p.name for p in FIXTURES.iterdir()} <= set(RULE_IDS)


def test_lock_nodes_that_n8nlock_stamped_a_retrying_format_may_retry() -> None:
    """From format 3 n8nlock itself makes its lock nodes retry (an expression n8n timed out
    across a stall): the inline lock of bad-inline.json, stamped the current format, passes."""
    workflow = json.loads((FIXTURES / "lock-no-retry" / "bad-inline.json").read_text())
    for node in workflow["nodes"]:
        notes = str(node.get("notes", ""))
        stamp = f"managed by n8nlock (format {formats.FORMAT});"
        node["notes"] = notes.replace("managed by n8nlock;", stamp)
        if node["type"] == "n8n-nodes-base.redis":
            node.update(retryOnFail=True, maxTries=3, waitBetweenTries=0)
    findings = check_workflow(workflow, display="format3.json", key="orders", env=None)
    assert [f.rule for f in findings] == []


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_fixture(path: Path) -> None:
    rule_ids = _check(path)
    if path.name.startswith("bad"):
        assert path.parent.name in rule_ids, f"{path} did not trigger; found {rule_ids}"
    else:
        assert rule_ids == [], f"{path} should be clean; found {rule_ids}"


def test_every_rule_has_a_one_line_summary_and_a_unique_id() -> None:
    assert all(rule.summary and "\n" not in rule.summary for rule in RULES)
    assert len(set(RULE_IDS)) == len(RULE_IDS)


def test_primitive_and_lock_rules_are_errors() -> None:
    contract = [r for r in RULES if r.id.startswith(("primitive-marker-", "lock-"))]
    assert len(contract) == 5
    assert {r.severity for r in contract} == {Severity.ERROR}


def test_what_n8n_accepts_but_may_misbehave_is_a_warning() -> None:
    warnings = {r.id for r in RULES if r.severity is Severity.WARNING}
    assert warnings == {
        "node-reference-exists",
        "api-top-level-keys",
        "code-sandbox",
        "code-no-function-node",
        "wait-explicit-interval",
        "error-workflow-literal",
        "format-current",
        "rate-engine-current",
        "expression-braced",
    }


def test_a_schema_problem_does_not_hide_the_other_rules() -> None:
    workflow = json.loads((FIXTURES / "code-sandbox" / "bad-env.json").read_text())
    workflow["connections"] = None
    rules = [f.rule for f in check_workflow(workflow, display="x", key="orders")]
    assert rules == ["workflow-schema", "code-sandbox"]


def test_errorworkflow_null_names_the_fix() -> None:
    workflow = json.loads((FIXTURES / "api-settings-values" / "bad.json").read_text())
    [finding] = check_workflow(workflow, display="x", key="orders")
    assert finding.location == "$.settings.errorWorkflow"
    assert finding.message == (
        "settings.errorWorkflow is null; n8n's API refuses it and expects a string"
    )
    assert "remove" in finding.hint


@pytest.mark.parametrize(
    ("body", "name"),
    [
        (r"When clicking \u2018Test workflow\u2019", "When clicking ‘Test workflow’"),
        (r"Box \u{1F4E6}", "Box \U0001f4e6"),
        (r"Box \uD83D\uDCE6", "Box \U0001f4e6"),
        (r"Tab\there\x21", "Tab\there!"),
        (r"It\'s \"quoted\" \\ \n", 'It\'s "quoted" \\ \n'),
        (
            r"a\
b",
            "ab",
        ),
        (r"\0 \b\f\r\v", "\0 \b\f\r\v"),
        (r"\q unknown escapes keep the character", "q unknown escapes keep the character"),
        (r"\u{110000} is too large", r"\u{110000} is too large"),
        ("plain", "plain"),
    ],
)
def test_javascript_escapes_are_decoded_in_references(body: str, name: str) -> None:
    assert decode_js_string(body) == name


def test_a_reference_written_with_escapes_names_the_real_node() -> None:
    workflow = json.loads((FIXTURES / "node-reference-exists" / "bad-escaped.json").read_text())
    [finding] = check_workflow(workflow, display="x", key="orders")
    assert finding.message == "refers to unknown node 'When clicking ‘Test’'"


# A workflow that reaches every rule's code: Code, Function, Wait, sub-trigger, Redis and
# Execute Workflow nodes, settings, expressions and connections (with a null output).
RICH: dict[str, Any] = {
    "name": "rich",
    "nodes": [
        {
            "id": "1",
            "name": "Hook",
            "type": "n8n-nodes-base.webhook",
            "typeVersion": 2,
            "position": [0, 0],
            # A webhook whose caller waits for its answer, in front of a parked waiter…
            "parameters": {"path": "x", "responseMode": "responseNode"},
            # …and the settings of a lock on a scope typed without ={{ }}.
            "notes": "n8nlock:lock-context — managed by n8nlock (format 1); made long ago\n"
            'config: {"scope": "$json.id", "ttl_seconds": 60, "max_wait_seconds": 60, '
            '"max_concurrent": 1}',
        },
        {
            "id": "2",
            "name": "Code",
            "type": "n8n-nodes-base.code",
            "typeVersion": 2,
            "position": [1, 0],
            "parameters": {"jsCode": "// @n8n-evol-I:primitive\n$('Hook')"},
        },
        {
            "id": "3",
            "name": "Fn",
            "type": "n8n-nodes-base.function",
            "typeVersion": 1,
            "position": [2, 0],
            "parameters": {"functionCode": "return $env.X;"},
            "notes": "n8nlock:rate-reread — managed by n8nlock (format 3); a bucket-era rate limit",
        },
        {
            "id": "4",
            "name": "Pause",
            "type": "n8n-nodes-base.wait",
            "typeVersion": 1.1,
            "position": [3, 0],
            "parameters": {"amount": -1, "unit": "weeks"},
        },
        {
            "id": "5",
            "name": "Start",
            "type": "n8n-nodes-base.executeWorkflowTrigger",
            "typeVersion": 1.1,
            "position": [4, 0],
            "parameters": {"workflowInputs": {"values": [{"name": "scope"}, {}]}},
        },
        {
            "id": "6",
            "name": "Redis",
            "type": "n8n-nodes-base.redis",
            "typeVersion": 1,
            "position": [5, 0],
            "retryOnFail": True,
            "parameters": {"expire": True, "ttl": 0, "value": "={{ $node['Hook'].json }}"},
        },
        {
            "id": "7",
            "name": "Call",
            "type": "n8n-nodes-base.executeWorkflow",
            "typeVersion": 1.2,
            "position": [6, 0],
            "retryOnFail": True,
            "parameters": {
                "workflowId": {"value": "{{@:env:workflows.lock_acquisition.id}}"},
                "workflowInputs": {"value": {"ttl_seconds": 0, "scope": "={{ $items('Nope') }}"}},
            },
        },
        {
            "id": "8",
            "name": "Env",
            "type": "n8n-nodes-base.code",
            "typeVersion": 2,
            "position": [7, 0],
            "parameters": {"jsCode": "return [{json: {a: $env.A}}];"},
        },
        {
            "id": "9",
            "name": "Park",
            "type": "n8n-nodes-base.wait",
            "typeVersion": 1.1,
            "position": [8, 0],
            "parameters": {"resume": "webhook"},
            "notes": "n8nlock:lock-park — managed by n8nlock (format 4)",
        },
        {
            "id": "2",
            "name": "Hook",
            "type": "n8n-nodes-base.stickyNote",
            "foo": 1,
            "parameters": {"content": "$('Hook')"},
        },
    ],
    "connections": {
        "Hook": {"main": [[{"node": "Code", "type": "main", "index": 0}]]},
        "Code": {"main": [None, [{"node": "Fn", "type": "main", "index": 0}]]},
        "Ghost": {"main": [[{"node": "Nowhere", "type": "main", "index": 0}]]},
    },
    "settings": {"errorWorkflow": "={{ 1 }}", "saveManualExecutions": "DEFAULT", "x": 1},
    "extra": True,
}
WEIRD: tuple[Any, ...] = (
    None,
    True,
    0,
    -1.5,
    "",
    "x",
    "=",
    [],
    [None],
    [[None]],
    [{}],
    {},
    {"a": None},
    {"main": None},
)


def _paths(value: Any, where: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path inside a JSON value, the root included."""
    yield where
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*where, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*where, index))


def _replaced(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return copy.deepcopy(value)
    result = copy.deepcopy(document)
    parent = result
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = copy.deepcopy(value)
    return result


def _mutants() -> Iterator[Any]:
    """RICH with each path in turn replaced by each weird value, then random combinations."""
    paths = list(_paths(RICH))
    for path in paths:
        for value in WEIRD:
            yield _replaced(RICH, path, value)
    rng = random.Random(12)
    for _ in range(300):
        mutant: Any = RICH
        for _ in range(rng.randint(2, 6)):
            candidates = list(_paths(mutant)) if isinstance(mutant, (dict, list)) else [()]
            mutant = _replaced(mutant, rng.choice(candidates), rng.choice(WEIRD))
        yield mutant


MUTANTS = list(_mutants())


def test_the_rich_workflow_reaches_every_rule() -> None:
    env: dict[str, Any] = {"workflows": {}, "n8n": {"queueMode": True}}  # …in queue mode
    # lock_acquisition, which RICH calls, calls orders back: a cycle push refuses
    workspace = WorkspaceView(frozenset(), {"lock_acquisition": ("orders",)})
    rules = {
        f.rule
        for f in check_workflow(RICH, display="x", key="orders", env=env, workspace=workspace)
    }
    primitive = {f.rule for f in check_workflow(RICH, display="x", key="lock_acquisition")}
    assert rules | primitive | {"json-syntax"} == set(RULE_IDS)


@pytest.mark.parametrize("rule", RULES, ids=RULE_IDS)
def test_no_rule_raises_on_any_shape(rule: Rule) -> None:
    for mutant in MUTANTS:
        if not isinstance(mutant, dict):
            continue  # parse_workflow reports a non-object before any rule runs
        for key in ("orders", "lock_acquisition"):
            context = WorkflowContext(key=key, workflow=mutant, env={"workflows": None})
            try:
                list(rule.check(context))
            except Exception as err:  # the assertion message must show the shape
                pytest.fail(f"{rule.id} raised {err!r} on {json.dumps(mutant)[:2000]}")


def test_the_whole_validate_path_never_raises() -> None:
    for mutant in MUTANTS:
        text = json.dumps(mutant)
        workflow, findings = parse_workflow(text, "x")
        if workflow is not None:
            findings = check_workflow(workflow, display="x", key="orders", env={})
        assert all(f.severity in (Severity.ERROR, Severity.WARNING) for f in findings)
