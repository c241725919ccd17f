"""Render the primitives into workflow JSON.

The lock primitives (acquisition, release, renew) are the engine's own nodes (`engine.py`)
behind an Execute Workflow Trigger, so that a sub-workflow call and the inline form run the
same decisions on the same keys and exclude each other on one scope; so is the rate limit
(`rate.py`). The cleanup handler is an Error Trigger workflow of Code nodes (`cleanup.py`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from n8n_lockkit.errors import TemplateError
from n8n_lockkit.primitives import engine, keys, nodekit, rate
from n8n_lockkit.primitives.catalogue import (
    ERROR_HANDLER,
    LOCK_ACQUISITION,
    LOCK_RELEASE,
    LOCK_RENEW,
    RATE_LIMIT,
    Primitive,
)
from n8n_lockkit.primitives.cleanup import error_handler_lock_cleanup
from n8n_lockkit.primitives.formats import stamp_primitive


@dataclass(frozen=True)
class RenderOptions:
    """Render parameters; the defaults are the seed's.

    `poll_interval_seconds` is accepted for compatibility and changes nothing: since engine v2
    a waiter sleeps until its expected turn and then looks every 20 ms.
    """

    poll_interval_seconds: float = 1.0
    default_ttl_seconds: int = 86400
    default_max_wait_seconds: int = 86400

    def check(self) -> None:
        if not 0.1 <= self.poll_interval_seconds <= 60:
            raise TemplateError(
                f"poll interval {self.poll_interval_seconds} s is out of range",
                hint="use 0.1 to 60 seconds; waits of 65 s or more leave n8n's memory",
            )
        for name in ("default_ttl_seconds", "default_max_wait_seconds"):
            if getattr(self, name) < 1:
                raise TemplateError(f"{name} must be at least 1")


def render_primitive(primitive: Primitive, options: RenderOptions | None = None) -> dict[str, Any]:
    options = options or RenderOptions()
    options.check()
    build = _BUILT[primitive.key]
    built = build(
        engine.EngineOptions(options.default_ttl_seconds, options.default_max_wait_seconds)
    )
    return stamp_primitive(built, primitive.key)


def dump_workflow(workflow: dict[str, Any]) -> str:
    """The canonical text of a workflow file."""
    return json.dumps(workflow, indent=2, ensure_ascii=False) + "\n"


Workflow = dict[str, Any]
_SETTINGS = {"executionOrder": "v1", "callerPolicy": "any"}
STEP = engine.STEP


def _first(name: str) -> str:
    return f"{nodekit.ref(name)}.first().json"


def _trigger(key: str, name: str, inputs: list[tuple[str, str]]) -> nodekit.Node:
    values = [{"name": n, "type": t} for n, t in inputs]
    return nodekit.node(
        key, "request", name, "n8n-nodes-base.executeWorkflowTrigger", 1.1, [0, 0],
        {"inputSource": "workflowInputs", "workflowInputs": {"values": values}},
    )  # fmt: skip


def _chain(g: nodekit.Group, *names: str) -> None:
    """Connect each node's first output to the next node."""
    for source, target in itertools.pairwise(names):
        g.connect(source, 0, target)


def _merge(into: nodekit.Group, group: nodekit.Group) -> None:
    into.nodes.extend(group.nodes)
    into.connections.update(group.connections)


def _workflow(primitive: Primitive, g: nodekit.Group) -> Workflow:
    return {
        "name": primitive.display_name,
        "nodes": g.nodes,
        "connections": g.connections,
        "settings": dict(_SETTINGS),
    }


