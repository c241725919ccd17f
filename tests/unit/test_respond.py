"""Lock Respond (`wrapping/respond.py`): a "last node" webhook answered by a Respond to
Webhook node of ours, for a wrap that parks its waiters; `unwrap` gives the webhook back."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from n8n_lockkit.check.validate import check_workflow
from n8n_lockkit.errors import ExitCode
from n8n_lockkit.primitives.render import dump_workflow
from n8n_lockkit.rewrite.canvas.geometry import node_boxes, note_boxes, overlaps
from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.wrapping import respond
from n8n_lockkit.rewrite.wrapping.unwrap import unwrap
from n8n_lockkit.rewrite.wrapping.wrap import LockConfig, RateLimitConfig, WrapError, wrap
from tests.conftest import assert_golden

CORPUS = Path(__file__).parent.parent / "corpus"
GOLDEN = Path(__file__).parent.parent / "fixtures" / "wrap"
LOCK = LockConfig("orders", 300, 60)
HEADERS = {"entries": [{"name": "x-kind", "value": "order"}]}
# responseData option: the webhook parameters that shape the answer (beyond responseMode).
OPTIONS: dict[str, dict[str, Any]] = {
    "firstEntryJson": {
        "options": {
            "responseCode": {"values": {"responseCode": 201}},
            "responseHeaders": HEADERS,
            "responseContentType": "application/vnd.orders+json",
        }
    },
    "allEntries": {
        "responseData": "allEntries",
        "options": {"responseCode": {"values": {"responseCode": "customCode", "customCode": 299}}},
    },
    "noData": {"responseData": "noData", "options": {"responseHeaders": HEADERS}},
}


def load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CORPUS / f"{name}.template.json").read_text())
    return loaded


def order_update(**answer: Any) -> dict[str, Any]:
    body = load("order_update")
    webhook = next(n for n in body["nodes"] if n["name"] == "Webhook")
    webhook["parameters"] = {**webhook["parameters"], **answer}
    return body


def node(workflow: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in graph.nodes(workflow) if n["name"] == name)


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_each_response_data_option_matches_golden(option: str, update_goldens: bool) -> None:
    wrapped = wrap(order_update(**OPTIONS[option]), "orders", LOCK, None, respond_by_node=True)
    assert check_workflow(wrapped, display="orders", key="orders") == []
    assert_golden(GOLDEN / f"respond_{option}.json", dump_workflow(wrapped), update_goldens)


@pytest.mark.parametrize(
    ("answer", "respond_with", "options"),
    [
        ({}, "firstIncomingItem", {}),
        (OPTIONS["firstEntryJson"], "firstIncomingItem", {
            "responseCode": 201,
            "responseHeaders": {"entries": [
                {"name": "x-kind", "value": "order"},
                {"name": "content-type", "value": "application/vnd.orders+json"},
            ]},
        }),
        (OPTIONS["allEntries"], "allIncomingItems", {"responseCode": 299}),
        (OPTIONS["noData"], "noData", {"responseHeaders": HEADERS}),
        # n8n drops a customCode that "Custom Code" was not chosen for (measured: 200).
        ({"options": {"responseCode": {"values": {"responseCode": 200, "customCode": 299}}}},
         "firstIncomingItem", {}),
        # Webhook v1 keeps the code at the top; the content type is for the first entry only.
        ({"responseCode": 202, "responseData": "allEntries",
          "options": {"responseContentType": "text/csv"}}, "allIncomingItems",
         {"responseCode": 202}),
    ],
)  # fmt: skip
def test_lock_respond_answers_what_last_node_answers(
    answer: dict[str, Any], respond_with: str, options: dict[str, Any]
) -> None:
    body = order_update(**answer)
    parameters = respond.answer("Webhook", node(body, "Webhook")["parameters"])
    assert parameters == {"respondWith": respond_with, "options": options}
    wrapped = wrap(body, "orders", LOCK, None, respond_by_node=True)
    webhook = node(wrapped, "Webhook")["parameters"]
    assert webhook["responseMode"] == "responseNode"
    assert "responseData" not in webhook and "responseCode" not in webhook
    assert webhook["options"] == {}
    # Every path that ends without failing ends in Lock Respond (after Lock Output, or after
    # the release beside it); the failing ones stay ends.
    ends = {n for n, _ in graph.terminal_outputs(wrapped, ["Webhook"])}
    assert "Lock Respond" in ends
    others = {node(wrapped, n)["type"] for n in ends - {"Lock Respond", "Lock Output"}}
    assert others == {"n8n-nodes-base.stopAndError"}


def test_all_entries_and_no_data_answer_a_body_that_ends_with_no_items_too() -> None:
    """n8n runs no node on an empty input (Lock Output then runs only at the end, without its
    targets): Lock Respond follows the release, as Lock Output does, and reads the items where
    Lock Output reads them ("first entry" of no items has no equivalent)."""
    first, every, none = (
        wrap(order_update(**OPTIONS[o]), "orders", LOCK, None, respond_by_node=True)
        for o in ("firstEntryJson", "allEntries", "noData")
    )

    def feeding(workflow: dict[str, Any]) -> set[str]:
        links = graph.connections(workflow)
        return {s for s in links for out in graph.outputs(workflow, s) for x in out
                if x["node"] == "Lock Respond"}  # fmt: skip

    released = {"Lock Waited?", "Lock Release Once?", "Lock Count Wait"}
    assert feeding(first) == {"Lock Output"}
    assert feeding(every) == feeding(none) == released
    assert node(none, "Lock Respond")["parameters"]["respondWith"] == "noData"
    parameters = node(every, "Lock Respond")["parameters"]
    assert parameters["respondWith"] == "json"
    assert '[["Answer", 0]].reverse()' in parameters["responseBody"]
    assert parameters["options"] == {"responseCode": 299}


def test_several_ends_are_read_as_lock_outputs_code_picks_them() -> None:
    body = load("multi_method_webhook")
    webhook = next(n for n in body["nodes"] if n["type"] == respond.WEBHOOK)
    webhook["parameters"]["responseData"] = "allEntries"
    wrapped = wrap(body, "multi", LOCK, None, respond_by_node=True)
    picked = '[["Read Order", 0], ["Big?", 0], ["Small", 0]]'
    assert picked in node(wrapped, "Lock Respond")["parameters"]["responseBody"]
    # a name with "}}" in it does not end the expression: its braces are escaped
    hostile = json.loads(json.dumps(body).replace('"Small"', '"Small }}"'))
    answered = node(wrap(hostile, "multi", LOCK, None, respond_by_node=True), "Lock Respond")
    assert r'["Small \u007d\u007d", 0]' in answered["parameters"]["responseBody"]


@pytest.mark.parametrize("option", sorted(OPTIONS))
@pytest.mark.parametrize(
    "configs",
    [(LOCK, None), (LockConfig("orders", on_busy="skip"), RateLimitConfig("r", 5, 60))],
    ids=["lock", "skip-and-rate"],
)
def test_unwrap_gives_the_webhook_back_byte_for_byte(
    option: str, configs: tuple[LockConfig, RateLimitConfig | None]
) -> None:
    body = order_update(**OPTIONS[option])
    wrapped = wrap(body, "orders", *configs, respond_by_node=True)
    assert dump_workflow(unwrap(wrapped)) == dump_workflow(unwrap(wrap(body, "orders", *configs)))
    assert dump_workflow(unwrap(wrapped)) == dump_workflow(body)


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_it_is_idempotent_and_deterministic(option: str) -> None:
    body = order_update(**OPTIONS[option])
    wrapped = wrap(body, "orders", LOCK, None, respond_by_node=True)
    again = respond.respond_by_node(wrapped, "Webhook", "orders")
    assert dump_workflow(again) == dump_workflow(wrapped)
    assert dump_workflow(wrap(body, "orders", LOCK, None, respond_by_node=True)) == (
        dump_workflow(wrapped)
    )
    rewrapped = wrap(unwrap(wrapped), "orders", LOCK, None, respond_by_node=True)
    assert dump_workflow(rewrapped) == dump_workflow(wrapped)


def test_it_is_a_pure_function_and_off_by_default() -> None:
    body = order_update(**OPTIONS["allEntries"])
    kept = copy.deepcopy(body)
    wrapped = wrap(body, "orders", LOCK, None)
    assert body == kept
    assert "Lock Respond" not in {n["name"] for n in graph.nodes(wrapped)}
    rewritten = respond.respond_by_node(wrapped, "Webhook", "orders")
    assert node(wrapped, "Webhook")["parameters"]["responseMode"] == "lastNode"
    assert (
        node(rewritten, "Lock Respond")["id"]
        == node(wrap(body, "orders", LOCK, None, respond_by_node=True), "Lock Respond")["id"]
    )


@pytest.mark.parametrize("name", ["webhook_respond_node", "webhook_on_received", "schedule_sync"])
def test_webhooks_that_do_not_answer_with_their_last_node_are_left_alone(name: str) -> None:
    body = load(name)
    assert wrap(body, name, LOCK, None, respond_by_node=True) == wrap(body, name, LOCK, None)


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"responseData": "firstEntryBinary"}, "binary data"),
        ({"options": {"responsePropertyName": "balance"}}, "responsePropertyName"),
        ({"options": {"responseCode": {"values": {"responseCode": "={{ 200 }}"}}}}, "code"),
        (
            {"options": {"responseHeaders": {"entries": [{"name": "x", "value": "={{ 1 }}"}]}}},
            "expression",
        ),
        ({"responseData": "={{ 'allEntries' }}"}, "response data"),
    ],
)
def test_what_has_no_exact_equivalent_is_refused(answer: dict[str, Any], says: str) -> None:
    with pytest.raises(WrapError) as refused:
        wrap(order_update(**answer), "orders", LOCK, None, respond_by_node=True)
    assert says in refused.value.message
    assert "'Webhook'" in refused.value.message
    assert refused.value.hint and "do not park" in refused.value.hint
    assert refused.value.exit_code == ExitCode.INPUT


def test_several_ends_of_the_users_own_are_refused_without_the_locks_join() -> None:
    body = load("multi_method_webhook")
    rate = RateLimitConfig("r", 5, 60)
    with pytest.raises(WrapError, match="several nodes") as refused:
        wrap(body, "multi", None, rate, respond_by_node=True)
    assert refused.value.hint and "wrap it with a lock" in refused.value.hint
    wrapped = wrap(body, "multi", LOCK, rate, respond_by_node=True)
    assert node(wrapped, "Lock Respond")


@pytest.mark.parametrize("mode", ["lastNode", "onReceived"])
def test_another_webhook_that_leads_to_the_same_end_is_refused(mode: str) -> None:
    """n8n answers a webhook that does not answer by node with "Unused Respond to Webhook node
    found in the workflow" when one follows it."""
    body = load("two_triggers")
    other = copy.deepcopy(next(n for n in body["nodes"] if n["name"] == "Webhook"))
    other.update(name="Other Hook", id="other", webhookId="other")
    other["parameters"] = {**other["parameters"], "path": "other", "responseMode": mode}
    body["nodes"].append(other)
    body["connections"]["Other Hook"] = copy.deepcopy(body["connections"]["Webhook"])
    with pytest.raises(WrapError, match="'Other Hook'") as refused:
        wrap(body, "two", LOCK, None, respond_by_node=True)
    assert "Unused" not in refused.value.message and "same end" in refused.value.message
    # a schedule trigger beside the webhook is no webhook: it is kept
    assert node(wrap(load("two_triggers"), "two", LOCK, None, respond_by_node=True), "Lock Respond")


def test_a_name_that_is_not_a_webhook_is_refused() -> None:
    with pytest.raises(WrapError, match="not a Webhook node"):
        respond.respond_by_node(load("order_update"), "Mark Start", "orders")


@pytest.mark.parametrize("name", ["order_update", "merge_branches", "multi_method_webhook"])
def test_lock_respond_sits_in_its_own_note_and_overlaps_nothing(name: str) -> None:
    workflow = wrap(load(name), name, LOCK, None, respond_by_node=True)
    boxes, notes = node_boxes(workflow), note_boxes(workflow)
    assert overlaps(boxes) == []
    assert [pair for pair in overlaps(notes) if respond.FRAME_NAME in pair] == []
    assert notes[respond.FRAME_NAME].contains(boxes["Lock Respond"])
