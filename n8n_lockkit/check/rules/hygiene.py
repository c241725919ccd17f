"""Lock hygiene (lock nodes run once, never retry, TTLs ≥ 1) and nodes n8n judges by version.

n8n exports leave out every parameter equal to its default, and the default can depend on
the node's typeVersion, so the rules below read a missing parameter as that default.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from n8n_lockkit.check.rules.base import (
    CODE,
    ERROR_TRIGGER,
    IF,
    REDIS,
    SUB_TRIGGER,
    WAIT,
    Node,
    Path,
    Problem,
    WorkflowContext,
    as_dict,
    as_list,
    calls_primitive,
    literal_number,
    name_of,
    parameters_of,
)
from n8n_lockkit.primitives import formats

# Inputs of the primitives that must be at least 1 when given as literal numbers.
_MINIMUM_ONE_INPUTS = {
    "lock_acquisition": ("ttl_seconds", "max_wait_seconds"),
    "rate_limit_check": ("limit", "windowSeconds"),
}
_LOCK_CALLS = ("lock_acquisition", "lock_release", "rate_limit_check")
SPLIT_OUT = "n8n-nodes-base.splitOut"


@dataclass(frozen=True)
class _Graph:
    """Each node's type, and the nodes feeding each node: built once per workflow."""

    types: dict[str, object]
    feeders: dict[str, list[str]]

    @classmethod
    def of(cls, ctx: WorkflowContext) -> _Graph:
        feeders: dict[str, list[str]] = {}
        for path, target in ctx.targets():
            if isinstance(node := target.get("node"), str):
                feeders.setdefault(node, []).append(str(path[1]))
        return cls({name_of(node): node.get("type") for _, node in ctx.nodes()}, feeders)


def _fed_by_code(graph: _Graph, name: str) -> bool:
    """Whether every node feeding `name` is a Code node, directly or through If nodes: the
    primitive's own code then decides how many items the node sees, not the caller."""
    types, feeders = graph.types, graph.feeders
    seen: set[str] = set()
    pending, sources = [name], []
    while pending:
        target = pending.pop()
        for source in feeders.get(target, ()):
            if source in seen:
                continue
            seen.add(source)
            if types.get(source) == IF:
                pending.append(source)
            else:
                sources.append(source)
    # A Split Out node emits the items of one field its source wrote (the lock engine's Set
    # nodes list the keys so): several keys over one connection on purpose, like a Code node.
    return bool(sources) and all(types.get(source) in (CODE, SPLIT_OUT) for source in sources)


def _is_inline_lock_node(node: Node) -> bool:
    """A node of a lock that add-lock-to-workflow put into the workflow (the inline form)."""
    return str(node.get("notes", "")).startswith("n8nlock:lock-")


def redis_runs_once(ctx: WorkflowContext) -> Iterator[Problem]:
    """A primitive's Redis nodes, and an inline lock's, run once per execution, not once per
    input item.

    Exceptions: the cleanup handler (an Error Trigger workflow), whose Redis nodes fan out
    over the failed execution's scopes on purpose; and a node fed only by the lock's own
    Code or Split Out nodes (through If nodes), which write several keys over one connection
    on purpose.
    """
    if any(True for _ in ctx.nodes(ERROR_TRIGGER)):
        return
    graph: _Graph | None = None
    for index, node in ctx.nodes(REDIS):
        if not (ctx.is_primitive or _is_inline_lock_node(node)):
            continue
        if node.get("executeOnce") is True:
            continue
        graph = graph or _Graph.of(ctx)
        if not _fed_by_code(graph, name_of(node)):
            yield Problem(
                ("nodes", index),
                f"Redis node {name_of(node)!r} would run once per "
                "input item (3 items = 3 INCRs, and the holder deadlocks itself)",
                'set "executeOnce": true, or feed it from a Code node that emits the items',
            )


def no_retry(ctx: WorkflowContext) -> Iterator[Problem]:
    """Lock Redis nodes and calls of the primitives never retry on fail.

    Exception: the nodes n8nlock itself stamps with format 3 or later, which retry on purpose
    (formats.RETRYING_FORMAT): their writes are idempotent and a repeated ticket is skipped."""
    for index, node in ctx.nodes():
        is_redis = node.get("type") == REDIS
        is_lock_node = (is_redis and (ctx.is_primitive or _is_inline_lock_node(node))) or any(
            calls_primitive(node, key) for key in _LOCK_CALLS
        )
        stamped = formats.node_format(node)
        if is_redis and stamped is not None and stamped >= formats.RETRYING_FORMAT:
            continue
        if is_lock_node and node.get("retryOnFail") is True:
            yield Problem(
                ("nodes", index, "retryOnFail"),
                f"node {name_of(node)!r} retries on "
                "fail: a retried INCR counts twice and can lock out its own holder",
                'set "retryOnFail": false',
            )


def _redis_ttl_problems(index: int, node: Node) -> Iterator[Problem]:
    parameters = parameters_of(node)
    ttl = literal_number(parameters.get("ttl"))
    if parameters.get("expire") is True and ttl is not None and ttl < 1:
        yield Problem(
            ("nodes", index, "parameters", "ttl"),
            f"Redis node {name_of(node)!r} "
            f"expires after {ttl:g} s: EXPIRE 0 deletes the key at once",
            "use a TTL of at least 1 second",
        )