def _lock_acquisition(options: engine.EngineOptions) -> Workflow:
    """Lock Request → the engine's acquire chain → (a waiter's statistics) → Lock Output."""
    key = LOCK_ACQUISITION.key
    g = nodekit.Group()
    trigger = g.add(
        _trigger(
            key,
            "Lock Request",
            [
                ("scope", "string"),
                ("ttl_seconds", "number"),
                ("execution_id", "string"),
                ("wait_till_lock_released", "boolean"),
                ("max_wait_seconds", "number"),
                ("lock_id", "string"),
                ("workflow_id", "string"),
                ("workflow_name", "string"),
                ("max_concurrent", "number"),
                ("on_busy", "string"),
            ],
        )
    )
    request = _first(trigger)
    inputs = engine.LockInputs(
        **{
            field: f"={{{{ {request}.{name} }}}}"
            for field, name in (
                ("scope", "scope"),
                ("ttl_seconds", "ttl_seconds"),
                ("max_wait_seconds", "max_wait_seconds"),
                ("wait", "wait_till_lock_released"),
                ("on_busy", "on_busy"),
                ("slots", "max_concurrent"),
                ("execution_id", "execution_id"),
                ("workflow_id", "workflow_id"),
                ("workflow_name", "workflow_name"),
                ("lock_id", "lock_id"),
            )
        }
    )
    names = nodekit.Names()
    # The policy is an input, known at run time: the chain can always skip (a skipped caller
    # gets the skipped answer, `acquired: false`, as the sub-workflow's output).
    acquire = engine.acquire(key, inputs, (STEP, 0), names, options, skips=True)
    _merge(g, acquire)
    g.connect(trigger, 0, acquire.entry)
    decision = _first(names("Lock Decide"))
    # The inline form counts a waiter's statistics after its release; a sub-workflow release
    # does not know whether its caller waited, so they are counted here, once the lock is held.
    x, y = 10 * STEP, -engine.ROW
    waited = g.add(
        nodekit.if_node(
            key, "lock-waited", "Lock Waited?", [x, y], f"{decision}.wait_stats.length > 0"
        )
    )
    stats = g.add(
        nodekit.set_raw(
            key, "lock-wait-stats", "Lock Wait Stats", [x + STEP, y - engine.ROW // 2],
            f"={{{{ {{ incr: {decision}.wait_stats }} }}}}",
        )
    )  # fmt: skip
    split = g.add(
        nodekit.split_out(
            key, "lock-wait-stats-items", "Lock Wait Stats Items",
            [x + 2 * STEP, y - engine.ROW // 2], "incr",
        )
    )  # fmt: skip
    count = g.add(
        nodekit.redis(
            key, "lock-count-wait", "Lock Count Wait", [x + 3 * STEP, y - engine.ROW // 2],
            nodekit.INCR_EACH, False,
        )
    )  # fmt: skip
    script = nodekit.script_expression(
        "primitive/lock_acquisition/output",
        {"__CONTEXT__": _first(names("Lock Context")), "__DECISION__": decision},
    )
    output = g.add(nodekit.set_raw(key, "lock-output", "Lock Output", [x + 4 * STEP, y], script))
    for source, index in acquire.exits["held"]:
        g.connect(source, index, waited)
    _chain(g, waited, stats, split, count, output)
    g.connect(waited, 1, output)
    return _workflow(LOCK_ACQUISITION, g)


def _holder_check(
    g: nodekit.Group, primitive: Primitive, request: list[tuple[str, str]], prefix: str
) -> tuple[str, str]:
    """Request → Context → read the lane(s) → Check (whose lock it is): lock_release and
    lock_renew both start so. Returns the Context and Check node names."""
    key = primitive.key
    trigger = g.add(_trigger(key, f"{prefix} Request", request))
    context, items, read, check = (
        f"{prefix} Context", f"{prefix} Read Items", f"{prefix} Read", f"{prefix} Check"
    )  # fmt: skip
    script = nodekit.script_expression(
        "primitive/holder_check/context",
        {
            "__INPUT__": "$json",
            "__PRIMITIVE__": key,
            "__LOCK_ID_REQUIRED__": nodekit.js_literal(primitive is LOCK_RENEW),
        },
    )
    g.add(nodekit.set_raw(key, "context", context, [STEP, 0], script))
    g.add(nodekit.split_out(key, "read-items", items, [2 * STEP, 0], "read"))
    g.add(nodekit.redis(key, "read", read, [3 * STEP, 0], nodekit.GET_EACH, False))
    script = nodekit.script_expression(
        "primitive/holder_check/holder",
        {
            "__CONTEXT__": _first(context),
            "__READ__": f"{nodekit.ref(read)}.all()",
            "__RELEASE_MARGIN_MS__": str(keys.RELEASE_MARGIN_SECONDS * 1000),
        },
    )
    g.add(nodekit.set_raw(key, "check", check, [4 * STEP, 0], script))
    _chain(g, trigger, context, items, read, check)
    return context, check


_HANDOVER = [("scope", "string"), ("lock_id", "string"), ("ticket", "number")]


def _lock_release(options: engine.EngineOptions) -> Workflow:
    """Check ownership; the engine's release chain when the lock is the caller's; a stop
    (LOGIC ERROR) when another lock holds the lane; nothing at all when none does."""
    key = LOCK_RELEASE.key
    g = nodekit.Group()
    request = [*_HANDOVER, ("max_concurrent", "number")]
    _, check = _holder_check(g, LOCK_RELEASE, request, "Release")
    # A lock of the format before engine v2, taken before an upgrade's push: delete its
    # counter and record as that format did (docs/upgrading.md).
    old_held = g.add(
        nodekit.if_node(
            key, "old-held", "Old Format Held?", [5 * STEP, -2 * engine.ROW],
            "$json.outcome === 'held-old'",
        )
    )  # fmt: skip
    old_items = g.add(
        nodekit.split_out(
            key, "old-items", "Old Format Keys", [6 * STEP, -3 * engine.ROW], "delete"
        )
    )
    old_release = g.add(
        nodekit.redis(
            key, "old-release", "Release Old Format", [7 * STEP, -3 * engine.ROW],
            {"operation": "delete", "key": "={{ $json.key }}"}, False,
        )
    )  # fmt: skip
    owned = g.add(
        nodekit.if_node(key, "owned", "Owned?", [5 * STEP, 0], "$json.outcome === 'held'")
    )
    names = nodekit.Names()
    release = engine.release(key, f"{_first(check)}.held", (6 * STEP, -engine.ROW), names)
    _merge(g, release)
    free = g.add(
        nodekit.if_node(
            key, "not-held", "Already Released?", [6 * STEP, engine.ROW],
            "$json.outcome !== 'foreign'",
        )
    )  # fmt: skip
    message = (
        "=LOGIC ERROR: lock '{{ $json.scope }}' is held by {{ $json.holder.workflow_name }} "
        "(workflow {{ $json.holder.workflow_id }}, execution {{ $json.holder.execution_id }}, "
        "lock_id {{ $json.holder.lock_id }}) since {{ $json.holder.locked_at }}, not by lock_id "
        "{{ $json.lock_id }}; nothing was changed."
    )
    mismatch = g.add(
        nodekit.node(
            key, "mismatch", "Ownership Mismatch — Stop", "n8n-nodes-base.stopAndError", 1,
            [7 * STEP, 2 * engine.ROW], {"errorType": "errorMessage", "errorMessage": message},
        )
    )  # fmt: skip
    script = nodekit.script_expression(
        "primitive/lock_release/output",
        {
            "__CHECK__": _first(check),
            "__RELEASED__": f"{nodekit.ref(names('Lock Release Verdict'))}.isExecuted",
            "__VERDICT__": _first(names("Lock Release Verdict")),
            "__OLD_RELEASED__": f"{nodekit.ref(old_release)}.isExecuted",
        },
    )
    output = g.add(nodekit.set_raw(key, "output", "Release Output", [14 * STEP, 0], script))
    g.connect(check, 0, old_held)
    g.connect(old_held, 0, old_items)
    g.connect(old_items, 0, old_release)
    g.connect(old_release, 0, output)
    g.connect(old_held, 1, owned)
    g.connect(owned, 0, release.entry)
    g.connect(owned, 1, free)
    g.connect(free, 0, output)
    g.connect(free, 1, mismatch)
    for source, index in release.exits["done"]:
        g.connect(source, index, output)
    return _workflow(LOCK_RELEASE, g)


def _lock_renew(options: engine.EngineOptions) -> Workflow:
    """Check ownership; SET the record again with a new TTL while it is the caller's."""
    key = LOCK_RENEW.key
    g = nodekit.Group()
    request = [
        *_HANDOVER[:2],
        ("ttl_seconds", "number"),
        *_HANDOVER[2:],
        ("max_concurrent", "number"),
    ]
    context, check = _holder_check(g, LOCK_RENEW, request, "Renew")
    script = nodekit.script_expression(
        "primitive/lock_renew/renew",
        {
            "__CONTEXT__": _first(context),
            "__CHECK__": "$json",
            "__RELEASE_MARGIN_MS__": str(keys.RELEASE_MARGIN_SECONDS * 1000),
            "__DEFAULT_TTL__": str(options.default_ttl_seconds),
        },
    )
    decide = g.add(nodekit.set_raw(key, "decide", "Renew Decide", [5 * STEP, 0], script))
    owned = g.add(
        nodekit.if_node(key, "still-owned", "Still Owned?", [6 * STEP, 0], "$json.renewed === true")
    )
    items = g.add(nodekit.split_out(key, "renew-items", "Renew Items", [7 * STEP, -100], "set"))
    store = g.add(
        nodekit.redis(key, "renew", "Renew Lock", [8 * STEP, -100], nodekit.SET_EACH, False)
    )
    answer = f"={{{{ (({{ set, ...answer }}) => answer)({_first(decide)}) }}}}"
    output = g.add(nodekit.set_raw(key, "output", "Renew Output", [9 * STEP, 0], answer))
    _chain(g, check, decide, owned, items, store, output)
    g.connect(owned, 1, output)
    return _workflow(LOCK_RENEW, g)


def _rate_limit_check(options: engine.EngineOptions) -> Workflow:
    """Rate Limit Request → the rate limit chain of `add-rate-limit` → Rate Limit Result.

    Inputs: scope, limit, windowSeconds (required), algorithm (sliding | fixed, default
    sliding), cost (default 1), wait (default false: a refused call answers allowed: false at
    once; true: it waits for its turn, up to max_wait_seconds, default 300, then fails).
    Output: allowed, scope, count, limit, retry_after_ms (0 when allowed)."""
    key = RATE_LIMIT.key
    g = nodekit.Group()
    trigger = g.add(
        _trigger(
            key,
            "Rate Limit Request",
            [
                ("scope", "string"),
                ("limit", "number"),
                ("windowSeconds", "number"),
                ("algorithm", "string"),
                ("cost", "number"),
                ("wait", "boolean"),
                ("max_wait_seconds", "number"),
            ],
        )
    )
    request = _first(trigger)

    def given(name: str, default: str) -> str:
        value = f"{request}.{name}"
        return f"={{{{ [null, undefined, ''].includes({value}) ? {default} : {value} }}}}"

    waits = f"{request}.wait === true || String({request}.wait) === 'true'"
    inputs = rate.RateInputs(
        scope=f"={{{{ {request}.scope }}}}",
        limit=f"={{{{ {request}.limit }}}}",
        window_seconds=f"={{{{ {request}.windowSeconds }}}}",
        cost=given("cost", "1"),
        algorithm=given("algorithm", "'sliding'"),
        on_denied=f"={{{{ ({waits}) ? 'wait' : 'passthrough' }}}}",
        max_wait_seconds=given("max_wait_seconds", str(rate.DEFAULT_MAX_WAIT_SECONDS)),
        labels=(("window_seconds", "windowSeconds"),),
    )
    chain = rate.check(
        key, [inputs], (STEP, 0), nodekit.Names(), shape=rate.Shape.runtime(),
        margin_ms=rate.PRIMITIVE_MARGIN_MS,
    )  # fmt: skip
    _merge(g, chain)
    g.connect(trigger, 0, chain.entry)
    answer = (
        "={{ { allowed: true, scope: $json.limits[0].scope, count: $json.limits[0].count, "
        "limit: $json.limits[0].limit, retry_after_ms: 0 } }}"
    )
    x = max(n["position"][0] for n in chain.nodes) + STEP
    result = g.add(nodekit.set_raw(key, "rate-result", "Rate Limit Result", [x, 0], answer))
    for source, index in chain.exits["allowed"]:
        g.connect(source, index, result)
    return _workflow(RATE_LIMIT, g)


_BUILT: dict[str, Callable[[engine.EngineOptions], Workflow]] = {
    LOCK_ACQUISITION.key: _lock_acquisition,
    LOCK_RELEASE.key: _lock_release,
    LOCK_RENEW.key: _lock_renew,
    RATE_LIMIT.key: _rate_limit_check,
    ERROR_HANDLER.key: lambda _: error_handler_lock_cleanup(),
}
