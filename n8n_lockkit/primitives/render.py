"""Render the primitives into workflow JSON.

The lock primitives (acquisition, release, renew) are the engine's own nodes (`engine.py`)
behind an Execute Workflow Trigger, so that a sub-workflow call and the inline form run the
same decisions on the same keys and exclude each other on one scope; so is the rate limit
(`rate.py`). The cleanup handler is an Error Trigger workflow of Code nodes (`cleanup.py`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from n8n_lockkit.errors import TemplateError
from n8n_lockkit.primitives import engine, rate, templating
from n8n_lockkit.primitives.catalogue import (
    ERROR_HANDLER,
    LOCK_ACQUISITION,
    LOCK_RELEASE,
    LOCK_RENEW,
    RATE_LIMIT,
    Primitive,
)
from n8n_lockkit.primitives.chain import UNLABELLED, Chain, Grid, Row, chained
from n8n_lockkit.primitives.cleanup import error_handler_lock_cleanup
from n8n_lockkit.primitives.formats import stamp_primitive
from n8n_lockkit.primitives.nodekit import (
    GET_EACH,
    INCR_EACH,
    SET_EACH,
    if_,
    js_literal,
    redis,
    set_raw,
    split_out,
    stop_text,
    trigger,
)


@dataclass(frozen=True)
class RenderOptions:
    """Render parameters; the defaults are the seed's. How a waiter waits is the engine's
    to decide (engine.py), not an option."""

    default_ttl_seconds: int = 86400
    default_max_wait_seconds: int = 86400

    def check(self) -> None:
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
# The primitives' grid: the engine's columns, rows of 25 px (a sixth of the engine's), so that a
# node can sit between two of the engine's rows.
FINE = Grid(STEP, 25)


def _workflow(primitive: Primitive, c: Chain) -> Workflow:
    return {
        "name": primitive.display_name,
        "nodes": c.nodes,
        "connections": c.connections,
        "settings": dict(_SETTINGS),
    }


_ACQUISITION_INPUTS = [
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
]
# LockInputs field: the lock_acquisition input it comes from.
_ACQUISITION_FIELDS = {
    "scope": "scope",
    "ttl_seconds": "ttl_seconds",
    "max_wait_seconds": "max_wait_seconds",
    "wait": "wait_till_lock_released",
    "on_busy": "on_busy",
    "slots": "max_concurrent",
    "execution_id": "execution_id",
    "workflow_id": "workflow_id",
    "workflow_name": "workflow_name",
    "lock_id": "lock_id",
}


def _lock_acquisition(options: engine.EngineOptions) -> Workflow:
    """Lock Request → the engine's acquire chain → (a waiter's statistics) → Lock Output.

    The policy is an input, known at run time: the chain can always skip (a skipped caller
    gets the skipped answer, `acquired: false`, as the sub-workflow's output). The inline form
    counts a waiter's statistics after its release; a sub-workflow release does not know
    whether its caller waited, so they are counted here, once the lock is held."""
    c = Chain(LOCK_ACQUISITION.key, grid=FINE)
    c.add(Row("request", "Lock Request", trigger(_ACQUISITION_INPUTS), (0, 0)))
    request = c.first("Lock Request")
    inputs = engine.LockInputs(
        **{field: f"={{{{ {request}.{name} }}}}" for field, name in _ACQUISITION_FIELDS.items()}
    )
    acquire = engine.acquire(c.key, inputs, (STEP, 0), UNLABELLED, options, skips=True)
    c.include(acquire)
    decision = c.first("Lock Decide")
    stats = f"={{{{ {{ incr: {decision}.wait_stats }} }}}}"
    output = templating.expression(
        "primitive/lock_acquisition/output", context=c.first("Lock Context"), decision=decision
    )
    c.rows(
        [
            Row("lock-waited", "Lock Waited?", if_(f"{decision}.wait_stats.length > 0"), (10, -6)),
            Row("lock-wait-stats", "Lock Wait Stats", set_raw(stats), (11, -9)),
            Row("lock-wait-stats-items", "Lock Wait Stats Items", split_out("incr"), (12, -9)),
            Row("lock-count-wait", "Lock Count Wait", redis(INCR_EACH, False), (13, -9)),
            Row("lock-output", "Lock Output", set_raw(output), (14, -6)),
        ]
    )
    c.link(
        [
            ("Lock Request", 0, acquire.entry),
            *((source, index, "Lock Waited?") for source, index in acquire.exits["held"]),
            *chained(
                "Lock Waited?",
                "Lock Wait Stats",
                "Lock Wait Stats Items",
                "Lock Count Wait",
                "Lock Output",
            ),
            ("Lock Waited?", 1, "Lock Output"),
        ]
    )
    return _workflow(LOCK_ACQUISITION, c)


def _holder_check(
    c: Chain, primitive: Primitive, request: list[tuple[str, str]], prefix: str
) -> None:
    """Request → Context → read the lane(s) → Check (whose lock it is): lock_release and
    lock_renew both start so."""
    context = templating.expression(
        "primitive/holder_check/context",
        input="$json",
        primitive=primitive.key,
        lock_id_required=js_literal(primitive is LOCK_RENEW),
    )
    check = templating.expression(
        "primitive/holder_check/holder",
        context=c.first(f"{prefix} Context"),
        read=f"{c.ref(f'{prefix} Read')}.all()",
    )
    c.rows(
        [
            Row("request", f"{prefix} Request", trigger(request), (0, 0)),
            Row("context", f"{prefix} Context", set_raw(context), (1, 0)),
            Row("read-items", f"{prefix} Read Items", split_out("read"), (2, 0)),
            Row("read", f"{prefix} Read", redis(GET_EACH, False), (3, 0)),
            Row("check", f"{prefix} Check", set_raw(check), (4, 0)),
        ]
    )
    steps = ("Request", "Context", "Read Items", "Read", "Check")
    c.link(chained(*(f"{prefix} {step}" for step in steps)))


_HANDOVER = [("scope", "string"), ("lock_id", "string"), ("ticket", "number")]
_MISMATCH = (
    "=LOGIC ERROR: lock '{{ $json.scope }}' is held by {{ $json.holder.workflow_name }} "
    "(workflow {{ $json.holder.workflow_id }}, execution {{ $json.holder.execution_id }}, "
    "lock_id {{ $json.holder.lock_id }}) since {{ $json.holder.locked_at }}, not by lock_id "
    "{{ $json.lock_id }}; nothing was changed."
)


def _lock_release(options: engine.EngineOptions) -> Workflow:
    """Check ownership; the engine's release chain when the lock is the caller's; a stop
    (LOGIC ERROR) when another lock holds the lane; nothing at all when none does."""
    c = Chain(LOCK_RELEASE.key, grid=FINE)
    _holder_check(c, LOCK_RELEASE, [*_HANDOVER, ("max_concurrent", "number")], "Release")
    c.add(Row("owned", "Owned?", if_("$json.outcome === 'held'"), (5, 0)))
    release = engine.release(c.key, f"{c.first('Release Check')}.held", (6 * STEP, -engine.ROW))
    c.include(release)
    output = templating.expression(
        "primitive/lock_release/output",
        check=c.first("Release Check"),
        released=f"{c.ref(engine.RELEASE_ENTRY)}.isExecuted",
        verdict=c.first(engine.RELEASE_ENTRY),
    )
    c.rows(
        [
            Row("not-held", "Already Released?", if_("$json.outcome !== 'foreign'"), (6, 6)),
            Row("mismatch", "Ownership Mismatch — Stop", stop_text(_MISMATCH), (7, 12)),
            Row("output", "Release Output", set_raw(output), (14, 0)),
        ]
    )
    c.link(
        [
            ("Release Check", 0, "Owned?"),
            ("Owned?", 0, release.entry),
            ("Owned?", 1, "Already Released?"),
            ("Already Released?", 0, "Release Output"),
            ("Already Released?", 1, "Ownership Mismatch — Stop"),
            *((source, index, "Release Output") for source, index in release.exits["done"]),
        ]
    )
    return _workflow(LOCK_RELEASE, c)


def _lock_renew(options: engine.EngineOptions) -> Workflow:
    """Check ownership; SET the record again with a new TTL while it is the caller's."""
    c = Chain(LOCK_RENEW.key, grid=FINE)
    request = [
        *_HANDOVER[:2],
        ("ttl_seconds", "number"),
        *_HANDOVER[2:],
        ("max_concurrent", "number"),
    ]
    _holder_check(c, LOCK_RENEW, request, "Renew")
    decide = templating.expression(
        "primitive/lock_renew/renew",
        context=c.first("Renew Context"),
        check="$json",
        default_ttl=options.default_ttl_seconds,
    )
    answer = f"={{{{ (({{ set, ...answer }}) => answer)({c.first('Renew Decide')}) }}}}"
    c.rows(
        [
            Row("decide", "Renew Decide", set_raw(decide), (5, 0)),
            Row("still-owned", "Still Owned?", if_("$json.renewed === true"), (6, 0)),
            Row("renew-items", "Renew Items", split_out("set"), (7, -4)),
            Row("renew", "Renew Lock", redis(SET_EACH, False), (8, -4)),
            Row("output", "Renew Output", set_raw(answer), (9, 0)),
        ]
    )
    c.link(
        [
            *chained(
                "Renew Check",
                "Renew Decide",
                "Still Owned?",
                "Renew Items",
                "Renew Lock",
                "Renew Output",
            ),
            ("Still Owned?", 1, "Renew Output"),
        ]
    )
    return _workflow(LOCK_RENEW, c)


_RATE_INPUTS = [
    ("scope", "string"),
    ("limit", "number"),
    ("windowSeconds", "number"),
    ("algorithm", "string"),
    ("cost", "number"),
    ("wait", "boolean"),
    ("max_wait_seconds", "number"),
]


def _rate_limit_check(options: engine.EngineOptions) -> Workflow:
    """Rate Limit Request → the rate limit chain of `add-rate-limit` → Rate Limit Result.

    Inputs: scope, limit, windowSeconds (required), algorithm (sliding | fixed, default
    sliding), cost (default 1), wait (default false: a refused call answers allowed: false at
    once; true: it waits for its turn, up to max_wait_seconds, default 300, then fails).
    Output: allowed, scope, count, limit, retry_after_ms (0 when allowed)."""
    c = Chain(RATE_LIMIT.key, grid=FINE)
    c.add(Row("request", "Rate Limit Request", trigger(_RATE_INPUTS), (0, 0)))
    request = c.first("Rate Limit Request")

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
        c.key,
        [inputs],
        (STEP, 0),
        UNLABELLED,
        shape=rate.Shape.runtime(),
        margin_ms=rate.PRIMITIVE_MARGIN_MS,
    )
    c.include(chain)
    answer = (
        "={{ { allowed: true, scope: $json.limits[0].scope, count: $json.limits[0].count, "
        "limit: $json.limits[0].limit, retry_after_ms: 0 } }}"
    )
    column = max(n["position"][0] for n in chain.nodes) // STEP + 1
    c.add(Row("rate-result", "Rate Limit Result", set_raw(answer), (column, 0)))
    allowed = chain.exits["allowed"]
    c.link(
        [
            ("Rate Limit Request", 0, chain.entry),
            *((source, index, "Rate Limit Result") for source, index in allowed),
        ]
    )
    return _workflow(RATE_LIMIT, c)


_BUILT: dict[str, Callable[[engine.EngineOptions], Workflow]] = {
    LOCK_ACQUISITION.key: _lock_acquisition,
    LOCK_RELEASE.key: _lock_release,
    LOCK_RENEW.key: _lock_renew,
    RATE_LIMIT.key: _rate_limit_check,
    ERROR_HANDLER.key: lambda _: error_handler_lock_cleanup(),
}
