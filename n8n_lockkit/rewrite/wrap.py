"""Wrap a workflow's body in a rate limit and/or a lock (`unwrap.py` takes it off again).

`wrap(body, …)` is a pure function of the unwrapped workflow and the two configs, and
`unwrap` recovers both from a wrapped workflow, so re-running a command with the same flags
gives the same bytes and different flags update the nodes in place.

Shape, per entry T (rate limit first: it is cheap and must not queue on the lock):

    T → Rate Limit → Rate Limit Allowed? ─true→ Rate Limit Restore Items ─┬→ Lock Context → …
                                        └false→ Rate Limit Denied          │   (the engine's
                                                                           │   acquire chain,
        Lock Restore (Merge: input 1 = those items, input 2 = Lock Hold) ←─┘   drawn above)
        → (the body, as before)
    every end of the body, and each Lock Restore → Lock Join → Lock Release Once?
        → Lock Release Verdict → … → Lock Release → Lock Output

The acquire and release chains come from `primitives/engine.py` (the inline form, the
default). With `via_subworkflow`, Lock Acquire / Lock Release call the primitives instead,
and Lock Restore Items (a Code node) gives the body the trigger's items again.

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
from n8n_lockkit.rewrite import configs, graph, notes, shape
from n8n_lockkit.rewrite.builder import (
    INPUT_1_ONCE_ALL_ARRIVED,
    STEP,
    Block,
    Builder,
    entry_label,
    frame_release,
    join_once,
    joins,
    trigger_entries,
)
from n8n_lockkit.rewrite.configs import ALGORITHMS as ALGORITHMS
from n8n_lockkit.rewrite.configs import CONFIG_MARK
from n8n_lockkit.rewrite.configs import INLINE_LOCK_SHIFT as INLINE_LOCK_SHIFT
from n8n_lockkit.rewrite.configs import LOCK_SHIFT as LOCK_SHIFT
from n8n_lockkit.rewrite.configs import ON_DENIED as ON_DENIED
from n8n_lockkit.rewrite.configs import LockConfig as LockConfig
from n8n_lockkit.rewrite.configs import RateLimitConfig as RateLimitConfig
from n8n_lockkit.rewrite.configs import Rates as Rates
from n8n_lockkit.rewrite.configs import WrapError as WrapError
from n8n_lockkit.rewrite.graph import Entry, Workflow
from n8n_lockkit.rewrite.wrap_nodes import (
    acquired,
    call,
    if_parameters,
    js_literal,
    output_code,
    owned,
    restore_items,
    role_of,
)
from n8n_lockkit.rewrite.wrap_settings import HANDLER_ID as HANDLER_ID
from n8n_lockkit.rewrite.wrap_settings import (
    note_before,
    set_error_workflow,
    set_execution_order,
)

EXECUTE = "n8n-nodes-base.executeWorkflow"
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
    names = nodekit.Names("" if b.single_entry else label)
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


def _acquire_inline(
    b: Builder, after: tuple[str, int], entry: Entry, config: LockConfig
) -> tuple[str, str]:
    """The engine's acquire chain (stacked above the body), and Lock Restore: a Merge
    that waits for the lock and hands the body the items of `after` (the trigger's, binary
    data included), as n8n's Merge "choose branch" passes input 1 through untouched.

    Returns the names of the chain's decision node (its record names the held lock) and of
    Lock Restore."""
    x, y = b.position(after[0])
    trigger = entry_label(b.workflow, entry)
    label = "" if b.single_entry else trigger
    inputs = engine.LockInputs(
        scope=config.scope,
        ttl_seconds=config.ttl_seconds,
        max_wait_seconds=config.max_wait_seconds,
        on_busy=config.on_busy,
        slots=config.max_concurrent,
        dedupe_window=config.dedupe_window_seconds,
        dedupe_key=config.dedupe_key,
    )
    skips = config.on_busy in overlap.SKIPPING
    names = nodekit.Names(label)
    group = engine.acquire(b.key, inputs, (x + STEP, 0), names, skips=skips)
    if skips and _responds_by_node(b.workflow, entry):
        _respond_skipped(b.key, group, names)
    name = b.name(notes.LOCK_NOTE, trigger)
    b.stack(Block("frame-lock", name, notes.lock(b.key, config), b.add_group(group)))
    context = b.node(group.entry)
    context["notes"] += CONFIG_MARK + json.dumps(_config_note(config), sort_keys=True)
    restore = b.add(
        owned(
            b.key,
            "lock-restore",
            b.name("Lock Restore", trigger),
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
    return nodekit.Names(label)("Lock Decide"), restore


def _responds_by_node(workflow: Workflow, entry: Entry) -> bool:
    """Whether the entry is a webhook that answers with a Respond to Webhook node."""
    trigger = next(n for n in graph.nodes(workflow) if n["name"] == entry.node)
    parameters = graph.as_dict(trigger.get("parameters"))
    return parameters.get("responseMode") == "responseNode"


def _respond_skipped(key: str, group: nodekit.Group, names: nodekit.Names) -> None:
    """A skipped caller of a webhook that answers with a Respond to Webhook node gets the
    skipped answer from one of ours (the body's own never runs)."""
    ((answer, _),) = group.exits["skipped"]
    x, y = next(n["position"] for n in group.nodes if n["name"] == answer)
    respond = group.add(
        nodekit.node(
            key, "lock-skipped-response", names("Lock Skipped Response"),
            "n8n-nodes-base.respondToWebhook", 1.1, [x + engine.STEP, y],
            {"respondWith": "firstIncomingItem", "options": {}},
        )
    )  # fmt: skip
    group.connect(answer, 0, respond)


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
    }


