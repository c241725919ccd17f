"""Scopes, keys and costs n8nlock wrapped a workflow with that read like n8n expressions but
are text: `$json.body.orderId` typed without `={{ }}` locks every execution on one scope.

The wrapping commands refuse such a value now (`rewrite/wrapping/scope.py`); this rule tells
those whose workflows were wrapped with one before, with the command that repairs it.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator

from n8n_lockkit.check.rules.base import Problem, WorkflowContext
from n8n_lockkit.errors import LockkitError
from n8n_lockkit.primitives import formats
from n8n_lockkit.rewrite.wrapping.scope import names_variables, unbraced_expression, why_unbraced
from n8n_lockkit.rewrite.wrapping.unwrap import read_configs, read_guard
from n8n_lockkit.rewrite.wrapping.wrap import rate_limits

_LOCK_ROLES = ("lock-context", "lock-acquire")
_GUARD_ROLES = ("dedupe-context", "lock-context")
_RATE_ROLES = ("rate-context", "rate-limit")


def _where(ctx: WorkflowContext, roles: tuple[str, ...]) -> tuple[str | int, ...]:
    """The notes of the node that holds the part's settings."""
    for role in roles:
        for index, node in ctx.nodes():
            if formats.role_of(node) == role:
                return ("nodes", index, "notes")
    return ()


def _repaired(value: str) -> str | None:
    """The form of `value` that n8n evaluates, when n8n takes `value` as text although it
    names n8n's variables (`=orders` means `orders`: nothing to repair)."""
    return unbraced_expression(value) if names_variables(value) else None


def _problem(
    where: tuple[str | int, ...], what: str, value: str, effect: str, command: str, option: str
) -> Iterator[Problem]:
    fixed = _repaired(value)
    if fixed is not None:
        yield Problem(
            where,
            f"{what} {value!r} {why_unbraced(value)}: {effect}",
            f"re-run the command with it: n8nlock {command} {option} {shlex.quote(fixed)}",
        )


def expressions_braced(ctx: WorkflowContext) -> Iterator[Problem]:
    """Scopes, keys and costs of n8nlock's wrapping that name n8n's variables are expressions."""
    if ctx.is_primitive:
        return
    try:
        lock, rate = read_configs(ctx.workflow)
        guard = read_guard(ctx.workflow)
    except (LockkitError, LookupError, TypeError, ValueError, AttributeError):
        return  # not n8nlock's wrapping, or changed by hand: nothing this rule can read
    key = shlex.quote(ctx.key)
    if lock is not None:
        yield from _problem(
            _where(ctx, _LOCK_ROLES),
            "the lock's scope",
            lock.scope,
            "every execution waits for one lock",
            f"add-lock-to-workflow --workflow-key {key}",
            "--scope-expression",
        )
    if guard is not None and guard.dedupe_key is not None:
        yield from _problem(
            _where(ctx, _GUARD_ROLES),
            "the duplicate guard's key",
            guard.dedupe_key,
            "every execution after the first success is turned away as a duplicate",
            f"add-dedupe --workflow-key {key}",
            "--key-expression",
        )
    for limit in rate_limits(rate):
        command = f"add-rate-limit --workflow-key {key}"
        where = _where(ctx, _RATE_ROLES)
        yield from _problem(
            where,
            "a rate limit's scope",
            limit.scope,
            "every execution counts in one budget",
            command,
            "--scope-expression",
        )
        scope = _repaired(limit.scope) or limit.scope
        yield from _problem(
            where,
            f"the cost of rate limit {limit.scope!r},",
            limit.cost,
            "the execution fails, as its cost is not a number",
            f"{command} --scope-expression {shlex.quote(scope)}",
            "--cost-expression",
        )