def minimum_values(ctx: WorkflowContext) -> Iterator[Problem]:
    """TTLs, max waits, limits and windows are at least 1."""
    for index, node in ctx.nodes():
        if node.get("type") == REDIS:
            yield from _redis_ttl_problems(index, node)
        for key, inputs in _MINIMUM_ONE_INPUTS.items():
            if not calls_primitive(node, key):
                continue
            values = as_dict(as_dict(parameters_of(node).get("workflowInputs")).get("value"))
            for name in inputs:
                number = literal_number(values.get(name))
                if number is not None and number < 1:
                    yield Problem(
                        ("nodes", index, "parameters", "workflowInputs", "value", name),
                        f"{name} is {number:g}; it must be at least 1",
                        f"pass {name} >= 1",
                    )


# Wait (n8n-nodes-base.wait, versions 1 and 1.1) in the node descriptions of n8n 2.41.1 and
# 1.123.81 (n8n-nodes-base/dist/types/nodes.json): resume defaults to "timeInterval"; v1
# defaults to amount 1, unit "hours", every other version to amount 5, unit "seconds". Run on
# 2.41.1: v1 with neither waits 3600 s, v1.1 waits 5 s, and a node without typeVersion waits
# 5 s too (so does 1.123.81). An unknown unit or a negative amount fails the execution
# ("Invalid wait unit", "Invalid wait amount": Wait/validation.js).
_DEFAULT_WAIT_WITHOUT_VERSION = "5 seconds"
_WAIT_UNITS = frozenset({"seconds", "minutes", "hours", "days"})


def _is_expression(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("=")


def _is_wait_unit(value: Any) -> bool:
    return isinstance(value, str) and value in _WAIT_UNITS


def _is_wait_amount(value: Any) -> bool:
    """A number of 0 or more, also as text: n8n converts the parameter to a number."""
    number = literal_number(value)
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return False
    return number is not None and number >= 0


_WAIT_PARAMETERS = (
    ("unit", _is_wait_unit, "use seconds, minutes, hours or days"),
    ("amount", _is_wait_amount, "use a number of 0 or more"),
)


def _wait_problems(index: int, node: Node) -> Iterator[Problem]:
    parameters = parameters_of(node)
    for key, is_valid, hint in _WAIT_PARAMETERS:
        value = parameters.get(key)
        if key in parameters and not _is_expression(value) and not is_valid(value):
            yield Problem(
                ("nodes", index, "parameters", key),
                f"Wait node {name_of(node)!r} has {key} {value!r}; n8n fails the execution there",
                hint,
            )
    if "typeVersion" not in node and not {"amount", "unit"} <= parameters.keys():
        yield Problem(
            ("nodes", index),
            f"Wait node {name_of(node)!r} has no typeVersion, so its interval depends on the "
            f"n8n version (2.41.1 waits {_DEFAULT_WAIT_WITHOUT_VERSION}; v1 meant 1 hour)",
            'add "typeVersion" (1.1 for n8n\'s current defaults), or state amount and unit',
        )


def wait_states_interval(ctx: WorkflowContext) -> Iterator[Problem]:
    """Time-interval Wait nodes wait a valid, known time (by their typeVersion's defaults)."""
    for index, node in ctx.nodes(WAIT):
        if parameters_of(node).get("resume", "timeInterval") == "timeInterval":
            yield from _wait_problems(index, node)


# Execute Workflow Trigger (versions 1, 1.1, 1.2) in n8n 2.41.1: version 1 has no inputSource
# and passes all data through; from 1.1 inputSource defaults to "workflowInputs", whose fields
# (workflowInputs.values, each with a required name; type defaults to "string") are required.
# Run on 2.41.1: a v1 trigger, or one without typeVersion, passes all data through; a 1.1 or
# 1.2 trigger in workflowInputs mode with no field, or a field without a name, is refused on
# publish ("Missing or invalid required parameters: workflowInputs" / ": name"), so no
# published workflow can call it; on 1.123.81 (same description) every call of it fails.
_FIRST_WITH_INPUT_SOURCE = 1.1


def sub_trigger_states_inputs(ctx: WorkflowContext) -> Iterator[Problem]:
    """Sub-workflow triggers (v1.1+) in field mode declare named inputs, as n8n requires."""
    for index, node in ctx.nodes(SUB_TRIGGER):
        version = literal_number(node.get("typeVersion"))
        parameters = parameters_of(node)
        if version is None or version < _FIRST_WITH_INPUT_SOURCE:
            continue
        if parameters.get("inputSource", "workflowInputs") != "workflowInputs":
            continue
        where: Path = ("nodes", index, "parameters", "workflowInputs")
        values = as_list(as_dict(parameters.get("workflowInputs")).get("values"))
        if not values:
            yield Problem(
                where,
                f"trigger {name_of(node)!r} (v{version:g}) declares no input fields; "
                "n8n refuses to publish it, so no workflow can call it",
                'declare its inputs, or set "inputSource": "passthrough" to accept all data',
            )
        for position, value in enumerate(values):
            name = as_dict(value).get("name")
            if not isinstance(name, str) or not name:
                yield Problem(
                    (*where, "values", position),
                    f"input {position} of trigger {name_of(node)!r} has no name; "
                    "n8n refuses to publish the workflow",
                    "give every input a name",
                )


def error_workflow_is_literal(ctx: WorkflowContext) -> Iterator[Problem]:
    """`settings.errorWorkflow` is a literal id or placeholder, never an expression."""
    value = ctx.settings.get("errorWorkflow")
    if isinstance(value, str) and value.startswith("="):
        yield Problem(
            ("settings", "errorWorkflow"),
            "errorWorkflow is an expression; n8n reads it as a workflow id, never evaluates it",
            "use {{@:env:workflows.<key>.id}} without '='",
        )