def _release_inline(
    b: Builder,
    decisions: list[str],
    restores: list[str],
    terminals: list[tuple[str, int]],
    renewals: list[str],
) -> None:
    join, once = join_once(b, restores, terminals, engine.RELEASE_ENTRY)
    x, y = b.position(once)
    group = engine.release(b.key, _held(decisions, renewals), (x + engine.STEP, y))
    b.add_group(group)
    right = max(node["position"][0] for node in group.nodes) + engine.STEP
    ends = list(dict.fromkeys(terminals))
    if len(ends) == 1:
        # One end: a Merge answers with its items (input 1), once the release has run (input
        # 2); it costs no task runner, unlike the Code node that picks among several ends.
        output = b.add(
            owned(b.key, "lock-output", "Lock Output", "n8n-nodes-base.merge", 3, [right, y],
                  dict(INPUT_1_ONCE_ALL_ARRIVED)),
            placed=True,
        )  # fmt: skip
        b.connect(*ends[0], output, 0)
        released = 1
    else:
        output = b.add(
            owned(b.key, "lock-output", "Lock Output", "n8n-nodes-base.code", 2, [right, y],
                  output_code(terminals)),
            placed=True,
        )  # fmt: skip
        released = 0
    b.connect(join, 0, once)
    b.connect(once, 0, group.entry)
    b.connect(once, 1, output, released)
    for source, index in group.exits["done"]:
        b.connect(source, index, output, released)
    frame_release(b, [*joins(b), once, *(str(n["name"]) for n in group.nodes), output])


def _held(decisions: list[str], renewals: list[str]) -> str:
    """A JS expression of the held lock's record: the decision of the chain that ran, with
    the expiry of its last renewal (the release margin counts from that)."""
    if len(decisions) == 1:
        decision = f"$({js_literal(decisions[0])}).first().json"
    else:
        names = js_literal(decisions)
        decision = f"{names}.map((n) => $(n)).find((n) => n.isExecuted).first().json"
    if not renewals:
        return decision
    renewed = (
        f"{js_literal(renewals)}.map((n) => $(n)).filter((n) => n.isExecuted)"
        ".map((n) => n.first().json).filter((r) => r.renewed).map((r) => Date.parse(r.expires_at))"
    )
    return f"((d) => ({{ ...d, expires_ms: Math.max(d.expires_ms, ...{renewed}) }}))({decision})"


def _release(
    b: Builder, acquires: list[str], restores: list[str], terminals: list[tuple[str, int]]
) -> None:
    join, once = join_once(b, restores, terminals, "Lock Release")
    x, y = b.position(join)
    release = b.add(
        owned(
            b.key,
            "lock-release",
            "Lock Release",
            "n8n-nodes-base.executeWorkflow",
            1.2,
            [x + 2 * engine.STEP, y],
            call(
                "lock_release",
                {
                    "scope": acquired(acquires, "scope"),
                    "lock_id": acquired(acquires, "lock_id"),
                    "ticket": acquired(acquires, "ticket"),
                    "max_concurrent": acquired(acquires, "slots"),
                },
            ),
        )
    )
    output = b.add(
        owned(
            b.key,
            "lock-output",
            "Lock Output",
            "n8n-nodes-base.code",
            2,
            [x + 3 * engine.STEP, y],
            output_code(terminals),
        )
    )
    b.connect(join, 0, once)
    b.connect(once, 0, release)
    b.connect(once, 1, output)
    b.connect(release, 0, output)
    frame_release(b, [*joins(b), once, release, output])


