from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from n8n_lockkit.rewrite.graphs import graph

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


def test_null_outputs_of_older_exports_read_as_unconnected() -> None:
    workflow = corpus("multi_method_webhook")
    assert workflow["connections"]["Big?"]["main"][0] is None
    assert graph.outputs(workflow, "Big?") == [[], [graph.link("Small")]]
    assert graph.terminal_outputs(workflow, ["Orders API"]) == [
        ("Read Order", 0),
        ("Big?", 0),
        ("Small", 0),
    ]


def test_normalise_writes_null_outputs_as_empty_and_drops_trailing_ones() -> None:
    workflow = corpus("imap_manual_community")
    workflow["connections"]["Broken"] = None
    graph.normalise(workflow)
    assert "Ticket" not in workflow["connections"], "a source with only null outputs goes"
    assert "Broken" not in workflow["connections"]
    multi = corpus("multi_method_webhook")
    graph.normalise(multi)
    assert multi["connections"]["Big?"]["main"] == [[], [graph.link("Small")]]


def test_an_imap_trigger_is_a_trigger_by_n8ns_catalogue() -> None:
    assert graph.is_trigger({"type": "n8n-nodes-base.emailReadImap"})
    assert graph.is_trigger({"type": "@n8n/n8n-nodes-langchain.chatTrigger"})
    assert graph.is_trigger({"type": "n8n-nodes-base.start"}), "legacy exports still start"
    assert not graph.is_trigger({"type": "n8n-nodes-base.wait"}), "Wait has webhooks, no trigger"


def test_every_entry_of_imap_manual_and_an_unknown_community_trigger() -> None:
    entries = graph.entries(corpus("imap_manual_community"))
    assert [(e.node, e.output, e.known) for e in entries] == [
        ("Inbox", 0, True),
        ("When clicking ‘Test workflow’", 0, True),
        ("Community Poller", 0, False),
    ]


def test_an_unknown_node_that_something_leads_into_is_not_an_entry() -> None:
    workflow = corpus("imap_manual_community")
    workflow["connections"]["Inbox"]["main"][0].append(graph.link("Community Poller"))
    assert "Community Poller" not in [e.node for e in graph.entries(workflow)]


def test_a_known_node_without_inputs_is_not_an_entry() -> None:
    workflow = corpus("code_heavy")
    workflow["connections"].pop("Webhook")
    assert graph.entries(workflow) == []


def test_a_webhook_with_several_methods_has_one_entry_per_connected_output() -> None:
    entries = graph.entries(corpus("multi_method_webhook"))
    assert [(e.node, e.output, e.output_count) for e in entries] == [
        ("Orders API", 0, 2),
        ("Orders API", 1, 2),
    ]


def test_graph_reads_odd_shapes_without_failing() -> None:
    odd: dict[str, Any] = {
        "nodes": [None, 3, {"name": 5}, {"name": "A", "type": "x.y"}],
        "connections": {"A": {"main": [None, [None, {"no": "node"}, {"node": "B"}]]}, "C": None},
    }
    assert graph.outputs(odd, "A") == [[], [{"node": "B"}]]
    assert [n["name"] for n in graph.nodes(odd)] == ["A"]
    assert [e.node for e in graph.entries(odd)] == ["A"]
    assert graph.outputs({"connections": []}, "A") == []
    assert graph.nodes({"nodes": {"A": {}}}) == []
