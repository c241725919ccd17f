"""Workflows wrapped by add-lock-to-workflow / add-rate-limit, run in a real n8n.

Each corpus workflow runs twice, plain and wrapped, with the same payload: the HTTP answer
and what every one of the user's nodes produced must be the same.
"""

from __future__ import annotations

import itertools
import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from tests.e2e.corpus import install, node_outputs, webhook_path
from tests.e2e.lockbed import LockBed, held_lanes, tickets_drawn, wait_until

PAYLOADS: dict[str, list[dict[str, Any]]] = {
    "webhook_respond_node": [{"sku": "A1", "qty": 4}],
    "if_one_branch": [{"amount": 250}, {"amount": 10}],
    "switch_fallback": [
        {"kind": "refund", "id": 7},
        {"kind": "invoice", "id": 8},
        {"kind": "other", "id": 9},
    ],
    "two_triggers": [{"hello": "world"}],
    "merge_branches": [{"customer": "acme", "order": "o-1"}],
    "code_heavy": [
        {
            "customer": "acme",
            "lines": [{"sku": "a", "qty": 2, "price": 3.5}, {"sku": "b", "qty": 1, "price": 10}],
        }
    ],
    "batch_loop": [{"ids": [1, 2, 3, 4, 5]}],
    "order_update": [{"orderId": "compare"}],
    "webhook_on_received": [{"file": "leads.csv", "rows": 21}],
}


def lock_args(scope: str, *extra: str) -> tuple[str, ...]:
    return (
        "add-lock-to-workflow",
        "--scope-expression",
        scope,
        "--ttl-seconds",
        "120",
        "--max-wait-seconds",
        "60",
        *extra,
    )


def order_scope() -> str:
    return "={{ 'corpus-order-' + $json.body.orderId }}"


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_a_wrapped_workflow_answers_and_computes_as_before(
    lockbed: LockBed, name: str, unique_name: str
) -> None:
    suffix = f"_{uuid.uuid4().hex[:6]}"
    scope = order_scope() if name == "order_update" else f"corpus-{unique_name}"
    plain, wrapped = install(lockbed, name, *lock_args(scope), suffix=suffix)
    path = webhook_path(name) + suffix
    for run, payload in enumerate(PAYLOADS[name], start=1):
        if name == "order_update":
            payload = {"orderId": f"{unique_name}-{payload['orderId']}"}
        before = lockbed.webhook(f"{path}-plain", payload)
        before_nodes = node_outputs(lockbed, plain, run)
        if name == "order_update":
            lockbed.redis.delete(f"corpus-balance-{payload['orderId']}")
        after = lockbed.webhook(path, payload)
        after_nodes = node_outputs(lockbed, wrapped, run)
        assert (after.status, after.body) == (before.status, before.body), payload
        for node, outputs in before_nodes.items():
            assert after_nodes.get(node) == outputs, f"{name}: node {node!r} differs"
        assert "Lock Release" in after_nodes, f"{name}: the lock was not released"
    assert held_lanes(lockbed.redis, "corpus-*") == []


def intervals(lockbed: LockBed, order_id: str) -> list[tuple[int, int]]:
    parsed = [json.loads(e) for e in lockbed.redis.lrange(f"corpus-sink-{order_id}", 0, -1)]
    starts = {e["execution"]: e["t"] for e in parsed if e["event"] == "start"}
    ends = {e["execution"]: e["t"] for e in parsed if e["event"] == "end"}
    return sorted((starts[x], ends[x]) for x in starts if x in ends)


def overlapping(spans: list[tuple[int, int]]) -> list[tuple[Any, Any]]:
    return [(a, b) for a, b in itertools.pairwise(sorted(spans)) if b[0] < a[1]]


