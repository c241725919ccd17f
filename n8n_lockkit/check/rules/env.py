"""With --env: every placeholder resolves in that env file."""

from __future__ import annotations

from collections.abc import Iterator

from n8n_lockkit.check.rules.base import Problem, WorkflowContext, strings_in
from n8n_lockkit.workspace import placeholders


def placeholders_resolve(ctx: WorkflowContext) -> Iterator[Problem]:
    """Every `{{@:env:…}}` placeholder resolves in the chosen env."""
    if ctx.env is None:
        return
    for where, text in strings_in(ctx.workflow):
        for problem in placeholders.unresolved(text, ctx.env, require_ids=False):
            yield Problem(
                where,
                f"{{{{@:env:{problem.path}}}}} {problem.reason}",
                "add the key to the env file, or push its workflow/credential first",
            )
