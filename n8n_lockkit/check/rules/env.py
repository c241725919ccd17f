"""What `n8nlock push` would refuse in a file, by the same checks: with --env, a placeholder
that does not resolve or an id not given yet (`placeholders.push_refusals`); with or without,
workflows that reference each other in a cycle."""

from __future__ import annotations

import json
from collections.abc import Iterator

from n8n_lockkit.check.rules.base import Problem, WorkflowContext, strings_in
from n8n_lockkit.workspace import placeholders


def placeholders_resolve(ctx: WorkflowContext) -> Iterator[Problem]:
    """Every `{{@:env:…}}` placeholder resolves in the chosen env, as push needs it. One
    finding per placeholder and file, at its first place: an empty credential is one thing
    to fix, however many nodes use it."""
    if ctx.env is None:
        return
    found: dict[str, tuple[tuple[str | int, ...], str, int]] = {}
    for where, text in strings_in(ctx.workflow):
        for problem in placeholders.push_refusals(text, ctx.env, ctx.pushed):
            first, reason, count = found.get(problem.path, (where, problem.reason, 0))
            found[problem.path] = (first, reason, count + 1)
    for path, (where, reason, count) in found.items():
        more = f" ({count} places in this file)" if count > 1 else ""
        yield Problem(
            where, f"{{{{@:env:{path}}}}} {reason}{more}", placeholders.refusal_hint(path, ctx.env)
        )


def no_reference_cycle(ctx: WorkflowContext) -> Iterator[Problem]:
    """Workflows of the workspace do not reference each other's ids in a cycle (push refuses)."""
    text = json.dumps(ctx.workflow, ensure_ascii=False)
    references = {**ctx.references, ctx.key: placeholders.workflow_references(text, ctx.key)}
    cycle = placeholders.cycle_through(references, ctx.key)
    if cycle is not None:
        yield Problem(
            (),
            f"workflows reference each other in a cycle: {' -> '.join(cycle)}",
            placeholders.CYCLE_HINT,
        )
