"""The quick schema check agrees with jsonschema: it passes exactly the workflows jsonschema
passes, so `validate` reports the same findings, only sooner."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from n8n_lockkit.check.rules import schema
from n8n_lockkit.check.validate import check_workflow
from tests.unit.test_rules import MUTANTS, _paths, _replaced

TESTS = Path(__file__).parent.parent
CORPUS = sorted((TESTS / "corpus").glob("*.json"))
RULE_FIXTURES = sorted(
    p for p in (TESTS / "fixtures" / "rules").glob("*/*.json") if not p.name.endswith(".case.json")
)
# Values of every JSON type, and lengths and bounds either side of the schema's limits.
REPLACEMENTS: tuple[Any, ...] = (
    None,
    True,
    0,
    -1,
    1.5,
    "",
    "x",
    "n" * 129,
    [],
    [0],
    [0, 0],
    [0, 0, 0],
    [None],
    [[]],
    [{}],
    {},
    {"node": "A", "type": "main", "index": 0},
)


def _without(document: Any, path: tuple[Any, ...]) -> Any:
    result = copy.deepcopy(document)
    parent = result
    for part in path[:-1]:
        parent = parent[part]
    del parent[path[-1]]
    return result


def _mutants(seed: int, count: int) -> list[Any]:
    """Each corpus workflow with one value replaced by another type or size, or deleted."""
    rng = random.Random(seed)
    mutants = []
    for path in CORPUS:
        workflow = json.loads(path.read_text())
        # Parameters are any object to the schema: mutating inside them tells nothing.
        spots = [p for p in _paths(workflow) if "parameters" not in p[:-1]]
        for _ in range(count):
            spot = rng.choice(spots)
            if spot and rng.random() < 0.1:
                mutants.append(_without(workflow, spot))
            else:
                mutants.append(_replaced(workflow, spot, rng.choice(REPLACEMENTS)))
    return mutants


def _jsonschema_passes(workflow: Any) -> bool:
    return not any(True for _ in schema._validator().iter_errors(workflow))


def _parsed(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError:
        return None  # not JSON: no rule sees it


# The rule fixtures, and test_rules' rich workflow with every path made weird in turn.
DOCUMENTS = [d for d in map(_parsed, (*CORPUS, *RULE_FIXTURES)) if d is not None] + MUTANTS


def test_the_quick_check_passes_the_corpus_without_jsonschema() -> None:
    passed = [schema.conforms()(json.loads(p.read_text())) for p in CORPUS]
    assert all(passed), "the corpus is valid; jsonschema would be asked about every workflow"


def test_the_quick_check_agrees_on_the_fixtures_and_on_odd_shapes() -> None:
    disagree = [d for d in DOCUMENTS if schema.conforms()(d) != _jsonschema_passes(d)]
    assert disagree == [], json.dumps(disagree[0], indent=1)[:2000]


@pytest.mark.parametrize("seed", range(4))
def test_the_quick_check_agrees_on_mutated_workflows(seed: int) -> None:
    mutants = _mutants(seed, 60)
    disagree = [m for m in mutants if schema.conforms()(m) != _jsonschema_passes(m)]
    assert disagree == [], json.dumps(disagree[0], indent=1)[:2000]
    assert 0 < sum(map(_jsonschema_passes, mutants)) < len(mutants), "mutants of one kind only"


def test_a_value_the_quick_check_is_unsure_of_goes_to_jsonschema() -> None:
    workflow = json.loads(CORPUS[0].read_text())
    source = next(iter(workflow["connections"]))
    workflow["connections"][source]["main"][0][0]["index"] = 0.0  # an integer to JSON Schema
    assert not schema.conforms()(workflow)
    findings = check_workflow(workflow, display="w.json", key="w")
    assert [f for f in findings if f.rule == "workflow-schema"] == []
