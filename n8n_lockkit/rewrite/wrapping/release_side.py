"""The release side of a wrapped workflow: Lock Join → Lock Release Once? → the release chains
→ Lock Output (`wrap.py` builds the acquire side).

A workflow holds at most two of the engine's locks: a duplicate guard's (the "Dedupe" chain,
taken first) and the lock's. They are released innermost first: the lock (when its execution
took it: Lock Held?), then the guard. The guard writes its done mark only when the body ran;
an execution that a later step turned away without the body (a rate limit's denial, a lock's
skip) frees its key without using it up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from n8n_lockkit.primitives import engine, nodekit
from n8n_lockkit.primitives.chain import Names
from n8n_lockkit.rewrite.wrapping.builder import (
    INPUT_1_ONCE_ALL_ARRIVED,
    Builder,
    frame_release,
    join_once,
    joins,
)
from n8n_lockkit.rewrite.wrapping.nodes import (
    acquired,
    call,
    js_literal,
    output_code,
    owned,
)


@dataclass(frozen=True)
class Held:
    """One lock the release frees: its chain's names, and a JS expression of its record."""

    names: Names
    record: str
    # A JS condition under which the execution holds it (None: whenever the release runs).
    when: str | None = None
    # Its waiters park: the release wakes the one two behind it (engine.release(parks=True)).
    parks: bool = False


def executed(names: list[str]) -> str:
    """A JS condition: one of the nodes `names` ran in this execution."""
    if len(names) == 1:
        return f"$({js_literal(names[0])}).isExecuted"
    return f"{js_literal(names)}.some((n) => $(n).isExecuted)"


def record(decisions: list[str], renewals: Sequence[str] = ()) -> str:
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
        f"{js_literal(list(renewals))}.map((n) => $(n)).filter((n) => n.isExecuted)"
        ".map((n) => n.first().json).filter((r) => r.renewed).map((r) => Date.parse(r.expires_at))"
    )
    return f"((d) => ({{ ...d, expires_ms: Math.max(d.expires_ms, ...{renewed}) }}))({decision})"


def unless_body_ran(guard: str, body_ran: str) -> str:
    """A guard's record whose done mark is dropped when the body did not run."""
    return f"((d) => ({body_ran}) ? d : {{ ...d, dedupe: null }})({guard})"


def inline(
    b: Builder,
    held: list[Held],
    restores: list[str],
    terminals: list[tuple[str, int]],
    quiet_ends: list[tuple[str, int]],
    text: str | None = None,
) -> None:
    """The inline release: each of `held` in turn (innermost first), then Lock Output.

    `restores` feed Lock Join (which runs once every end of the body that runs has run);
    `quiet_ends` are where an execution that holds a guard ends without the body: they lead
    to Lock Release Once? themselves, and Lock Output answers with them too."""
    outermost = held[-1].names
    join, once = join_once(b, restores, terminals, outermost(engine.RELEASE_ENTRY))
    x, y = b.position(once)
    added = [*joins(b), once]
    links: list[tuple[tuple[str, int], str]] = []  # made once every node is in
    feeding: list[tuple[str, int]] = [(once, 0)]
    for lock in held:
        passing: list[tuple[str, int]] = []
        if lock.when is not None:
            x += engine.STEP
            held_test = nodekit.Kind("n8n-nodes-base.if", 2.2, condition=lock.when)
            role, name = lock.names.role("lock-held"), lock.names("Lock Held?")
            test = b.add(held_test.node(b.key, role, name, [x, y]), placed=True)
            links += [(source, test) for source in feeding]
            feeding, passing = [(test, 0)], [(test, 1)]
            added.append(test)
        group = engine.release(b.key, lock.record, (x + engine.STEP, y), lock.names, lock.parks)
        b.add_group(group)
        links += [(source, group.entry) for source in feeding]
        feeding = [*group.exits["done"], *passing]
        added += [str(n["name"]) for n in group.nodes]
        x = max(int(n["position"][0]) for n in group.nodes)
    right = x + engine.STEP
    ends = list(dict.fromkeys([*quiet_ends, *terminals]))
    if len(ends) == 1:
        # One end: a Merge answers with its items (input 1), once the release has run (input
        # 2); it costs no task runner, unlike the Code node that picks among several ends.
        merge = nodekit.Kind("n8n-nodes-base.merge", 3, INPUT_1_ONCE_ALL_ARRIVED)
        output = b.add(merge.node(b.key, "lock-output", "Lock Output", [right, y]), placed=True)
        b.connect(*ends[0], output, 0)
        released = 1
    else:
        pick = nodekit.Kind("n8n-nodes-base.code", 2, output_code(ends))
        output = b.add(pick.node(b.key, "lock-output", "Lock Output", [right, y]), placed=True)
        released = 0
    b.connect(join, 0, once)
    # n8n does not run Lock Join for an execution that never reached the body (a Merge that
    # lacks inputs runs at the end only when their nodes ran), so these lead to the release.
    for source, index in quiet_ends:
        b.connect(source, index, once)
    (first, target), *rest = links
    b.connect(*first, target)
    b.connect(once, 1, output, released)
    for (source, index), target in rest:
        b.connect(source, index, target)
    for source, index in feeding:
        b.connect(source, index, output, released)
    frame_release(b, [*added, output], text)


def via_subworkflow(
    b: Builder, acquires: list[str], restores: list[str], terminals: list[tuple[str, int]]
) -> None:
    """The release of the sub-workflow form: Lock Release calls the lock_release primitive."""
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