def _renewals(b: Builder, acquires: list[str], config: LockConfig) -> None:
    """Before each named body node, a side branch that renews the lock, or stops the execution
    when the lock is no longer its own. Under n8n's v1 order a node's targets run top to
    bottom, each branch to its end, so the branch runs first: it is stacked above the body,
    in a note of its own."""
    for target in config.renew_before:
        node = next((n for n in graph.nodes(b.workflow) if n["name"] == target), None)
        if node is None or graph.is_trigger(node) or role_of(node):
            known = ", ".join(repr(n["name"]) for n in graph.nodes(b.workflow) if not role_of(n))
            raise WrapError(
                f"--renew-before {target!r}: the workflow has no such body node",
                hint=f"name a node of the body (nodes: {known})",
            )
        feeding = [
            (source, output)
            for source in list(b.workflow["connections"])
            for output, links in enumerate(graph.outputs(b.workflow, source))
            if any(x["node"] == target for x in links)
        ]
        x = b.position(target)[0]
        spot = [x, 0]  # moved up with its note by b.stack
        values = {
            "scope": acquired(acquires, "scope"),
            "lock_id": acquired(acquires, "lock_id"),
            "ttl_seconds": config.ttl_seconds,
            "ticket": acquired(acquires, "ticket"),
            "max_concurrent": acquired(acquires, "slots"),
        }
        renew = b.add(
            owned(
                b.key,
                "lock-renew",
                f"Lock Renew ({target})",
                EXECUTE,
                1.2,
                spot,
                call("lock_renew", values),
            ),
            placed=True,
        )
        check = b.add(
            owned(
                b.key,
                "lock-renewed",
                f"Lock Renewed? ({target})",
                "n8n-nodes-base.if",
                2.2,
                [spot[0] + STEP, spot[1]],
                if_parameters(b.key, "$json.renewed === true"),
            ),
            placed=True,
        )
        lost = b.add(
            owned(
                b.key,
                "lock-lost",
                f"Lock Lost ({target})",
                "n8n-nodes-base.stopAndError",
                1,
                [spot[0] + 2 * STEP, spot[1]],
                {"errorType": "errorMessage", "errorMessage": f"={LOST.format(target=target)}"},
            ),
            placed=True,
        )
        name = notes.RENEW_NOTE.format(target=target)
        text = notes.renew(b.key, target, config)
        b.stack(Block("frame-renew", name, text, [b.node(n) for n in (renew, check, lost)]))
        for source, output in feeding:
            b.connect(source, output, renew)
        b.connect(renew, 0, check)
        b.connect(check, 1, lost)


def wrap(body: Workflow, key: str, lock: LockConfig | None, rate: Rates) -> Workflow:
    """The body with the rate limit and lock nodes around it (a new dict).

    Every connected output of every trigger gets its own chain (a webhook with several HTTP
    methods has one output per method), and every chain shares one release.
    """
    workflow = copy.deepcopy(body)
    graph.normalise(workflow)
    rates = rate_limits(rate)
    if lock is None and not rates:
        return workflow
    shape.check_shape(workflow)
    if lock and lock.via_subworkflow and lock.on_busy in overlap.SKIPPING:
        raise configs.WrapError(
            f"--on-busy {lock.on_busy} needs the inline lock",
            hint="drop --via-subworkflow (direct callers pass on_busy to lock_acquisition)",
        )
    entries = trigger_entries(workflow)
    ends = graph.terminal_outputs(workflow, dict.fromkeys(e.node for e in entries))
    graph.shift_body(
        workflow, (configs.INLINE_RATE_SHIFT if rates else 0) + (lock.shift if lock else 0)
    )
    b = Builder(key, workflow, len(entries) == 1, 0)
    b.join_y = b.position(entries[0].node)[1]
    acquires, restores = [], []
    for entry in entries:
        main = workflow["connections"][entry.node]["main"]
        body_links = main[entry.output]
        main[entry.output] = []
        waits: list[str] = []  # the nodes in the body's row that wait for a verdict
        last = (entry.node, entry.output)
        # A rate limit goes before a lock (a denied call never queues for the lock), and after
        # a duplicate guard (a duplicate spends no rate budget).
        for step in ("lock", "rate") if lock and lock.dedupe else ("rate", "lock"):
            if step == "rate" and rates:
                last = (_rate_limit(b, last, entry, rates), 0)
                waits.append(last[0])
            elif step == "lock" and lock:
                if lock.via_subworkflow:
                    acquire, restore = _acquire(b, last, entry, lock)
                    waits += [acquire, restore]
                else:
                    acquire, restore = _acquire_inline(b, last, entry, lock)
                    waits.append(restore)
                acquires.append(acquire)
                restores.append(restore)
                last = (restore, 0)
        name = b.name(notes.RESTORE_NOTE, entry_label(workflow, entry))
        text = notes.restore(rates, lock)
        b.framed.append(Block("frame-restore", name, text, [b.node(w) for w in waits]))
        workflow["connections"].setdefault(last[0], {}).setdefault("main", [])
        _set_output(workflow["connections"][last[0]]["main"], last[1], body_links)
    if lock:
        if lock.via_subworkflow:
            _release(b, acquires, restores, ends)
        else:
            renewals = [f"Lock Renew ({target})" for target in lock.renew_before]
            _release_inline(b, acquires, restores, ends, renewals)
        _renewals(b, acquires, lock)
        note_before(
            workflow,
            [*set_execution_order(workflow), *set_error_workflow(workflow, lock.lock_on_error)],
        )
    b.frames()
    return workflow


def _set_output(
    main: list[list[dict[str, object]]], output: int, links: list[dict[str, object]]
) -> None:
    while len(main) <= output:
        main.append([])
    main[output] = links
