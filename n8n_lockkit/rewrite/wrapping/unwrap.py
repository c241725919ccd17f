"""Take n8nlock's wrapping off a workflow, and read back the configs it was wrapped with."""

from __future__ import annotations

import copy
import json
from typing import Any

from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.graphs.graph import Workflow
from n8n_lockkit.rewrite.wrapping.configs import (
    CONFIG_MARK,
    INLINE_RATE_SHIFT,
    RATE_SHIFT,
    LockConfig,
    RateLimitConfig,
    Rates,
    WrapError,
)
from n8n_lockkit.rewrite.wrapping.nodes import role_of
from n8n_lockkit.rewrite.wrapping.replay import restore as restore_response_outputs
from n8n_lockkit.rewrite.wrapping.respond import restore as restore_webhooks
from n8n_lockkit.rewrite.wrapping.settings import (
    BEFORE_EMPTY_ERROR_WORKFLOW,
    BEFORE_MARK,
    BEFORE_NO_ORDER,
    BEFORE_NO_SETTINGS,
    HANDLER_ID,
    RELEASE_ROLES,
)

_RESTORES = ("rate-restore", "lock-restore", "dedupe-restore")
_CHAIN = frozenset({"rate-limit", "rate-allowed", "lock-acquire", *_RESTORES})


def _chain_end(workflow: Workflow, roles: dict[str, str], trigger: str, output: int) -> str | None:
    """The last Restore node of the chain n8nlock put after `trigger`'s `output`, if any.

    The inline lock links its predecessor both to Lock Context and to Lock Restore: the
    walk goes to the Restore node whenever there is one."""
    current, end = trigger, None
    while True:
        links = graph.outputs(workflow, current)
        index = output if current == trigger else 0
        first = links[index] if index < len(links) else []
        following = [str(x["node"]) for x in first if roles.get(str(x["node"])) in _CHAIN]
        if not following:
            return end
        restores = [name for name in following if roles[name] in _RESTORES]
        current = restores[0] if restores else following[0]
        if roles[current] in _RESTORES:
            end = current


def _values(workflow: Workflow, role: str) -> dict[str, Any] | None:
    for node in graph.nodes(workflow):
        if role_of(node) == role:
            values: dict[str, Any] = node["parameters"]["workflowInputs"]["value"]
            return values
    return None


def _before_wrap(workflow: Workflow) -> list[str]:
    """What settings held before wrap changed them, as wrap noted on Lock Release."""
    for node in graph.nodes(workflow):
        notes = str(node.get("notes", ""))
        if role_of(node) in RELEASE_ROLES and BEFORE_MARK in notes:
            return notes.split(BEFORE_MARK, 1)[1].split(", ")
    return []


def restore_settings(result: Workflow, before: list[str], *, handler: bool = True) -> None:
    """Take off what wrap put into settings: the cleanup handler (unless not `handler`: a
    debounce sets none, and leaves a lock's), executionOrder v1."""
    settings = graph.as_dict(result.get("settings"))
    if handler and settings.get("errorWorkflow") == HANDLER_ID:
        del settings["errorWorkflow"]
        if BEFORE_EMPTY_ERROR_WORKFLOW in before:
            settings["errorWorkflow"] = ""
    if BEFORE_NO_ORDER in before:
        settings.pop("executionOrder", None)
    if BEFORE_NO_SETTINGS in before and not settings:
        result.pop("settings", None)


def read_configs(workflow: Workflow) -> tuple[LockConfig | None, Rates]:
    """The lock and rate limit(s) a wrapped workflow carries, as the nodes say: one rate
    limit as a RateLimitConfig, several (composed) as a tuple of them."""
    try:
        return _read_configs(workflow)
    except (LookupError, TypeError, ValueError) as err:  # IndexError: notes without config
        raise _changed_by_hand(err) from err


def _inline_values(workflow: Workflow, role: str = "lock-context") -> Any:
    for node in graph.nodes(workflow):
        if role_of(node) == role:
            return json.loads(str(node["notes"]).split(CONFIG_MARK, 1)[1])
    return None


def _read_rates(workflow: Workflow) -> Rates:
    inline = _inline_values(workflow, "rate-context")
    if inline is not None:
        rates = tuple(
            RateLimitConfig(
                scope=str(r["scope"]),
                limit=int(r["limit"]),
                window_seconds=int(r["window_seconds"]),
                on_denied=str(r["on_denied"]),
                algorithm=str(r["algorithm"]),
                cost=str(r["cost"]),
                max_wait_seconds=int(r["max_wait_seconds"]),
            )
            for r in inline
        )
        return rates[0] if len(rates) == 1 else rates
    values = _values(workflow, "rate-limit")
    if values is None:
        return None
    # The form before the inline rate limit: a call of rate_limit_check, a fixed window.
    denied = next(
        (r for n in graph.nodes(workflow) if (r := role_of(n) or "").startswith("rate-denied-")),
        "rate-denied-passthrough",
    )
    return RateLimitConfig(
        str(values["scope"]),
        int(values["limit"]),
        int(values["windowSeconds"]),
        denied.removeprefix("rate-denied-"),
        algorithm="fixed",
    )


def _rate_shift(workflow: Workflow) -> int:
    roles = {role_of(n) for n in graph.nodes(workflow)}
    if "rate-limit" in roles:
        return RATE_SHIFT
    return INLINE_RATE_SHIFT if "rate-context" in roles else 0


