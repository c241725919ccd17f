"""Format stamps: a file n8nlock made in another format than this n8nlock writes.

A workspace that mixes formats mixes lock engines: a wrapped workflow of format 1 and one of
format 2 do not exclude each other on one scope until both are upgraded and pushed
(docs/upgrading.md). Every such file is flagged, so a mixed workspace shows each file to upgrade.
"""

from __future__ import annotations

from collections.abc import Iterator

from n8n_lockkit.check.rules.base import Problem, WorkflowContext
from n8n_lockkit.primitives import formats


def format_current(ctx: WorkflowContext) -> Iterator[Problem]:
    """n8nlock's nodes in the file are of the format this n8nlock writes."""
    found = (
        formats.primitive_format(ctx.key, ctx.workflow)
        if ctx.is_primitive
        else formats.workflow_format(ctx.workflow)
    )
    if found is None or found == formats.FORMAT:
        return
    where: tuple[str | int, ...] = ()
    for index, node in ctx.nodes():
        if str(node.get("notes") or "").startswith(formats.MARK):
            where = ("nodes", index, "notes")
            break
    if found < formats.FORMAT:
        yield Problem(
            where,
            f"made by n8nlock format {found}; this n8nlock writes format {formats.FORMAT}, "
            "whose locks do not exclude this file's until both are upgraded",
            "run `n8nlock upgrade`, then push (docs/upgrading.md)",
        )
    else:
        yield Problem(
            where,
            f"made by a newer n8nlock (format {found}); this one writes format {formats.FORMAT}",
            "upgrade n8nlock (pip install -U n8n-lockkit) before you change this workspace",
        )
