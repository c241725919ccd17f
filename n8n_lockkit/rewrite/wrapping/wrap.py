"""Wrap a workflow's body in a duplicate guard, a rate limit and a lock, any of them
(`unwrap.py` takes them off again).

`wrap(body, …)` is a pure function of the unwrapped workflow and the configs, and
`unwrap.read_configs` / `read_guard` recover them from a wrapped workflow, so re-running a
command with the same flags gives the same bytes and different flags update the nodes in
place.

Shape, per entry T (rate limit first: it is cheap and must not queue on the lock):

    T → Rate Limit Context → … → Rate Limit Route ─allow→ Rate Limit Restore ─┬→ Lock Context → …
                                                  └deny→ Rate Limit Denied     │   (the engine's
                                                                               │   acquire chain,
        Lock Restore (Merge: input 1 = those items, input 2 = Lock Hold) ←────┘   drawn above)
        → (the body, as before)
    every end of the body, and each Lock Restore → Lock Join → Lock Release Once?
        → Lock Release Verdict → … → Lock Release → Lock Output

A duplicate guard (`add-dedupe`) is the same engine chain named "Dedupe …", in front of the
rate limit: T → Dedupe Context … Dedupe Restore → Rate Limit … → Lock … → the body.

The acquire and release chains come from `primitives/engine.py` (the inline form, the
default); `release_side.py` builds the release side. With `via_subworkflow`, Lock Acquire / Lock
Release call the primitives instead, and Lock Restore Items (a Code node) gives the body the
trigger's items again.

On the canvas (`builder.py`, `layout.py`, `notes.py`) the acquire and rate-limit chains stack
above the body, the release sits right of the body's ends, and every block is framed by a
sticky note that says what it is and how to change or remove it.

Lock Join is a Merge node: under n8n's v1 execution order it runs once, after every branch
of the body has finished (its input from Lock Restore guarantees it runs at all). Lock
Output answers with what the body's last node answered, for "last node" webhooks: a Merge
when the body has one end, a Code node that picks the end that ran when it has several.
"""

from __future__ import annotations

import copy
import dataclasses
import json

from n8n_lockkit.primitives import engine, nodekit, overlap, rate
from n8n_lockkit.primitives.chain import Chain, Names, Row
from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.graphs.graph import Entry, Workflow
from n8n_lockkit.rewrite.wrapping import configs, notes, refusals, release_side, replay, respond
from n8n_lockkit.rewrite.wrapping.builder import (
    INPUT_1_ONCE_ALL_ARRIVED,
    STEP,
    Block,
    Builder,
    entry_label,
    trigger_entries,
)
from n8n_lockkit.rewrite.wrapping.configs import ALGORITHMS as ALGORITHMS
from n8n_lockkit.rewrite.wrapping.configs import CONFIG_MARK
from n8n_lockkit.rewrite.wrapping.configs import INLINE_LOCK_SHIFT as INLINE_LOCK_SHIFT
from n8n_lockkit.rewrite.wrapping.configs import LOCK_SHIFT as LOCK_SHIFT
from n8n_lockkit.rewrite.wrapping.configs import ON_DENIED as ON_DENIED
from n8n_lockkit.rewrite.wrapping.configs import LockConfig as LockConfig
from n8n_lockkit.rewrite.wrapping.configs import RateLimitConfig as RateLimitConfig
from n8n_lockkit.rewrite.wrapping.configs import Rates as Rates
from n8n_lockkit.rewrite.wrapping.configs import WrapError as WrapError
from n8n_lockkit.rewrite.wrapping.nodes import (
    acquired,
    call,
    owned,
    restore_items,
    role_of,
)
from n8n_lockkit.rewrite.wrapping.settings import (
    GUARD,
    LOCK_ON_ERROR,
    note_before,
    set_error_workflow,
    set_execution_order,
)
from n8n_lockkit.rewrite.wrapping.settings import HANDLER_ID as HANDLER_ID

EXECUTE = "n8n-nodes-base.executeWorkflow"
IF = "n8n-nodes-base.if"
RENEWED = "$json.renewed === true"
LOCK_FRAME = ("frame-lock", notes.LOCK_NOTE)
LOST = (
    "Lock lost before {target}: {{{{ $json.reason }}}} (scope '{{{{ $json.scope }}}}'); "
    "the node did not run"
)


