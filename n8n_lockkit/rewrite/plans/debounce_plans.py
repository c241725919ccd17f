"""The plan of add-debounce, and the debounce's side of unwrap and the other add-* commands.

Run again, add-debounce changes only what is given: an option left out keeps what the
debounce has (the default for a new one), `default` puts a value back to its default.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from n8n_lockkit.errors import LockkitError, OptionError
from n8n_lockkit.primitives.render import dump_workflow
from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.plans.options import (
    DEFAULT,
    guard_settings,
    lock_settings,
    rate_settings,
    setting_changes,
)
from n8n_lockkit.rewrite.plans.own_error_workflow import runs_cleanup
from n8n_lockkit.rewrite.wrapping.compose import BURST_ITEMS, Layers, compose, read_layers
from n8n_lockkit.rewrite.wrapping.debounce_wrap import (
    DebounceConfig,
    read_debounce,
    unwrap_debounce,
)
from n8n_lockkit.rewrite.wrapping.scope import parse_scope, refuse_unbraced
from n8n_lockkit.rewrite.wrapping.wrap import rate_limits
from n8n_lockkit.workspace import workflow_json
from n8n_lockkit.workspace.layout import Workspace
from n8n_lockkit.workspace.plan import FileChange, Plan

DEFAULT_MAX_WAIT_SECONDS = 60
DEFAULT_MAX_ITEMS = 100
MAX_ITEMS_LIMIT = 1000  # the runner claims every ticket of its burst in one node
KEY_EFFECT = "every event of the workflow would fall into one burst"

Number = int | str | None


@dataclass(frozen=True)
class DebounceOptions:
    """add-debounce's options as given (None: not given; `default`: back to the default)."""

    key_expression: str | None = None
    quiet_seconds: Number = None
    max_wait_seconds: Number = None
    max_items: Number = None


def _needed(option: str, what: str, example: str) -> OptionError:
    return OptionError(f"--{option} is needed: {what}", hint=f"e.g. --{option} {example}")


def _pick(given: Number, current: int | None, default: int | None) -> int | None:
    if given == DEFAULT:
        return default
    if given is None:
        return current if current is not None else default
    return int(given)


def merged_debounce(
    current: DebounceConfig | None, given: DebounceOptions, key: str
) -> DebounceConfig:
    """The debounce a run of add-debounce leaves."""
    expression = given.key_expression
    if expression is not None:
        refuse_unbraced("--key-expression", expression, KEY_EFFECT)
        _check_key(expression)
    elif current is None:
        raise _needed(
            "key-expression",
            f"workflow {key!r} has no debounce yet",
            "'={{ $json.body.chatId }}'",
        )
    else:
        expression = current.key_expression
    quiet = _pick(given.quiet_seconds, current.quiet_seconds if current else None, None)
    if quiet is None:
        raise _needed(
            "quiet-seconds",
            "a debounce's quiet time has no default",
            "5 (the body runs once the key has had no event for 5 s)",
        )
    max_wait = _pick(
        given.max_wait_seconds,
        current.max_wait_seconds if current else None,
        DEFAULT_MAX_WAIT_SECONDS,
    )
    max_items = _pick(given.max_items, current.max_items if current else None, DEFAULT_MAX_ITEMS)
    assert max_wait is not None and max_items is not None  # they have defaults
    config = DebounceConfig(expression, quiet, max_wait, max_items)
    _check_numbers(config)
    return config


def _check_key(expression: str) -> None:
    try:
        parse_scope(expression)
    except LockkitError as err:
        raise OptionError(
            err.message.replace("scope expression", "key expression"),
            hint=(err.hint or "").replace("--scope-expression", "--key-expression") or None,
        ) from err


def _check_numbers(config: DebounceConfig) -> None:
    if config.quiet_seconds < 1:
        raise OptionError(
            f"--quiet-seconds {config.quiet_seconds} is below 1",
            hint="give the quiet time in whole seconds, e.g. --quiet-seconds 5",
        )
    if config.max_wait_seconds < config.quiet_seconds:
        raise OptionError(
            f"--max-wait-seconds {config.max_wait_seconds} is shorter than --quiet-seconds "
            f"{config.quiet_seconds}: every burst would run at its max wait",
            hint=f"give --max-wait-seconds {config.quiet_seconds} or more (default "
            f"{DEFAULT_MAX_WAIT_SECONDS})",
        )
    if not 1 <= config.max_items <= MAX_ITEMS_LIMIT:
        raise OptionError(
            f"--max-items {config.max_items} is not between 1 and {MAX_ITEMS_LIMIT}",
            hint=f"e.g. --max-items {DEFAULT_MAX_ITEMS} (the default)",
        )


def debounce_settings(config: DebounceConfig | None) -> dict[str, Any] | None:
    return asdict(config) if config is not None else None


def _load(workspace: Workspace, key: str) -> tuple[Path, str, dict[str, Any]]:
    """As wrap_plans.load_workflow (which imports this module)."""
    path = workspace.existing_workflow_path(key)
    text = path.read_text(encoding="utf-8")
    hint = "fix the file at that place; nothing changed"
    return path, text, workflow_json.parse(text, workspace.relative(path), hint=hint)


def _burst_settings(layers: Layers) -> dict[str, Any]:
    """The lock, guard and rate limits a debounced workflow has too, for -o json."""
    if layers.lock is None and layers.rate is None and layers.guard is None:
        return {}
    return {
        "lock": lock_settings(layers.lock),
        "dedupe": guard_settings(layers.guard),
        "rate_limits": [rate_settings(r) for r in rate_limits(layers.rate)],
    }


def plan_add_debounce(workspace: Workspace, key: str, given: DebounceOptions) -> Plan:
    """The workflow behind a debounce, or its debounce changed in place. A duplicate guard
    goes in front of it, a lock and rate limits after it (`compose.py`)."""
    path, text, workflow = _load(workspace, key)
    layers = read_layers(workflow)
    current = layers.debounce
    config = merged_debounce(current, given, key)
    own_cleanup = runs_cleanup(workspace, layers.body)
    wrapped = compose(
        layers.body, key, layers.lock, layers.rate, layers.guard, config, own_cleanup=own_cleanup
    )
    messages = [
        "the body now runs with the burst's items as its input ($json), in a later execution "
        "than most callers'; a node that reads the trigger by name ($('Webhook').item) sees "
        "the runner's own event only",
    ]
    if layers.lock is not None or layers.rate is not None:
        trigger = next((e.node for e in graph.entries(layers.body)), "Webhook")
        messages.append(BURST_ITEMS.format(trigger=trigger))
    return Plan(
        (FileChange(path, text, dump_workflow(wrapped)),),
        tuple(messages) if current is None else (),
        settings={
            "workflow": key,
            "debounce": debounce_settings(config),
            **_burst_settings(layers),
        },
        setting_changes=tuple(
            setting_changes(
                f"{key}: debounce", debounce_settings(current), debounce_settings(config)
            )
        ),
    )


def plan_unwrap_debounce(workspace: Workspace, key: str) -> Plan | None:
    """unwrap of a debounced workflow (None: it has no debounce)."""
    path, text, workflow = _load(workspace, key)
    current = read_debounce(workflow)
    if current is None:
        return None
    return Plan(
        (FileChange(path, text, dump_workflow(unwrap_debounce(workflow))),),
        (),
        settings={"workflow": key, "debounce": None},
        setting_changes=tuple(
            setting_changes(f"{key}: debounce", debounce_settings(current), None)
        ),
    )
