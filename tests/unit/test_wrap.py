from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from n8n_lockkit.check.validate import check_workflow
from n8n_lockkit.primitives.render import dump_workflow
from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.wrapping.unwrap import read_configs, unwrap
from n8n_lockkit.rewrite.wrapping.wrap import (
    HANDLER_ID,
    LockConfig,
    RateLimitConfig,
    WrapError,
    wrap,
)
from tests.conftest import assert_golden, run_once_on_a_stall

CORPUS = Path(__file__).parent.parent / "corpus"
GOLDEN = Path(__file__).parent.parent / "fixtures" / "wrap"
NAMES = sorted(p.name.removesuffix(".template.json") for p in CORPUS.glob("*.template.json"))
LOCK = LockConfig("={{ 'order-' + $json.body.orderId }}", 300, 60, "wait", True)
SUB = dataclasses.replace(LOCK, via_subworkflow=True)  # the form that calls the primitives
RATE = RateLimitConfig("=api-{{ $json.body.customer }}", 5, 60, "passthrough")


def load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CORPUS / f"{name}.template.json").read_text())
    return loaded


@pytest.mark.parametrize("name", NAMES)
def test_wrapped_corpus_matches_golden(name: str, update_goldens: bool) -> None:
    wrapped = wrap(load(name), name, LOCK, RATE if name == "merge_branches" else None)
    assert_golden(GOLDEN / f"{name}.json", dump_workflow(wrapped), update_goldens)


def test_the_subworkflow_form_matches_golden(update_goldens: bool) -> None:
    wrapped = wrap(load("code_heavy"), "code_heavy", SUB, RATE)
    assert_golden(
        GOLDEN / "code_heavy_via_subworkflow.json", dump_workflow(wrapped), update_goldens
    )


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "configs", [(LOCK, None), (None, RATE), (LOCK, RATE), (SUB, RATE)], ids=str
)
def test_wrapping_is_valid_reversible_and_idempotent(
    name: str, configs: tuple[LockConfig | None, RateLimitConfig | None]
) -> None:
    body = load(name)
    wrapped = wrap(body, name, *configs)
    assert check_workflow(wrapped, display=name, key=name) == []
    assert unwrap(wrapped) == wrap(body, name, None, None)
    assert read_configs(wrapped) == configs
    assert wrap(unwrap(wrapped), name, *read_configs(wrapped)) == wrapped


@pytest.mark.parametrize("name", NAMES)
def test_new_nodes_do_not_overlap_existing_ones(name: str) -> None:
    wrapped = wrap(load(name), name, LOCK, RATE)
    nodes = [n for n in wrapped["nodes"] if n["type"] != graph.STICKY_NOTE]
    for i, a in enumerate(nodes):
        for b in nodes[i + 1 :]:
            (ax, ay), (bx, by) = a["position"], b["position"]
            assert abs(ax - bx) >= 180 or abs(ay - by) >= 100, f"{a['name']} overlaps {b['name']}"


def test_unknown_keys_survive_a_rewrite() -> None:
    body = load("code_heavy")
    body["nodes"][1]["x-team"] = {"owner": "billing"}
    body["x-extra"] = [1, 2]
    wrapped = wrap(body, "code_heavy", LOCK, None)
    assert wrapped["x-extra"] == [1, 2]
    assert next(n for n in wrapped["nodes"] if n["name"] == "Parse")["x-team"] == {
        "owner": "billing"
    }
    assert unwrap(wrapped)["nodes"][1]["x-team"] == {"owner": "billing"}


def test_the_input_is_not_mutated() -> None:
    body = load("merge_branches")
    before = copy.deepcopy(body)
    wrap(body, "merge_branches", LOCK, RATE)
    assert body == before


def test_release_uses_what_acquire_returned() -> None:
    wrapped = wrap(load("if_one_branch"), "if_one_branch", SUB, None)
    release = next(n for n in wrapped["nodes"] if n["name"] == "Lock Release")
    values = release["parameters"]["workflowInputs"]["value"]
    assert values == {
        "scope": '={{ $("Lock Acquire").first().json.scope }}',
        "lock_id": '={{ $("Lock Acquire").first().json.lock_id }}',
        "ticket": '={{ $("Lock Acquire").first().json.ticket }}',
        "max_concurrent": '={{ $("Lock Acquire").first().json.slots }}',
    }