def _rate_limit(
    b: Builder, after: tuple[str, int], entry: Entry, rates: tuple[RateLimitConfig, ...]
) -> str:
    """The rate-limit chain of `primitives/rate.py` (stacked above the body), and
    Rate Limit Restore: a Merge that waits for the verdict and hands on the items of `after`
    (binary data included), as Lock Restore does for the lock."""
    x, y = b.position(after[0])
    label = entry_label(b.workflow, entry)
    names = Names("" if b.single_entry else label)
    limits = [dataclasses.asdict(r) for r in rates]
    note = CONFIG_MARK + json.dumps(limits, sort_keys=True)
    inputs = [rate.RateInputs(**c) for c in limits]
    group = rate.check(b.key, inputs, (x + STEP, 0), names, config_note=note)
    name = b.name(notes.RATE_NOTE, label)
    b.stack(Block("frame-rate", name, notes.rate(b.key, rates), b.add_group(group)))
    restore = b.add(
        owned(
            b.key,
            "rate-restore",
            b.name("Rate Limit Restore", label),
            "n8n-nodes-base.merge",
            3,
            [x + STEP, y],
            dict(INPUT_1_ONCE_ALL_ARRIVED),
        )
    )
    b.connect(*after, group.entry)
    b.connect(*after, restore, 0)
    for source, output in group.exits["allowed"]:
        b.connect(source, output, restore, 1)
    return restore


def rate_limits(rate: Rates) -> tuple[RateLimitConfig, ...]:
    """The rate limits `rate` stands for: none, one, or several (composed)."""
    if rate is None:
        return ()
    if isinstance(rate, RateLimitConfig):
        return (rate,)
    return tuple(rate)


def _acquire(
    b: Builder, after: tuple[str, int], entry: Entry, config: LockConfig
) -> tuple[str, str]:
    x, y = b.position(after[0])
    trigger = entry_label(b.workflow, entry)
    values = {
        "scope": config.scope,
        "ttl_seconds": config.ttl_seconds,
        "execution_id": "={{ $execution.id }}",
        "wait_till_lock_released": config.on_busy != "error",
        "max_wait_seconds": config.max_wait_seconds,
        "max_concurrent": config.max_concurrent,
        "workflow_id": "={{ $workflow.id }}",
        "workflow_name": "={{ $workflow.name }}",
    }
    acquire = b.add(
        owned(
            b.key,
            "lock-acquire",
            b.name("Lock Acquire", trigger),
            "n8n-nodes-base.executeWorkflow",
            1.2,
            [x + STEP, y],
            call("lock_acquisition", values),
        )
    )
    restore = b.add(
        owned(
            b.key,
            "lock-restore",
            b.name("Lock Restore Items", trigger),
            "n8n-nodes-base.code",
            2,
            [x + 2 * STEP, y],
            restore_items(entry.node, entry.output),
        )
    )
    b.connect(*after, acquire)
    b.connect(acquire, 0, restore)
    return acquire, restore


def acquire_inline(
    b: Builder, after: tuple[str, int], entry: Entry, config: LockConfig
) -> tuple[str, str]:
    """The engine's acquire chain (stacked above the body), and Lock Restore: a Merge
    that waits for the lock and hands the body the items of `after` (the trigger's, binary
    data included), as n8n's Merge "choose branch" passes input 1 through untouched. A
    duplicate guard's chain is the same, named "Dedupe …".

    Returns the names of the chain's decision node (its record names the held lock) and of
    its Restore."""
    x, y = b.position(after[0])
    trigger = entry_label(b.workflow, entry)
    label = "" if b.single_entry else trigger
    names = Names(label, kind="Dedupe" if config.dedupe else "Lock")
    # A replaying guard's duplicates wait in line for the first run (replay.py).
    replays = config.on_busy == replay.REPLAY
    inputs = engine.LockInputs(
        scope=config.scope,
        ttl_seconds=config.ttl_seconds,
        max_wait_seconds=config.max_wait_seconds,
        on_busy="wait" if replays else config.on_busy,
        slots=config.max_concurrent,
        dedupe_window=config.dedupe_window_seconds,
        dedupe_key=config.dedupe_key,
    )
    skips = config.on_busy in overlap.SKIPPING or replays
    group = engine.acquire(
        b.key, inputs, (x + STEP, 0), names, skips=skips, parks=config.park, reads_first=replays
    )
    if replays:
        replay.duplicates(group)
    elif skips and _responds_by_node(b.workflow, entry):
        _respond_skipped(group)
    role, title = ("frame-dedupe", notes.DEDUPE_NOTE) if config.dedupe else LOCK_FRAME
    text = notes.lock(b.key, config)
    b.stack(Block(role, b.name(title, trigger), text, b.add_group(group)))
    context = b.node(group.entry)
    context["notes"] += CONFIG_MARK + json.dumps(_config_note(config), sort_keys=True)
    restore = b.add(
        owned(
            b.key,
            names.role("lock-restore"),
            names("Lock Restore"),
            "n8n-nodes-base.merge",
            3,
            [x + STEP, y],
            dict(INPUT_1_ONCE_ALL_ARRIVED),
        )
    )
    b.connect(*after, group.entry)
    b.connect(*after, restore, 0)
    for source, output in group.exits["held"]:
        b.connect(source, output, restore, 1)
    return names("Lock Decide"), restore


