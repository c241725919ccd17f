from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from n8n_lockkit import graph

CORPUS = Path(__file__).parent.parent / "corpus"


def corpus(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CORPUS / f"{name}.template.json").read_text())
    return loaded


def test_triggers_are_found_by_type_not_by_order() -> None:
    workflow = corpus("two_triggers")
    workflow["nodes"].reverse()
    assert sorted(n["name"] for n in graph.triggers(workflow)) == ["Nightly", "Webhook"]


def test_unconnected_if_output_is_a_terminal() -> None:
    assert graph.terminal_outputs(corpus("if_one_branch"), ["Webhook"]) == [
        ("Big Order?", 1),
        ("Flag", 0),
    ]


def test_switch_counts_its_rules_and_fallback() -> None:
    assert graph.terminal_outputs(corpus("switch_fallback"), ["Webhook"]) == [
        ("Route", 1),
        ("Refund", 0),
        ("Other", 0),
    ]


def test_sticky_notes_and_disconnected_nodes_are_not_terminals() -> None:
    assert graph.terminal_outputs(corpus("code_heavy"), ["Webhook"]) == [("Format", 0)]


def test_nodes_on_a_loop_are_not_terminals() -> None:
    workflow = corpus("batch_loop")
    assert graph.in_cycles(workflow) == {"Loop Over Items", "Handle Batch"}
    assert graph.terminal_outputs(workflow, ["Webhook"]) == [("Report", 0)]


def test_an_error_output_counts() -> None:
    node = {"name": "Call", "type": "n8n-nodes-base.httpRequest", "onError": "continueErrorOutput"}
    assert graph.output_count(node) == 2