def test_the_inline_release_reads_the_record_of_the_decision_that_entered() -> None:
    wrapped = wrap(load("two_triggers"), "two_triggers", LOCK, None)
    verdict = next(n for n in wrapped["nodes"] if n["name"] == "Lock Release Verdict")
    script = verdict["parameters"]["jsonOutput"]
    assert '["Lock Decide (Webhook)", "Lock Decide (Nightly)"].map((n) => $(n))' in script


def test_the_inline_lock_runs_no_code_node_before_the_body() -> None:
    wrapped = wrap(load("code_heavy"), "code_heavy", LOCK, None)
    lock_nodes = [n for n in wrapped["nodes"] if str(n.get("notes", "")).startswith("n8nlock:")]
    assert [n["name"] for n in lock_nodes if n["type"] == "n8n-nodes-base.code"] == []
    assert list(graph.targets(wrapped, "Webhook")) == ["Lock Context", "Lock Restore"]
    assert list(graph.targets(wrapped, "Lock Restore")) == ["Parse", "Lock Join"]
    restore = next(n for n in lock_nodes if n["name"] == "Lock Restore")
    assert restore["parameters"]["useDataOfInput"] == 1  # the trigger's items, binary and all
    # The body starts once the record is written and, for a late writer, its mark was read.
    assert [
        (source, output)
        for source in wrapped["connections"]
        for output, links in enumerate(graph.outputs(wrapped, source))
        if any(x["node"] == "Lock Restore" and x["index"] == 1 for x in links)
    ] == [("Lock Verify", 1), ("Lock Was Skipped?", 1)]


def test_lock_output_answers_with_the_one_end_or_picks_among_several() -> None:
    one = wrap(load("code_heavy"), "code_heavy", LOCK, None)
    merge = next(n for n in one["nodes"] if n["name"] == "Lock Output")
    assert merge["type"] == "n8n-nodes-base.merge"
    assert [x["node"] for x in graph.outputs(one, "Format")[0]] == ["Lock Join", "Lock Output"]
    several = wrap(load("switch_fallback"), "switch_fallback", LOCK, None)
    code = next(n for n in several["nodes"] if n["name"] == "Lock Output")
    assert code["type"] == "n8n-nodes-base.code"


def test_rerunning_converts_between_the_inline_and_the_subworkflow_form() -> None:
    body = load("code_heavy")
    inline = wrap(body, "code_heavy", LOCK, RATE)
    assert wrap(unwrap(inline), "code_heavy", *read_configs(inline)) == inline
    converted = wrap(unwrap(inline), "code_heavy", SUB, RATE)
    assert read_configs(converted) == (SUB, RATE)
    assert "Lock Acquire" in [n["name"] for n in converted["nodes"]]
    assert wrap(unwrap(converted), "code_heavy", LOCK, RATE) == inline


def test_a_semaphore_passes_its_slots_to_the_engine_and_reads_back() -> None:
    config = dataclasses.replace(LOCK, max_concurrent=3)
    wrapped = wrap(load("code_heavy"), "code_heavy", config, None)
    context = next(n for n in wrapped["nodes"] if n["name"] == "Lock Context")
    assert "slots: 3," in context["parameters"]["jsonOutput"]
    assert read_configs(wrapped) == (config, None)


def test_every_end_of_the_body_reaches_the_join() -> None:
    wrapped = wrap(load("switch_fallback"), "switch_fallback", LOCK, None)
    join_inputs = sorted(
        (source, output)
        for source in wrapped["connections"]
        for output, links in enumerate(graph.outputs(wrapped, source))
        for x in links
        if x["node"] == "Lock Join"
    )
    assert join_inputs == [("Lock Restore", 0), ("Other", 0), ("Refund", 0), ("Route", 1)]


def test_two_triggers_get_one_acquire_each_and_one_release() -> None:
    wrapped = wrap(load("two_triggers"), "two_triggers", LOCK, None)
    names = [n["name"] for n in wrapped["nodes"]]
    assert "Lock Context (Webhook)" in names and "Lock Context (Nightly)" in names
    assert names.count("Lock Release") == 1


