"""A debounce composed with a duplicate guard, rate limits and a lock (issue 34).

Per trigger, whatever order the commands came in:

    T → Dedupe … (debounce_guard.py) → Debounce … (debounce_wrap.py) → … Debounce Body Items
      → Rate Limit … → Lock … (wrap.py) → the body

built in layers from the plain body: `wrap` puts the rate limits and the lock around the body,
`wrap_debounce` puts the debounce between the trigger and them (it takes the trigger's links
for its body), `guard_debounce` puts the guard in front of the debounce. `read_layers` peels
them off in the reverse order, each layer giving back exactly what it was given, so a file is
always `compose` of its layers: re-runs are byte-identical and unwrap restores the file.

The rate limits and the lock run in the runner's execution, once per burst, on the burst's
items: their scopes, keys and costs read the burst's first item as `$json`, and `$('Webhook')`
there is the runner's own event. A policy that turns the runner away would drop the whole
burst, so only waiting ones compose (`check`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from n8n_lockkit.primitives import engine
from n8n_lockkit.primitives.nodekit import if_parameters, js_literal
from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.graphs.graph import Workflow
from n8n_lockkit.rewrite.wrapping.configs import LockConfig, Rates, WrapError
from n8n_lockkit.rewrite.wrapping.debounce_guard import guard_debounce, unguard_debounce
from n8n_lockkit.rewrite.wrapping.debounce_wrap import (
    DebounceConfig,
    read_debounce,
    unwrap_debounce,
    wrap_debounce,
)
from n8n_lockkit.rewrite.wrapping.nodes import role_of
from n8n_lockkit.rewrite.wrapping.replay import REPLAY
from n8n_lockkit.rewrite.wrapping.unwrap import read_configs, read_guard, unwrap
from n8n_lockkit.rewrite.wrapping.wrap import rate_limits, wrap

# What the plans tell a user whose lock or rate limit now runs behind a debounce.
BURST_ITEMS = (
    "the lock and the rate limits run in the runner's execution, once per burst, after "
    "Debounce Body Items: their scope, key and cost expressions read the burst's first item as "
    "$json, and $('{trigger}') there is the runner's own event"
)


@dataclass(frozen=True)
class Layers:
    """What n8nlock put around a workflow's body, and the body without it."""

    body: Workflow
    lock: LockConfig | None
    rate: Rates
    guard: LockConfig | None
    debounce: DebounceConfig | None


def read_layers(workflow: Workflow) -> Layers:
    """The layers a workflow file carries (none for a workflow n8nlock never wrapped)."""
    debounce = read_debounce(workflow)
    if debounce is None:
        lock, rate = read_configs(workflow)
        return Layers(unwrap(workflow), lock, rate, read_guard(workflow), None)
    guard = read_guard(workflow)
    inner = unwrap_debounce(unguard_debounce(workflow, guard) if guard else workflow)
    lock, rate = read_configs(inner)
    return Layers(unwrap(inner), lock, rate, guard, debounce)


APART = "or keep them apart: debounce here, and lock in a workflow the debounced body calls"


def _drops(what: str, key: str, fix: str) -> WrapError:
    return WrapError(
        f"workflow {key!r} would have a debounce and {what}: that would drop a whole burst "
        "(the runner's execution carries every event of it, and its callers were answered "
        "already)",
        hint=f"{fix} (what composes with a debounce waits); {APART}",
    )


def check(key: str, lock: LockConfig | None, rate: Rates, guard: LockConfig | None) -> None:
    """Refuse what does not compose with a debounce: a lock or rate limit that would turn the
    runner away, a lock that calls the primitives, a guard that replays."""
    if lock is not None and lock.on_busy != "wait":
        fix = f"`n8nlock add-lock-to-workflow --workflow-key {key} --on-busy wait`"
        raise _drops(f"a lock with --on-busy {lock.on_busy}", key, fix)
    for limit in rate_limits(rate):
        if limit.on_denied != "wait":
            scope = shlex.quote(limit.scope.replace("`", "'"))
            fix = (
                f"`n8nlock add-rate-limit --workflow-key {key} --scope-expression {scope} "
                "--on-denied wait`"
            )
            what = f"a rate limit ({limit.scope!r}) with --on-denied {limit.on_denied}"
            raise _drops(what, key, fix)
    if lock is not None and lock.via_subworkflow:
        raise WrapError(
            f"workflow {key!r} would have a debounce and a lock that calls lock_acquisition "
            "(--via-subworkflow): its Lock Restore Items would hand the body the runner's own "
            "event instead of the burst",
            hint=f"use the inline lock: `n8nlock add-lock-to-workflow --workflow-key {key} "
            f"--no-via-subworkflow`; {APART}",
        )
    if guard is not None and guard.on_busy == REPLAY:
        raise WrapError(
            f"workflow {key!r} would have a debounce and a duplicate guard that replays "
            "(--on-duplicate replay): the first call's answer is the debounce's buffered "
            "answer, not worth replaying",
            hint=f"answer a duplicate as skipped: `n8nlock add-dedupe --workflow-key {key} "
            "--on-duplicate skip`",
        )


def _release_per_burst(workflow: Workflow, key: str) -> None:
    """Let the lock's release run once per acquisition, not once per execution: a runner
    whose next burst came first waits for it and runs the body again in the same execution
    (docs/debounce.md, "One waiter per burst"), and that second pass takes the lock anew.
    The release's verdict names the lock_id it freed; each acquisition draws its own."""
    for node in graph.nodes(workflow):
        if role_of(node) == "lock-release-once":
            verdict = js_literal(engine.RELEASE_ENTRY)
            decision = js_literal("Lock Decide")
            released = f"$({verdict}).isExecuted"
            freed = f"$({verdict}).first().json.lock_id === $({decision}).first().json.lock_id"
            node["parameters"] = if_parameters(key, f"!({released} && {freed})")


def compose(
    body: Workflow,
    key: str,
    lock: LockConfig | None,
    rate: Rates,
    guard: LockConfig | None,
    debounce: DebounceConfig | None,
    *,
    own_cleanup: bool = False,
) -> Workflow:
    """The body with its layers around it (a new dict); without a debounce, `wrap`'s form."""
    if debounce is None:
        return wrap(body, key, lock, rate, guard, own_cleanup=own_cleanup)
    check(key, lock, rate, guard)
    inner = wrap(body, key, lock, rate, None, own_cleanup=own_cleanup)
    _release_per_burst(inner, key)
    debounced = wrap_debounce(inner, key, debounce)
    if guard is None:
        return debounced
    return guard_debounce(debounced, key, guard, own_cleanup=own_cleanup)