def _responds_by_node(workflow: Workflow, entry: Entry) -> bool:
    """Whether the entry is a webhook that answers with a Respond to Webhook node."""
    trigger = next(n for n in graph.nodes(workflow) if n["name"] == entry.node)
    parameters = graph.as_dict(trigger.get("parameters"))
    return parameters.get("responseMode") == "responseNode"


def _respond_skipped(group: Chain) -> None:
    """A skipped caller of a webhook that answers with a Respond to Webhook node gets the
    skipped answer from one of ours (the body's own never runs)."""
    respond = nodekit.Kind(
        "n8n-nodes-base.respondToWebhook", 1.1, {"respondWith": "firstIncomingItem", "options": {}}
    )
    role = group.names.role("lock-skipped-response")
    group.add(Row(role, "Lock Skipped Response", respond, overlap.SKIPPED_RESPONSE_CELL))
    group.link([("Lock Skipped", 0, "Lock Skipped Response")])


def _config_note(config: LockConfig) -> dict[str, object]:
    return {
        "scope": config.scope,
        "ttl_seconds": config.ttl_seconds,
        "max_wait_seconds": config.max_wait_seconds,
        "on_busy": config.on_busy,
        "max_concurrent": config.max_concurrent,
        **(
            {"dedupe_window_seconds": config.dedupe_window_seconds, "dedupe_key": config.dedupe_key}
            if config.dedupe
            else {}
        ),
        **({"park": True} if config.park else {}),
        **(
            {"max_answer_bytes": config.max_answer_bytes} if config.on_busy == replay.REPLAY else {}
        ),
    }


def _renewals(b: Builder, acquires: list[str], config: LockConfig) -> None:
    """Before each named body node, a side branch that renews the lock, or stops the execution
    when the lock is no longer its own. Under n8n's v1 order a node's targets run top to
    bottom, each branch to its end, so the branch runs first: it is stacked above the body,
    in a note of its own."""
    for target in config.renew_before:
        node = next((n for n in graph.nodes(b.workflow) if n["name"] == target), None)
        if node is None or graph.is_trigger(node) or role_of(node):
            raise refusals.not_a_body_node(b.workflow, target, node)
        feeding = [
            (source, output)
            for source in list(b.workflow["connections"])
            for output, links in enumerate(graph.outputs(b.workflow, source))
            if any(x["node"] == target for x in links)
        ]
        values = {
            "scope": acquired(acquires, "scope"),
            "lock_id": acquired(acquires, "lock_id"),
            "ttl_seconds": config.ttl_seconds,
            "ticket": acquired(acquires, "ticket"),
            "max_concurrent": acquired(acquires, "slots"),
        }
        # role, name, kind, in a row moved up with its note by b.stack
        branch = [
            ("lock-renew", "Lock Renew", nodekit.Kind(EXECUTE, 1.2, call("lock_renew", values))),
            ("lock-renewed", "Lock Renewed?", nodekit.Kind(IF, 2.2, condition=RENEWED)),
            ("lock-lost", "Lock Lost", nodekit.stop_text(f"={LOST.format(target=target)}")),
        ]
        x = b.position(target)[0]
        renew, check, lost = (
            b.add(kind.node(b.key, role, f"{base} ({target})", [x + k * STEP, 0]), placed=True)
            for k, (role, base, kind) in enumerate(branch)
        )
        name = notes.RENEW_NOTE.format(target=target)
        text = notes.renew(b.key, target, config)
        b.stack(Block("frame-renew", name, text, [b.node(n) for n in (renew, check, lost)]))
        for source, output in feeding:
            b.connect(source, output, renew)
        b.connect(renew, 0, check)
        b.connect(check, 1, lost)


