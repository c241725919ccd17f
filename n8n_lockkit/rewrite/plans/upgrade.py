"""`n8nlock upgrade`: bring a whole workspace to the format this n8nlock writes, in one plan.

- Primitives are rendered again. One that n8nlock wrote (its stamp's digest still matches, or
  an unstamped file equal to a render n8nlock shipped) is replaced; one edited by hand is kept
  with a warning unless `force_overwrite`.
- Every wrapped workflow is wrapped again in place with the lock and rate limit its nodes
  carry (scope, TTL, wait, slots, error handler, renewals, limit, window, denial path). A
  lock that calls the primitives keeps calling them unless `inline`.
- Env files register every primitive the workspace has or its workflows now need, and the
  static scopes of the wrapped workflows.

Running it again plans nothing. The result says, per workflow, the format it had and what
the plan does, and which workflows to push.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from n8n_lockkit.primitives import formats
from n8n_lockkit.primitives.catalogue import (
    ERROR_HANDLER,
    LOCK_ACQUISITION,
    LOCK_RELEASE,
    LOCK_RENEW,
    PRIMITIVES,
    RATE_LIMIT,
    Primitive,
)
from n8n_lockkit.primitives.render import dump_workflow, render_primitive
from n8n_lockkit.rewrite.plans.own_error_workflow import runs_cleanup
from n8n_lockkit.rewrite.plans.wrap_plans import parse_workflow
from n8n_lockkit.rewrite.wrapping.compose import compose, read_layers
from n8n_lockkit.rewrite.wrapping.scope import parse_scope
from n8n_lockkit.rewrite.wrapping.wrap import LockConfig, WrapError
from n8n_lockkit.workspace.envconfig import EnvFile
from n8n_lockkit.workspace.layout import Workspace, workflow_key
from n8n_lockkit.workspace.plan import Action, FileChange, Plan


@dataclass(frozen=True)
class UpgradeItem:
    """One workflow file: what it is, which format made it, and what the upgrade does."""

    key: str
    kind: str  # "primitive" or "wrapped"
    found_format: int | None
    action: str  # an Action value
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "kind": self.kind,
            "format": self.found_format,
            "to_format": formats.FORMAT,
            "action": self.action,
            "note": self.note,
        }


@dataclass(frozen=True)
class Upgrade:
    plan: Plan
    items: tuple[UpgradeItem, ...]

    @property
    def to_push(self) -> list[str]:
        """Workflow keys whose files the plan writes: what the instance does not have yet."""
        return [i.key for i in self.items if i.action in (Action.CREATE, Action.UPDATE)]


def _load(workspace: Workspace, key: str, text: str) -> dict[str, Any]:
    return parse_workflow(workspace, workspace.workflow_path(key), text)


def _primitive(
    workspace: Workspace, primitive: Primitive, text: str | None, *, force_overwrite: bool
) -> tuple[FileChange, UpgradeItem, str | None]:
    path = workspace.workflow_path(primitive.key)
    after = dump_workflow(render_primitive(primitive))
    if text is None:
        change = FileChange(path, None, after)
        return change, UpgradeItem(primitive.key, "primitive", None, change.action.value), None
    current = _load(workspace, primitive.key, text)
    found = formats.primitive_format(primitive.key, current)
    pristine = formats.is_pristine_primitive(primitive.key, current)
    change = FileChange(path, text, after, overwrite=pristine or force_overwrite)
    warning = None
    if change.action is Action.KEEP:
        warning = (
            f"{workspace.relative(path)} was edited by hand (it is no primitive n8nlock wrote) "
            "and was kept; pass --force-overwrite to replace it with format "
            f"{formats.FORMAT}"
        )
    note = "edited by hand" if change.action is Action.KEEP else ""
    item = UpgradeItem(primitive.key, "primitive", found, change.action.value, note)
    return change, item, warning


def _needed(lock: LockConfig | None) -> list[Primitive]:
    """The primitives a wrapped workflow calls. A rate limit runs in the workflow itself
    since the sliding window came, so it calls none."""
    needed: list[Primitive] = []
    if lock is not None:
        if lock.via_subworkflow:
            needed += [LOCK_ACQUISITION, LOCK_RELEASE]
        if lock.lock_on_error:
            needed.append(ERROR_HANDLER)
        if lock.renew_before:
            needed.append(LOCK_RENEW)
    return needed


@dataclass
class _Wrapped:
    change: FileChange
    item: UpgradeItem
    needed: list[Primitive]
    static_scope: str | None


def _wrapped(
    workspace: Workspace, key: str, text: str, workflow: dict[str, Any], *, inline: bool
) -> _Wrapped | str:
    """The workflow wrapped again, or a warning why it is kept as it is."""
    path = workspace.workflow_path(key)
    found = formats.workflow_format(workflow)
    try:
        layers = read_layers(workflow)  # a debounce with the rest (compose.py): made anew
        lock, guard = layers.lock, layers.guard
        moved = inline and lock is not None and lock.via_subworkflow
        if lock is not None and inline:
            lock = replace(lock, via_subworkflow=False)
        body = layers.body
        own_cleanup = runs_cleanup(workspace, body)
        after = dump_workflow(
            compose(body, key, lock, layers.rate, guard, layers.debounce, own_cleanup=own_cleanup)
        )
    except WrapError as err:
        return f"{workspace.relative(path)} was kept as it is: {err.message}"
    change = FileChange(path, text, after)
    note = "lock moved into the workflow" if moved else ""
    item = UpgradeItem(key, "wrapped", found, change.action.value, note)
    static = parse_scope(lock.scope).static if lock is not None else None
    return _Wrapped(change, item, _needed(lock) + _needed(guard), static)


@dataclass
class _Collected:
    """What the wrapped workflows of a workspace add up to."""

    changes: list[FileChange] = field(default_factory=list)
    items: list[UpgradeItem] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    needed: dict[str, Primitive] = field(default_factory=dict)
    scopes: list[str] = field(default_factory=list)


def _wrapped_workflows(workspace: Workspace, texts: dict[str, str], *, inline: bool) -> _Collected:
    collected = _Collected()
    for key, text in texts.items():
        if key in PRIMITIVES:
            continue
        workflow = _load(workspace, key, text)
        found = formats.workflow_format(workflow)
        if found is None:
            continue  # n8nlock never touched it
        wrapped = _wrapped(workspace, key, text, workflow, inline=inline)
        if isinstance(wrapped, str):
            collected.messages.append(wrapped)
            collected.items.append(UpgradeItem(key, "wrapped", found, Action.KEEP.value))
            continue
        collected.changes.append(wrapped.change)
        collected.items.append(wrapped.item)
        collected.needed.update((p.key, p) for p in wrapped.needed)
        if wrapped.static_scope is not None:
            collected.scopes.append(wrapped.static_scope)
    return collected


def _register(envs: Sequence[EnvFile], present: list[Primitive], collected: _Collected) -> None:
    for env in envs:
        for primitive in present:
            # rate_limit_check serves direct callers only (a wrapped workflow's rate limit
            # runs inline), and copy-primitive leaves it unregistered: upgrade does too.
            if primitive is not RATE_LIMIT:
                env.register_workflow(primitive.key, primitive.display_name)
        if ERROR_HANDLER in present:
            env.ensure_lock_scopes()
        for scope in collected.scopes:
            env.add_lock_scope(scope)


def plan_upgrade(
    workspace: Workspace,
    envs: Sequence[EnvFile],
    *,
    force_overwrite: bool = False,
    inline: bool = False,
) -> Upgrade:
    """Every file of the workspace at this n8nlock's format, and the envs that register them."""
    texts = {workflow_key(p): p.read_text(encoding="utf-8") for p in workspace.workflow_files()}
    wrapped = _wrapped_workflows(workspace, texts, inline=inline)
    present = [p for key, p in PRIMITIVES.items() if key in texts or key in wrapped.needed]
    changes: list[FileChange] = []
    items: list[UpgradeItem] = []
    messages: list[str] = []
    for primitive in present:
        change, item, warning = _primitive(
            workspace, primitive, texts.get(primitive.key), force_overwrite=force_overwrite
        )
        changes.append(change)
        items.append(item)
        messages += [warning] if warning else []
    _register(envs, present, wrapped)
    plan = Plan(
        (*changes, *wrapped.changes, *(env.change() for env in envs)),
        (*messages, *wrapped.messages),
    )
    return Upgrade(plan, (*items, *wrapped.items))
