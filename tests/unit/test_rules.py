"""Every rule has fixtures: `good*.json` must not trigger it, `bad*.json` must.

A fixture may carry `<name>.case.json` with the workflow key (to play a primitive) and an
env (for placeholder rules).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from n8n_lockkit.rules import RULES
from n8n_lockkit.validate import check_workflow

FIXTURES = Path(__file__).parent.parent / "fixtures" / "rules"
CASES = sorted(p for p in FIXTURES.glob("*/*.json") if not p.name.endswith(".case.json"))


def _check(path: Path) -> list[str]:
    case_file = path.with_suffix(".case.json")
    case: dict[str, Any] = json.loads(case_file.read_text()) if case_file.exists() else {}
    workflow = json.loads(path.read_text())
    findings = check_workflow(
        workflow, display=path.name, key=case.get("key", "orders"), env=case.get("env")
    )
    return [f.rule for f in findings]


def test_every_rule_has_a_good_and_a_bad_fixture() -> None:
    for rule in RULES:
        names = {p.name for p in (FIXTURES / rule.id).glob("*.json")}
        assert "good.json" in names and "bad.json" in names, f"rule {rule.id} lacks fixtures"


def test_every_fixture_folder_names_a_rule() -> None:
    known = {rule.id for rule in RULES}
    assert {p.name for p in FIXTURES.iterdir()} <= known


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_fixture(path: Path) -> None:
    rule_ids = _check(path)
    if path.name.startswith("bad"):
        assert path.parent.name in rule_ids, f"{path} did not trigger; found {rule_ids}"
    else:
        assert rule_ids == [], f"{path} should be clean; found {rule_ids}"


def test_every_rule_has_a_one_line_summary() -> None:
    assert all(rule.summary and "\n" not in rule.summary for rule in RULES)