def _optional_int(value: object) -> int | None:
    return None if value is None else int(str(value))


def _optional_str(value: object) -> str | None:
    return None if value is None else str(value)


def _fail_fast_policy(fail_fast: object) -> str:
    return "error" if fail_fast else "wait"


def read_guard(workflow: Workflow) -> LockConfig | None:
    """The duplicate guard a wrapped workflow carries (`add-dedupe`), if any."""
    try:
        inline = _inline_values(workflow, "dedupe-context")
        if inline is None:  # a guard made before it had a chain of its own ("Lock …")
            inline = _inline_values(workflow)
            if inline is None or inline.get("dedupe_window_seconds") is None:
                return None
        return _inline_lock(workflow, inline)
    except (LookupError, TypeError, ValueError) as err:  # IndexError: notes without config
        raise _changed_by_hand(err) from err


def _changed_by_hand(err: Exception) -> WrapError:
    return WrapError(
        f"n8nlock's nodes in this workflow were changed by hand and cannot be read ({err!r})",
        hint="change them only through add-lock-to-workflow / add-rate-limit / add-dedupe; "
        "restore the file from version control, or delete the nodes whose notes start with "
        "'n8nlock:'",
    )


def _lock_on_error(workflow: Workflow) -> bool:
    """Whether the lock frees itself when the execution fails (the cleanup handler is set)."""
    return graph.as_dict(workflow.get("settings")).get("errorWorkflow") == HANDLER_ID


def _renew_before(workflow: Workflow) -> tuple[str, ...]:
    """The body nodes the lock renews its lease before (its `Lock Renew (<node>)` nodes)."""
    return tuple(
        str(n["name"]).removeprefix("Lock Renew (").removesuffix(")")
        for n in graph.nodes(workflow)
        if role_of(n) == "lock-renew"
    )


def _inline_lock(workflow: Workflow, inline: Any) -> LockConfig:
    lock_on_error = _lock_on_error(workflow)
    # A guard never renews: the renewals in the file are the lock's.
    dedupe = inline.get("dedupe_window_seconds") is not None
    renew_before = () if dedupe else _renew_before(workflow)
    return LockConfig(
        scope=str(inline["scope"]),
        ttl_seconds=int(inline["ttl_seconds"]),
        max_wait_seconds=int(inline["max_wait_seconds"]),
        # A lock wrapped before overlap policies wrote fail_fast.
        on_busy=str(inline.get("on_busy") or _fail_fast_policy(inline.get("fail_fast"))),
        max_concurrent=int(inline["max_concurrent"]),
        lock_on_error=lock_on_error,
        renew_before=renew_before,
        dedupe_window_seconds=_optional_int(inline.get("dedupe_window_seconds")),
        dedupe_key=_optional_str(inline.get("dedupe_key")),
        park=inline.get("park") is True,
        max_answer_bytes=int(inline.get("max_answer_bytes", LockConfig.max_answer_bytes)),
    )


def _read_configs(workflow: Workflow) -> tuple[LockConfig | None, Rates]:
    lock = rate = None
    values = _values(workflow, "lock-acquire")
    inline = _inline_values(workflow)
    if inline is not None and inline.get("dedupe_window_seconds") is not None:
        inline = None  # a guard made before it had a chain of its own: read_guard's
    if inline is not None:
        lock = _inline_lock(workflow, inline)
    elif values is not None:
        lock = LockConfig(
            scope=str(values["scope"]),
            ttl_seconds=int(values["ttl_seconds"]),
            max_wait_seconds=int(values["max_wait_seconds"]),
            on_busy="error" if values.get("wait_till_lock_released") is False else "wait",
            max_concurrent=int(values.get("max_concurrent") or 1),
            via_subworkflow=True,
            lock_on_error=_lock_on_error(workflow),
            renew_before=_renew_before(workflow),
        )
    rate = _read_rates(workflow)
    return lock, rate


def unwrap(workflow: Workflow) -> Workflow:
    """The workflow as it was before n8nlock wrapped it (a new dict)."""
    result = copy.deepcopy(workflow)
    roles = {str(n["name"]): r for n in graph.nodes(result) if (r := role_of(n))}
    if not roles:
        return result
    lock, _ = read_configs(result)
    guard = read_guard(result)
    rate_shift = _rate_shift(result)
    restore_response_outputs(result)
    restore_webhooks(result)
    graph.normalise(result)
    connections = result["connections"]
    for trigger in graph.triggers(result):
        name = trigger["name"]
        for output in range(len(graph.outputs(result, name))):
            end = _chain_end(result, roles, name, output)
            if end is not None:
                body = [x for x in graph.outputs(result, end)[0] if x["node"] not in roles]
                connections[name]["main"][output] = body
    result["nodes"] = [
        n for n in result["nodes"] if not (isinstance(n, dict) and n.get("name") in roles)
    ]
    graph.normalise(result)
    connections = result["connections"]
    for name in list(connections):
        if name in roles:
            del connections[name]
            continue
        for kind, outputs in connections[name].items():
            connections[name][kind] = (
                [
                    [x for x in links if not (isinstance(x, dict) and str(x.get("node")) in roles)]
                    for links in outputs
                ]
                if isinstance(outputs, list)
                else outputs
            )
    graph.normalise(result)
    lock_shift = sum(c.shift for c in (lock, guard) if c is not None)
    graph.shift_body(result, -(rate_shift + lock_shift))
    restore_settings(result, _before_wrap(workflow))
    return result