def test_same_order_serialises_and_different_orders_run_in_parallel(
    lockbed: LockBed, unique_name: str
) -> None:
    suffix = f"_{uuid.uuid4().hex[:6]}"
    install(lockbed, "order_update", *lock_args(order_scope()), suffix=suffix)
    path = webhook_path("order_update") + suffix
    same = f"{unique_name}-same"
    with ThreadPoolExecutor(8) as pool:
        calls = list(pool.map(lambda _: lockbed.webhook(path, {"orderId": same}), range(8)))
    assert [c.status for c in calls] == [200] * 8, [c.body for c in calls]
    assert sorted(c.body["balance"] for c in calls) == list(range(1, 9))
    assert lockbed.redis.get(f"corpus-balance-{same}") == "8"
    spans = intervals(lockbed, same)
    assert len(spans) == 8 and overlapping(spans) == []

    others = [f"{unique_name}-{i}" for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        calls = list(pool.map(lambda o: lockbed.webhook(path, {"orderId": o}), others))
    assert all(c.status == 200 and c.body["balance"] == 1 for c in calls)
    spans = [span for order in others for span in intervals(lockbed, order)]
    assert overlapping(spans), "different orders should hold their locks at the same time"


def test_without_the_lock_the_same_order_loses_updates(lockbed: LockBed, unique_name: str) -> None:
    suffix = f"_{uuid.uuid4().hex[:6]}"
    install(lockbed, "order_update", *lock_args(order_scope()), suffix=suffix)
    path = webhook_path("order_update") + suffix + "-plain"
    order = f"{unique_name}-plain"
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: lockbed.webhook(path, {"orderId": order}), range(8)))
    assert int(lockbed.redis.get(f"corpus-balance-{order}") or 0) < 8
    assert overlapping(intervals(lockbed, order))


def test_a_failure_with_lock_on_error_frees_a_static_scope_at_once(
    lockbed: LockBed, unique_name: str
) -> None:
    scope = f"corpus-{unique_name}"
    suffix = f"_{uuid.uuid4().hex[:6]}"
    install(lockbed, "code_heavy", *lock_args(scope, "--lock-on-error"), suffix=suffix)
    path = webhook_path("code_heavy") + suffix
    failed = lockbed.webhook(path, {"customer": "acme", "fail": True, "lines": []})
    assert failed.status >= 400
    waited = wait_until(
        lambda: not held_lanes(lockbed.redis, scope),
        15,
        "the cleanup handler released the static scope",
    )
    assert waited < 15
    ok = lockbed.webhook(path, {"customer": "acme", "lines": [{"sku": "a", "qty": 1, "price": 2}]})
    assert ok.status == 200 and ok.body["invoice"].startswith("acme: 1 lines")


def test_a_scope_written_as_a_string_that_names_dollar_json_is_that_text(
    lockbed: LockBed, unique_name: str
) -> None:
    """The documented way to mean `$json…` as text (docs/commands.md, expressions): a string
    inside {{ }}, which n8n evaluates to the text itself."""
    scope = f"corpus-$json.{unique_name}"
    suffix = f"_{uuid.uuid4().hex[:6]}"
    install(lockbed, "code_heavy", *lock_args(f'={{{{ "{scope}" }}}}'), suffix=suffix)
    path = webhook_path("code_heavy") + suffix
    ok = lockbed.webhook(path, {"customer": "acme", "lines": [{"sku": "a", "qty": 1, "price": 2}]})
    assert ok.status == 200, ok.body
    assert tickets_drawn(lockbed.redis, scope) == 1


@pytest.mark.parametrize("on_denied", ["passthrough", "error"])
def test_rate_limited_webhook_lets_exactly_limit_through(
    lockbed: LockBed, unique_name: str, on_denied: str
) -> None:
    scope = f"=corpus-{unique_name}-{{{{ $json.body.customer }}}}"
    suffix = f"_{uuid.uuid4().hex[:6]}"
    args = (
        "add-rate-limit",
        "--scope-expression",
        scope,
        "--limit",
        "3",
        "--window-seconds",
        "3600",
        "--on-denied",
        on_denied,
    )
    install(lockbed, "merge_branches", *args, suffix=suffix)
    path = webhook_path("merge_branches") + suffix
    payload = {"customer": "acme", "order": "o-9"}
    expected = lockbed.webhook(f"{path}-plain", payload).body
    with ThreadPoolExecutor(6) as pool:
        calls = list(pool.map(lambda _: lockbed.webhook(path, payload), range(6)))
    passed = [c for c in calls if c.status == 200 and c.body == expected]
    denied = [c for c in calls if c not in passed]
    assert len(passed) == 3, [c.body for c in calls]
    if on_denied == "passthrough":
        assert all(c.status == 200 and c.body["allowed"] is False for c in denied)
        assert denied[0].body["message"].startswith("Rate limit exceeded for scope 'corpus-")
        assert "limit 3" in denied[0].body["message"]
    else:
        assert all(c.status >= 400 for c in denied)


