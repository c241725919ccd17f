"""What `n8nlock push` would refuse in a file, by the same checks: with --env, a placeholder
that does not resolve or an id not given yet (`placeholders.push_refusals`); with or without,
workflows that reference each other in a cycle. And what the env's n8n would run wrongly: a
parked webhook caller in queue mode."""

from __future__ import annotations

import json
from collections.abc import Iterator

from n8n_lockkit.check.rules.base import (
    WAIT,
    Problem,
    WorkflowContext,
    as_dict,
    name_of,
    parameters_of,
    strings_in,
)
from n8n_lockkit.primitives import formats
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


WEBHOOK = "n8n-nodes-base.webhook"


def _debounced(ctx: WorkflowContext) -> bool:
    """Whether a debounce answers the webhook's callers (its runner's lock parks after that)."""
    return any(formats.role_of(node) == "debounce-context" for _, node in ctx.nodes())


def park_webhook_in_queue_mode(ctx: WorkflowContext) -> Iterator[Problem]:
    """In an env that runs n8n in queue mode (`n8n.queueMode: true`), no webhook waits for its
    answer across a parked waiter (`add-lock-to-workflow --park`): n8n answers such a caller
    at once, with an empty 200, when the job ends at the park. Behind a debounce every caller
    was answered before the runner's lock, so its waiters may park."""
    if ctx.env is None or as_dict(ctx.env.get("n8n")).get("queueMode") is not True:
        return
    parks = [i for i, node in ctx.nodes(WAIT) if formats.role_of(node) == "lock-park"]
    if not parks or _debounced(ctx):
        return
    for index, node in ctx.nodes(WEBHOOK):
        mode = parameters_of(node).get("responseMode", "onReceived")
        if mode in ("responseNode", "lastNode"):
            yield Problem(
                ("nodes", index, "parameters", "responseMode"),
                f"webhook {name_of(node)!r} waits for its answer ({mode}), and its waiters park "
                "in a queue-mode n8n: the caller would get an empty 200 at the park",
                f"re-run add-lock-to-workflow --workflow-key {ctx.key} --no-park (webhook "
                "callers wait awake in queue mode; see docs/parking.md)",
            )