def test_rate_limit_comes_before_the_lock() -> None:
    wrapped = wrap(load("code_heavy"), "code_heavy", SUB, RATE)
    assert list(graph.targets(wrapped, "Webhook")) == ["Rate Limit Context", "Rate Limit Restore"]
    assert list(graph.targets(wrapped, "Rate Limit Restore")) == ["Lock Acquire"]
    assert list(graph.targets(wrapped, "Lock Restore Items")) == ["Parse", "Lock Join"]


def test_a_different_error_workflow_is_not_overwritten() -> None:
    body = load("code_heavy")
    body["settings"]["errorWorkflow"] = "my-alerts"
    with pytest.raises(WrapError, match="already names error workflow 'my-alerts'"):
        wrap(body, "code_heavy", LOCK, None)
    assert wrap(body, "code_heavy", None, RATE)["settings"]["errorWorkflow"] == "my-alerts"


def test_lock_on_error_sets_the_handler_and_is_removed_with_the_flag() -> None:
    wrapped = wrap(load("code_heavy"), "code_heavy", LOCK, None)
    assert wrapped["settings"]["errorWorkflow"] == HANDLER_ID
    without = LockConfig(LOCK.scope, LOCK.ttl_seconds, LOCK.max_wait_seconds, "wait", False)
    assert "errorWorkflow" not in wrap(unwrap(wrapped), "code_heavy", without, None)["settings"]


@pytest.mark.parametrize("on_denied", ["passthrough", "stop", "error"])
def test_denied_path_per_mode(on_denied: str) -> None:
    config = RateLimitConfig("api", 2, 60, on_denied)
    wrapped = wrap(load("code_heavy"), "code_heavy", None, config)
    denied = next(n for n in wrapped["nodes"] if n["name"] == "Rate Limit Denied")
    expected = {
        "passthrough": "n8n-nodes-base.set",
        "stop": "n8n-nodes-base.noOp",
        "error": "n8n-nodes-base.stopAndError",
    }[on_denied]
    assert denied["type"] == expected
    if on_denied == "error":
        assert denied["parameters"]["errorMessage"].startswith("=Rate limit exceeded for scope")


def test_a_workflow_without_a_connected_trigger_is_refused() -> None:
    body = load("code_heavy")
    body["connections"].pop("Webhook")
    with pytest.raises(WrapError, match="no trigger connected"):
        wrap(body, "code_heavy", LOCK, None)


def test_a_name_clash_with_a_user_node_is_refused() -> None:
    body = load("code_heavy")
    body["nodes"][2]["name"] = "Lock Release"
    body["connections"]["Parse"]["main"][0][0]["node"] = "Lock Release"
    body["connections"]["Lock Release"] = body["connections"].pop("Price Lines")
    with pytest.raises(WrapError, match="already has a node named 'Lock Release'"):
        wrap(body, "code_heavy", LOCK, None)


def test_every_method_of_a_multi_method_webhook_is_locked() -> None:
    wrapped = wrap(load("multi_method_webhook"), "multi_method_webhook", SUB, None)
    assert list(graph.targets(wrapped, "Orders API")) == [
        "Lock Acquire (Orders API GET)",
        "Lock Acquire (Orders API POST)",
    ]
    restore_post = next(
        n for n in wrapped["nodes"] if n["name"] == "Lock Restore Items (Orders API POST)"
    )
    assert restore_post["parameters"]["jsCode"].endswith('return $("Orders API").all(1);')
    assert list(graph.targets(wrapped, "Lock Restore Items (Orders API POST)")) == [
        "Write Order",
        "Lock Join",
    ]


def test_every_method_of_a_multi_method_webhook_gets_its_own_inline_chain() -> None:
    wrapped = wrap(load("multi_method_webhook"), "multi_method_webhook", LOCK, None)
    post = [x["node"] for x in graph.outputs(wrapped, "Orders API")[1]]
    assert post == ["Lock Context (Orders API POST)", "Lock Restore (Orders API POST)"]
    assert list(graph.targets(wrapped, "Lock Restore (Orders API POST)")) == [
        "Write Order",
        "Lock Join",
    ]


