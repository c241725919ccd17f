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


# The nodes of the rate limit before its sliding window took slots (it counted in buckets,
# `n8n-ratelimit-<scope>:sw<W>:<b>`): same format stamp, other keys.
_BUCKET_ENGINE_ROLES = frozenset({"rate-count", "rate-reread"})


def rate_engine_current(ctx: WorkflowContext) -> Iterator[Problem]:
    """The file's rate limit counts where this n8nlock's does: a rate limit made before the
    sliding window took slots counts in other keys, so it and a workflow wrapped since do not
    share one budget on a scope."""
    for index, node in ctx.nodes():
        if formats.role_of(node) in _BUCKET_ENGINE_ROLES:
            yield Problem(
                ("nodes", index, "notes"),
                "this rate limit counts in the buckets of an earlier n8nlock; rate limits made "
                "by this one count in slots, so the two do not share a budget on one scope",
                "run `n8nlock upgrade`, then push (docs/upgrading.md)",
            )
            return
