"""The primitive marker: it opens every Code node of a primitive and appears nowhere else."""

from __future__ import annotations

from collections.abc import Iterator

from n8n_lockkit.check.rules.base import (
    CODE,
    MARKER,
    Problem,
    WorkflowContext,
    code_of,
    name_of,
)


def marker_required(ctx: WorkflowContext) -> Iterator[Problem]:
    """Every Code node of a primitive opens with the marker."""
    if not ctx.is_primitive:
        return
    for index, node in ctx.nodes(CODE):
        name, source = code_of(node)
        if not source.lstrip().startswith(MARKER):
            yield Problem(
                ("nodes", index, "parameters", name),
                f"Code node {name_of(node)!r} of primitive {ctx.key} does not open with {MARKER!r}",
                "restore the primitive with `n8nlock copy-primitive --force-overwrite`",
            )


def marker_forbidden(ctx: WorkflowContext) -> Iterator[Problem]:
    """The marker appears in no other workflow: it would exempt that code from our rules."""
    if ctx.is_primitive:
        return
    for index, node in ctx.nodes():
        for where, text in ctx.parameter_strings(index, node):
            if MARKER in text:
                yield Problem(
                    where,
                    f"node {name_of(node)!r} carries the primitive marker, but "
                    f"{ctx.key} is not an n8nlock primitive",
                    "remove the marker; it is reserved for n8nlock's primitives",
                )