def test_an_imap_trigger_is_locked_beside_the_manual_one() -> None:
    wrapped = wrap(load("imap_manual_community"), "imap_manual_community", SUB, RATE)
    assert list(graph.targets(wrapped, "Inbox")) == [
        "Rate Limit Context (Inbox)",
        "Rate Limit Restore (Inbox)",
    ]
    assert list(graph.targets(wrapped, "Community Poller")) == [
        "Rate Limit Context (Community Poller)",
        "Rate Limit Restore (Community Poller)",
    ]
    restore = next(
        n
        for n in wrapped["nodes"]
        if n["name"] == "Lock Restore Items (When clicking ‘Test workflow’)"
    )
    # Readable in the editor, and n8n reads it the same as the \u2018 escape.
    assert '$("When clicking ‘Test workflow’").all()' in restore["parameters"]["jsCode"]


def test_null_outputs_are_written_as_n8n_reads_them_and_unwrap_restores_that() -> None:
    body = load("multi_method_webhook")
    wrapped = wrap(body, "multi_method_webhook", LOCK, None)
    assert graph.outputs(wrapped, "Big?")[0] == [graph.link("Lock Join", 3)]
    restored = unwrap(wrapped)
    assert restored["connections"]["Big?"]["main"] == [[], [graph.link("Small")]]
    assert restored == wrap(body, "multi_method_webhook", None, None)


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda w: w["nodes"].append(None), r"nodes\[\d+\] is not a node with a name"),
        (lambda w: w["nodes"][1].pop("position"), "node 'Parse' has no position"),
        (lambda w: w["nodes"][1].update(position=["a", 0]), "node 'Parse' has no position"),
        (lambda w: w["nodes"][2].update(name="Parse"), "two nodes are named 'Parse'"),
    ],
)
def test_shapes_n8n_would_not_run_are_refused_with_the_place_named(
    mangle: Any, message: str
) -> None:
    body = load("code_heavy")
    mangle(body)
    with pytest.raises(WrapError, match=message):
        wrap(body, "code_heavy", LOCK, None)