# The steps in front of the body, in order: a duplicate guard first (a duplicate spends no rate
# budget and never queues for the lock), then the rate limit (a denied call never queues for
# the lock), then the lock.
STEPS = ("guard", "rate", "lock")
# The names of the nodes wrap adds, by what they are part of.
CHAINS = ("guard", "guard-restore", "lock", "lock-restore", "body")
# Where an execution that holds a guard may end without the body, quietly (a failure leaves the
# guard to the cleanup handler): a rate limit's passthrough or stop, a lock's skip.
QUIET_ENDS = ("rate-denied-passthrough", "rate-denied-stop", "lock-skipped")


def _check_composition(key: str, lock: LockConfig | None, guard: LockConfig | None) -> None:
    if lock and lock.via_subworkflow and lock.on_busy in overlap.SKIPPING:
        raise configs.WrapError(
            f"--on-busy {lock.on_busy} needs the inline lock",
            hint="drop --via-subworkflow (direct callers pass on_busy to lock_acquisition)",
        )
    if lock and lock.park and lock.via_subworkflow:
        raise configs.WrapError(
            "--park needs the inline lock: lock_acquisition called as a sub-workflow cannot "
            "park without answering its parent's webhook",
            hint="drop --via-subworkflow, or --no-park",
        )
    if lock and guard and lock.via_subworkflow:
        raise configs.WrapError(
            "a duplicate guard composes with the inline lock, not with --via-subworkflow",
            hint="drop --via-subworkflow, or take the guard off "
            f"(`n8nlock unwrap --workflow-key {key} --only dedupe`)",
        )


def wrap(
    body: Workflow,
    key: str,
    lock: LockConfig | None,
    rate: Rates,
    guard: LockConfig | None = None,
    *,
    own_cleanup: bool = False,
    respond_by_node: bool = False,
) -> Workflow:
    """The body with the duplicate guard, rate limit and lock nodes in front of it (a new
    dict); each is optional. `own_cleanup`: the workflow's own error workflow runs the
    cleanup, and stays. `respond_by_node`: a "last node" webhook is answered by Lock Respond
    instead (`respond.py`; what a wrap that parks its waiters needs).

    Every connected output of every trigger gets its own chain (a webhook with several HTTP
    methods has one output per method), and every chain shares one release.
    """
    workflow = copy.deepcopy(body)
    graph.normalise(workflow)
    rates = rate_limits(rate)
    if lock is None and guard is None and not rates:
        return workflow
    refusals.check_shape(workflow)
    _check_composition(key, lock, guard)
    entries = trigger_entries(workflow)
    replays = guard is not None and guard.on_busy == replay.REPLAY
    if replays:
        replay.check(workflow, [e.node for e in entries])
    ends = graph.terminal_outputs(workflow, dict.fromkeys(e.node for e in entries))
    shift = (configs.INLINE_RATE_SHIFT if rates else 0) + sum(
        c.shift for c in (lock, guard) if c is not None
    )
    graph.shift_body(workflow, shift)
    b = Builder(key, workflow, len(entries) == 1, 0)
    b.join_y = b.position(entries[0].node)[1]
    chains: dict[str, list[str]] = {step: [] for step in CHAINS}
    for entry in entries:
        main = workflow["connections"][entry.node]["main"]
        body_links = main[entry.output]
        main[entry.output] = []
        last, waits = _steps(b, (entry.node, entry.output), entry, lock, rates, guard, chains)
        chains["body"] += [str(link["node"]) for link in body_links]
        name = b.name(notes.RESTORE_NOTE, entry_label(workflow, entry))
        text = notes.restore(rates, lock, guard)
        b.framed.append(Block("frame-restore", name, text, [b.node(w) for w in waits]))
        nodekit.outputs(workflow["connections"], *last)[last[1]] = body_links
    if lock and lock.via_subworkflow:
        release_side.via_subworkflow(b, chains["lock"], chains["lock-restore"], ends)
    elif lock or guard:
        _release_inline(b, chains, ends, lock, rates, guard)
    if lock:
        _renewals(b, chains["lock"], lock)
    if lock or guard:
        needed_by = GUARD if guard else (LOCK_ON_ERROR if lock and lock.lock_on_error else "")
        order = set_execution_order(workflow)  # it makes the settings the handler goes into
        handler = set_error_workflow(workflow, needed_by, own_cleanup=own_cleanup)
        note_before(workflow, [*order, *handler])
    b.frames()
    respond_by_node = respond_by_node or (lock is not None and lock.park)
    return _answers(workflow, key, entries, guard if replays else None, chains, respond_by_node)