def test_rate_limit_and_lock_together_deny_before_locking(
    lockbed: LockBed, unique_name: str
) -> None:
    scope = f"corpus-{unique_name}"
    suffix = f"_{uuid.uuid4().hex[:6]}"
    args = (
        *lock_args(scope),
        "add-rate-limit",
        "--scope-expression",
        f"rl-{unique_name}",
        "--limit",
        "2",
        "--window-seconds",
        "3600",
    )
    install(lockbed, "code_heavy", *args, suffix=suffix)
    path = webhook_path("code_heavy") + suffix
    payload = {"customer": "acme", "lines": [{"sku": "a", "qty": 1, "price": 2}]}
    bodies = [lockbed.webhook(path, payload).body for _ in range(4)]
    assert [b.get("allowed", True) for b in bodies] == [True, True, False, False]
    assert tickets_drawn(lockbed.redis, scope) == 2, "a denied call took the lock"


def test_a_schedule_triggered_workflow_runs_and_releases(
    lockbed: LockBed, unique_name: str
) -> None:
    scope = f"corpus-{unique_name}"
    suffix = f"_{uuid.uuid4().hex[:6]}"
    plain, wrapped = install(lockbed, "schedule_sync", *lock_args(scope), suffix=suffix)
    try:
        wait_until(
            lambda: len(lockbed.executions(lockbed.workflow_id(wrapped))) >= 2,
            20,
            "the wrapped schedule ran twice",
        )
        wait_until(
            lambda: all(
                e["finished"] for e in lockbed.executions(lockbed.workflow_id(wrapped))[:2]
            ),
            20,
            "the runs finished",
        )
        before, after = node_outputs(lockbed, plain, 1), node_outputs(lockbed, wrapped, 1)
        for node in ("Collect", "Summarise"):
            assert after[node] == before[node]
        assert "Lock Release" in after
    finally:
        for key in (plain, wrapped):
            lockbed_deactivate(lockbed, key)


def lockbed_deactivate(lockbed: LockBed, key: str) -> None:
    requests.post(
        f"{lockbed.n8n.base_url}/api/v1/workflows/{lockbed.workflow_id(key)}/deactivate",
        headers={"X-N8N-API-KEY": lockbed.n8n.api_key},
        timeout=30,
    )


def test_every_method_of_a_multi_method_webhook_runs_under_the_lock(
    lockbed: LockBed, unique_name: str
) -> None:
    scope = f"corpus-{unique_name}"
    suffix = f"_{uuid.uuid4().hex[:6]}"
    plain, wrapped = install(lockbed, "multi_method_webhook", *lock_args(scope), suffix=suffix)
    url = f"{lockbed.n8n.base_url}/webhook/{webhook_path('multi_method_webhook')}{suffix}"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("GET", {"params": {"order": "o-1"}}),
        ("POST", {"json": {"order": "o-2", "qty": 3}}),
        ("POST", {"json": {"order": "o-3", "qty": 30}}),  # the If's unconnected (null) output
    ]
    for run, (method, kwargs) in enumerate(calls, start=1):
        before = requests.request(method, f"{url}-plain", timeout=60, **kwargs)
        before_nodes = node_outputs(lockbed, plain, run)
        after = requests.request(method, url, timeout=60, **kwargs)
        after_nodes = node_outputs(lockbed, wrapped, run)
        assert (after.status_code, after.text) == (before.status_code, before.text), method
        for node, outputs in before_nodes.items():
            assert after_nodes.get(node) == outputs, f"{method}: node {node!r} differs"
        assert f"Lock Decide (Orders API {method})" in after_nodes
        assert "Lock Release" in after_nodes, f"{method}: the lock was not released"
    assert held_lanes(lockbed.redis, scope) == []