def _mutations(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    """The corpus workflow with one value at a time replaced by something odd."""
    found = []
    paths: list[tuple[Any, ...]] = []

    def walk(value: Any, path: tuple[Any, ...]) -> None:
        paths.append(path)
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, (*path, k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, (*path, i))

    walk({k: workflow[k] for k in ("nodes", "connections", "settings")}, ())
    for path in paths[1:]:
        odd: Any
        for odd in (None, [], {}, "x", 0):
            mutated = copy.deepcopy(workflow)
            target = mutated
            for part in path[:-1]:
                target = target[part]
            target[path[-1]] = odd
            found.append(mutated)
    return found


@pytest.mark.parametrize("name", ["two_triggers", "multi_method_webhook", "switch_fallback"])
def test_no_shape_of_a_workflow_makes_wrap_or_unwrap_fail_unexpectedly(name: str) -> None:
    for mutated in _mutations(load(name)):
        try:
            wrapped = wrap(mutated, name, LOCK, RATE)
        except WrapError:
            continue
        assert read_configs(wrapped) == (LOCK, RATE)
        unwrap(wrapped)


def test_renewal_runs_before_the_named_node_in_a_loop_and_unwraps() -> None:
    config = LockConfig(LOCK.scope, 120, 60, "wait", False, ("Handle Batch",))
    body = load("batch_loop")
    wrapped = wrap(body, "batch_loop", config, None)
    renew = next(n for n in wrapped["nodes"] if n["name"] == "Lock Renew (Handle Batch)")
    handle = next(n for n in wrapped["nodes"] if n["name"] == "Handle Batch")
    assert renew["position"][1] < handle["position"][1], "v1 order runs the upper branch first"
    feeding = [
        source
        for source in wrapped["connections"]
        for links in graph.outputs(wrapped, source)
        if any(x["node"] == "Lock Renew (Handle Batch)" for x in links)
    ]
    assert feeding == [
        s
        for s in wrapped["connections"]
        for links in graph.outputs(wrapped, s)
        if any(x["node"] == "Handle Batch" for x in links)
    ]
    values = renew["parameters"]["workflowInputs"]["value"]
    assert values["ttl_seconds"] == 120 and "lock_id" in values["lock_id"]
    assert list(graph.targets(wrapped, "Lock Renewed? (Handle Batch)")) == [
        "Lock Lost (Handle Batch)"
    ]
    assert read_configs(wrapped) == (config, None)
    assert unwrap(wrapped) == wrap(body, "batch_loop", None, None)
    assert check_workflow(wrapped, display="batch_loop", key="batch_loop") == []
    # A renewed lock is released by the margin of its last renewal, not of its acquisition.
    verdict = next(n for n in wrapped["nodes"] if n["name"] == "Lock Release Verdict")
    script = verdict["parameters"]["jsonOutput"]
    assert '["Lock Renew (Handle Batch)"].map((n) => $(n)).filter((n) => n.isExecuted)' in script
    assert "Math.max(d.expires_ms, ..." in script


def test_renewal_before_an_unknown_node_is_refused() -> None:
    config = LockConfig(LOCK.scope, 120, 60, renew_before=("Nope",))
    with pytest.raises(
        WrapError, match="--renew-before 'Nope': the workflow has no node of that name"
    ):
        wrap(load("batch_loop"), "batch_loop", config, None)


def test_unwrap_restores_what_the_public_corpus_showed_drifting() -> None:
    body = load("code_heavy")
    del body["settings"]  # exports without settings: wrap adds them for the handler only
    body["nodes"][1]["position"] = [
        263.7746189766141,
        80.5,
    ]  # x + 1100 - 1100 rounds to another float
    body["connections"]["Parse"]["ai_tool"] = [[]]  # an AI-style kind beside main
    wrapped = wrap(body, "code_heavy", LOCK, RATE)
    restored = unwrap(wrapped)
    assert "settings" not in restored
    assert restored["nodes"][1]["position"] == [263.7746189766141, 80.5]
    assert restored == wrap(body, "code_heavy", None, None)


@pytest.mark.parametrize(
    "settings",
    [None, {}, {"errorWorkflow": ""}, {"executionOrder": "v1"}, {"timezone": "UTC"}],
    ids=["absent", "empty", "empty-error-workflow", "order-only", "no-order"],
)
def test_unwrap_gives_back_exactly_the_settings_wrap_found(
    settings: dict[str, Any] | None,
) -> None:
    body = load("code_heavy")
    body.pop("settings")
    if settings is not None:
        body["settings"] = settings
    wrapped = wrap(body, "code_heavy", LOCK, None)
    assert wrapped["settings"]["errorWorkflow"] == HANDLER_ID
    assert wrapped["settings"]["executionOrder"] == "v1", "the join needs n8n's v1 order"
    restored = unwrap(wrapped)
    assert restored.get("settings", "absent") == (settings if settings is not None else "absent")
    assert wrap(restored, "code_heavy", LOCK, None) == wrapped


def test_a_workflow_in_the_legacy_execution_order_is_refused_for_a_lock_not_a_rate_limit() -> None:
    body = load("code_heavy")
    body["settings"]["executionOrder"] = "v0"
    with pytest.raises(WrapError, match="legacy execution order \\('v0'\\)"):
        wrap(body, "code_heavy", LOCK, None)
    assert wrap(body, "code_heavy", None, RATE)["settings"]["executionOrder"] == "v0"


# --- rate limits -----------------------------------------------------------------------------

BEFORE_INLINE_RATE = GOLDEN / "before_inline_rate_limit" / "merge_branches.json"
GLOBAL = RateLimitConfig("global", 100, 60, "error", "fixed")


def redis_nodes(workflow: dict[str, Any]) -> list[str]:
    return sorted(n["name"] for n in workflow["nodes"] if n["type"] == "n8n-nodes-base.redis")


def test_a_rate_limit_wrapped_before_the_inline_form_reads_back_as_a_fixed_window() -> None:
    legacy = json.loads(BEFORE_INLINE_RATE.read_text())
    lock, rate = read_configs(legacy)
    assert rate == dataclasses.replace(RATE, algorithm="fixed")
    rewrapped = wrap(unwrap(legacy), "merge_branches", lock, rate)
    assert read_configs(rewrapped) == (lock, rate)
    assert unwrap(rewrapped) == unwrap(legacy) == wrap(load("merge_branches"), "x", None, None)
    assert "rate_limit_check" not in json.dumps(rewrapped)


@pytest.mark.parametrize(
    ("rates", "expected"),
    [
        ((dataclasses.replace(RATE, algorithm="fixed"),), ["Rate Limit Claim", "Rate Limit Read"]),
        ((RATE,), ["Rate Limit Claim", "Rate Limit Commit", "Rate Limit Read"]),
        ((RATE, GLOBAL), ["Rate Limit Claim", "Rate Limit Commit", "Rate Limit Read"]),
        (
            (dataclasses.replace(RATE, algorithm="fixed"), GLOBAL),
            ["Rate Limit Claim", "Rate Limit Read"],
        ),
    ],
    ids=["fixed", "sliding", "composed", "composed-fixed"],
)
def test_redis_nodes_per_check(rates: tuple[RateLimitConfig, ...], expected: list[str]) -> None:
    # Each Redis node runs once per look: every limit is read before anything is claimed (so
    # that a call one limit refuses claims nothing in the others), then claimed; a sliding
    # limit's slots are written after the claims. Composed limits share the nodes.
    assert redis_nodes(wrap(load("code_heavy"), "code_heavy", None, rates)) == expected


def test_composed_limits_read_back_in_order_and_unwrap_exactly() -> None:
    body = load("two_triggers")
    wrapped = wrap(body, "two_triggers", LOCK, (RATE, GLOBAL))
    assert check_workflow(wrapped, display="two_triggers", key="two_triggers") == []
    assert read_configs(wrapped) == (LOCK, (RATE, GLOBAL))
    assert unwrap(wrapped) == wrap(body, "two_triggers", None, None)
    assert wrap(unwrap(wrapped), "two_triggers", *read_configs(wrapped)) == wrapped


def test_waiting_sleeps_and_looks_again_and_fails_past_its_max_wait() -> None:
    config = dataclasses.replace(RATE, on_denied="wait", max_wait_seconds=30)
    wrapped = wrap(load("code_heavy"), "code_heavy", None, config)
    # Route's outputs: go, sleep, fail past the max wait, be refused, write the slots again.
    assert graph.outputs(wrapped, "Rate Limit Route")[:3] == [
        [{"node": "Rate Limit Restore", "type": "main", "index": 1}],
        [{"node": "Rate Limit Sleep", "type": "main", "index": 0}],
        [{"node": "Rate Limit Waited Too Long", "type": "main", "index": 0}],
    ]
    assert list(graph.targets(wrapped, "Rate Limit Sleep")) == ["Rate Limit Woken"]
    assert list(graph.targets(wrapped, "Rate Limit Go?")) == [
        "Rate Limit Restore",
        "Rate Limit Look",
    ]
    assert not any(n["name"] == "Rate Limit Denied" for n in wrapped["nodes"])


def test_limits_that_refuse_differently_each_take_their_own_path() -> None:
    stop = RateLimitConfig("global", 100, 60, "stop")
    wrapped = wrap(load("code_heavy"), "code_heavy", None, (RATE, stop))
    assert list(graph.targets(wrapped, "Rate Limit Denied passthrough?")) == [
        "Rate Limit Denied (passthrough)",
        "Rate Limit Denied (stop)",
    ]


def test_a_rate_limit_alone_adds_no_code_node() -> None:
    wrapped = wrap(load("code_heavy"), "code_heavy", None, (RATE, GLOBAL))
    added = [n for n in wrapped["nodes"] if str(n.get("notes", "")).startswith("n8nlock:")]
    assert added and not [n["name"] for n in added if n["type"] == "n8n-nodes-base.code"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "configs",
    [
        (LOCK, RATE),
        (SUB, RATE),
        (
            dataclasses.replace(LOCK, on_busy="buffer-one", renew_before=(), lock_on_error=True),
            None,
        ),
        (dataclasses.replace(LOCK, on_busy="skip", dedupe_window_seconds=60, dedupe_key="k"), None),
    ],
    ids=["lock+rate", "sub+rate", "buffer-one", "dedupe"],
)
def test_every_generated_expression_runs_again_when_a_stall_times_it_out(
    name: str, configs: tuple[LockConfig | None, RateLimitConfig | None]
) -> None:
    """A CI run (f6d020a) answered one caller of the semaphore stall test with a 500: n8n 2.x
    fails an expression that a stop of the process interrupts (N8N_EXPRESSION_ENGINE_TIMEOUT),
    and Lock Release Once? was the one generated If without retries."""
    wrapped = wrap(load(name), name, *configs)
    own = {n["name"] for n in load(name)["nodes"]}
    assert run_once_on_a_stall([n for n in wrapped["nodes"] if n["name"] not in own]) == []
