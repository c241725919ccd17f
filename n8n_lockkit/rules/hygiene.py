"""Lock hygiene: lock nodes run once, never retry, and TTLs, waits and inputs are explicit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from n8n_lockkit.rules.base import (
    ERROR_TRIGGER,
    REDIS,
    SUB_TRIGGER,
    WAIT,
    Problem,
    WorkflowContext,
    calls_primitive,
    literal_number,
)

# Inputs of the primitives that must be at least 1 when given as literal numbers.
_MINIMUM_ONE_INPUTS = {
    "lock_acquisition": ("ttl_seconds", "max_wait_seconds"),
    "rate_limit_check": ("limit", "windowSeconds"),
}
_LOCK_CALLS = ("lock_acquisition", "lock_release", "rate_limit_check")


def redis_runs_once(ctx: WorkflowContext) -> Iterator[Problem]:
    """A primitive's Redis nodes run once per execution, not once per input item.

    The cleanup handler (an Error Trigger workflow) is the exception: its Redis nodes fan out
    over the registered scopes on purpose, and they only GET and DEL.
    """
    if not ctx.is_primitive or any(True for _ in ctx.nodes_of(ERROR_TRIGGER)):
        return
    for index, node in ctx.nodes_of(REDIS):
        if node.get("executeOnce") is not True:
            yield Problem(
                ("nodes", index),
                f"Redis node {node['name']!r} would run once per "
                "input item (3 items = 3 INCRs, and the holder deadlocks itself)",
                'set "executeOnce": true',
            )


def no_retry(ctx: WorkflowContext) -> Iterator[Problem]:
    """Lock Redis nodes and calls of the primitives never retry on fail."""
    for index, node in enumerate(ctx.nodes):
        is_lock_node = (ctx.is_primitive and node.get("type") == REDIS) or any(
            calls_primitive(node, key) for key in _LOCK_CALLS
        )
        if is_lock_node and node.get("retryOnFail") is True:
            yield Problem(
                ("nodes", index, "retryOnFail"),
                f"node {node['name']!r} retries on "
                "fail: a retried INCR counts twice and can lock out its own holder",
                'set "retryOnFail": false',
            )


def _redis_ttl_problems(index: int, node: dict[str, Any]) -> Iterator[Problem]:
    parameters = node.get("parameters", {})
    ttl = literal_number(parameters.get("ttl"))
    if parameters.get("expire") is True and ttl is not None and ttl < 1:
        yield Problem(
            ("nodes", index, "parameters", "ttl"),
            f"Redis node {node['name']!r} "
            f"expires after {ttl:g} s: EXPIRE 0 deletes the key at once",
            "use a TTL of at least 1 second",
        )


def minimum_values(ctx: WorkflowContext) -> Iterator[Problem]:
    """TTLs, max waits, limits and windows are at least 1."""
    for index, node in enumerate(ctx.nodes):
        if node.get("type") == REDIS:
            yield from _redis_ttl_problems(index, node)
        for key, inputs in _MINIMUM_ONE_INPUTS.items():
            if not calls_primitive(node, key):
                continue
            values = node.get("parameters", {}).get("workflowInputs", {}).get("value", {})
            for name in inputs:
                number = literal_number(values.get(name))
                if number is not None and number < 1:
                    yield Problem(
                        ("nodes", index, "parameters", "workflowInputs", "value", name),
                        f"{name} is {number:g}; it must be at least 1",
                        f"pass {name} >= 1",
                    )


def wait_states_interval(ctx: WorkflowContext) -> Iterator[Problem]:
    """Every time-interval Wait node states its amount and unit (defaults differ by version)."""
    for index, node in ctx.nodes_of(WAIT):
        parameters = node.get("parameters", {})
        if parameters.get("resume", "timeInterval") != "timeInterval":
            continue
        missing = [p for p in ("amount", "unit") if p not in parameters]
        if missing:
            yield Problem(
                ("nodes", index, "parameters"),
                f"Wait node {node['name']!r} does not state {' and '.join(missing)}",
                "Wait v1 defaults to 1 hour, v1.1 to 5 seconds: say which you mean",
            )


def sub_trigger_states_inputs(ctx: WorkflowContext) -> Iterator[Problem]:
    """Every sub-workflow trigger states its input mode, and typed inputs when it declares them."""
    for index, node in ctx.nodes_of(SUB_TRIGGER):
        parameters = node.get("parameters", {})
        if "inputSource" not in parameters:
            yield Problem(
                ("nodes", index, "parameters"),
                f"trigger {node['name']!r} does not state inputSource",
                'set "inputSource" to workflowInputs or passthrough',
            )
            continue
        if parameters["inputSource"] != "workflowInputs":
            continue
        values = parameters.get("workflowInputs", {}).get("values", [])
        for position, value in enumerate(values):
            if "type" not in value:
                yield Problem(
                    ("nodes", index, "parameters", "workflowInputs", "values", position),
                    f"input {value.get('name')!r} of {node['name']!r} has no type",
                    "give it a type: string, number, boolean, array, object or any",
                )


def error_workflow_is_literal(ctx: WorkflowContext) -> Iterator[Problem]:
    """`settings.errorWorkflow` is a literal id or placeholder, never an expression."""
    value = (ctx.workflow.get("settings") or {}).get("errorWorkflow")
    if isinstance(value, str) and value.startswith("="):
        yield Problem(
            ("settings", "errorWorkflow"),
            "errorWorkflow is an expression; n8n expects a workflow id",
            "use {{@:env:workflows.<key>.id}} without '='",
        )