def _answers(
    workflow: Workflow,
    key: str,
    entries: list[Entry],
    replaying: LockConfig | None,
    chains: dict[str, list[str]],
    respond_by_node: bool,
) -> Workflow:
    """A parked waiter's "last node" webhook would be answered at the park (with the Wait's
    items), and a replaying guard stores what a Respond to Webhook node answered: Lock Respond
    answers it at the end instead, as "last node" would have."""
    if respond_by_node or replaying:
        fallbacks = [
            f
            for f, why in ((respond.KEEP_AWAKE, respond_by_node), (respond.KEEP_SKIP, replaying))
            if why
        ]
        fallback = " and ".join(fallbacks)
        for trigger in respond.last_node_webhooks(workflow, [e.node for e in entries]):
            workflow = respond.respond_by_node(workflow, trigger, key, fallback)
    if replaying:
        record = release_side.record(chains["guard"])
        replay.store_answers(workflow, key, record, replaying.max_answer_bytes)
    return workflow


def _steps(
    b: Builder,
    last: tuple[str, int],
    entry: Entry,
    lock: LockConfig | None,
    rates: tuple[RateLimitConfig, ...],
    guard: LockConfig | None,
    chains: dict[str, list[str]],
) -> tuple[tuple[str, int], list[str]]:
    """The steps in front of one entry's body, after `last`: the output that now leads into
    the body, and the nodes in the body's row that wait for a verdict."""
    waits: list[str] = []
    for step in STEPS:
        if step == "rate" and rates:
            last = (_rate_limit(b, last, entry, rates), 0)
            waits.append(last[0])
        elif step == "guard" and guard:
            decision, restore = acquire_inline(b, last, entry, guard)
            waits.append(restore)
            chains["guard"].append(decision)
            chains["guard-restore"].append(restore)
            last = (restore, 0)
        elif step == "lock" and lock:
            if lock.via_subworkflow:
                acquire, restore = _acquire(b, last, entry, lock)
                waits += [acquire, restore]
            else:
                acquire, restore = acquire_inline(b, last, entry, lock)
                waits.append(restore)
            chains["lock"].append(acquire)
            chains["lock-restore"].append(restore)
            last = (restore, 0)
    return last, waits


def _release_inline(
    b: Builder,
    chains: dict[str, list[str]],
    ends: list[tuple[str, int]],
    lock: LockConfig | None,
    rates: tuple[RateLimitConfig, ...],
    guard: LockConfig | None,
) -> None:
    """The release of what the execution holds: the lock (only when it took it, if a guard
    came first), then the guard (its done mark only when the body ran)."""
    held: list[release_side.Held] = []
    if lock:
        renewals = [f"Lock Renew ({target})" for target in lock.renew_before]
        record = release_side.record(chains["lock"], renewals)
        # Not "Lock Restore ran": n8n runs a Merge that lacks an input at the end of the
        # execution (with no output), so it has run after a skip too.
        when = f"{release_side.record(chains['lock'])}.state === 'enter'" if guard else None
        held.append(release_side.Held(Names(), record, when, parks=lock.park))
    quiet: list[tuple[str, int]] = []
    if guard:
        record = release_side.record(chains["guard"])
        if lock or rates:  # steps between the guard and the body: did the body begin?
            record = release_side.unless_body_ran(record, release_side.executed(chains["body"]))
            quiet = [
                (str(n["name"]), 0) for n in graph.nodes(b.workflow) if role_of(n) in QUIET_ENDS
            ]
        held.append(release_side.Held(Names(kind="Dedupe"), record))
    restores = chains["guard-restore"] if guard else chains["lock-restore"]
    text = notes.release(b.key, lock is not None, guard)
    release_side.inline(b, held, restores, ends, quiet, text)
