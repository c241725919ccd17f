"""Plans that put primitives into a workspace (create-lock, copy-primitive)."""

from __future__ import annotations

from collections.abc import Sequence

from n8n_lockkit.primitives.catalogue import (
    ERROR_HANDLER,
    LOCK_ACQUISITION,
    LOCK_RELEASE,
    LOCK_RENEW,
    RATE_LIMIT,
    Primitive,
)
from n8n_lockkit.primitives.render import RenderOptions, dump_workflow, render_primitive
from n8n_lockkit.workspace.envconfig import EnvFile
from n8n_lockkit.workspace.layout import Workspace
from n8n_lockkit.workspace.plan import Action, FileChange, Plan, read_text_or_none


def primitive_change(
    workspace: Workspace, primitive: Primitive, *, force_overwrite: bool, options: RenderOptions
) -> FileChange:
    path = workspace.workflow_path(primitive.key)
    after = dump_workflow(render_primitive(primitive, options))
    return FileChange(path, read_text_or_none(path), after, overwrite=force_overwrite)


def _kept_warnings(workspace: Workspace, changes: Sequence[FileChange]) -> tuple[str, ...]:
    return tuple(
        f"{workspace.relative(c.path)} differs from the shipped primitive and was kept; "
        "pass --force-overwrite to replace it"
        for c in changes
        if c.action is Action.KEEP
    )


def lock_primitives(
    *, include_error_handler: bool, include_rate_limit: bool, include_renew: bool = False
) -> list[Primitive]:
    chosen = [LOCK_ACQUISITION, LOCK_RELEASE]
    if include_renew:
        chosen.append(LOCK_RENEW)
    if include_error_handler:
        chosen.append(ERROR_HANDLER)
    if include_rate_limit:
        chosen.append(RATE_LIMIT)
    return chosen


def plan_create_lock(
    workspace: Workspace,
    envs: Sequence[EnvFile],
    primitives: Sequence[Primitive],
    *,
    force_overwrite: bool,
    options: RenderOptions,
) -> Plan:
    """Write the primitives and register each one in every selected env."""
    files = [
        primitive_change(workspace, p, force_overwrite=force_overwrite, options=options)
        for p in primitives
    ]
    for env in envs:
        for primitive in primitives:
            env.register_workflow(primitive.key, primitive.display_name)
        if ERROR_HANDLER in primitives:
            env.ensure_lock_scopes()
    changes = (*files, *(env.change() for env in envs))
    return Plan(changes, _kept_warnings(workspace, files))


def plan_copy_primitive(
    workspace: Workspace, primitive: Primitive, *, force_overwrite: bool, options: RenderOptions
) -> Plan:
    """Write one primitive; register nothing."""
    change = primitive_change(
        workspace, primitive, force_overwrite=force_overwrite, options=options
    )
    messages = _kept_warnings(workspace, [change])
    if primitive in (LOCK_ACQUISITION, LOCK_RELEASE, LOCK_RENEW, ERROR_HANDLER):
        messages += (
            f"{primitive.key} is not registered in any env; `n8nlock create-lock` "
            "registers the lock primitives for push",
        )
    return Plan((change,), messages)
