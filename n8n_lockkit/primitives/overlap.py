"""Overlap policies: what a caller of the lock does when its scope is busy (`on_busy`).

- `wait` (the default): it waits for its turn, in arrival order, up to its max wait.
- `error` (`--fail-fast`, `wait_till_lock_released: false`): the execution fails at once.
- `skip`: it ends at once with a skipped answer (`{skipped: true, reason: 'busy', …}`).
- `buffer-one`: it waits when no other caller waits in its lane, else it is skipped: "run once
  more after the current run".

`decide.js` decides; a chain whose policy may skip gets the nodes below after Lock Route (its
`skipped` output): Lock Skip Leave (the ticket's `gone` mark, holding the time it left) → Lock
Count Skip → Lock Skipped (the answer, exit `skipped`).
"""

from __future__ import annotations

from n8n_lockkit.primitives import keys
from n8n_lockkit.primitives.nodekit import (
    CELL,
    Group,
    Names,
    redis,
    ref,
    set_raw,
)

ON_BUSY = ("wait", "error", "skip", "buffer-one")
SKIPPING = ("skip", "buffer-one")
# How many tickets between the head and its own a buffer-one caller reads: more than this many
# callers arriving within one hold (each skipped) make the next one skip too.
BUFFER_WINDOW = 32
# How many tickets a skip caller reads, from the one before the head: the head (does it hold?)
# and the first callers after it, whose marks are the oldest (is the head dead?). Every GET is
# a round trip of Lock Read Line, the slowest node on the skip path in a burst (bench).
SKIP_WINDOW = 4
# The skip nodes' cells in the acquire block's grid (engine.ACQUIRE_CELLS): a row of their own
# below the slow paths, under Lock Route's other outputs; the inline form may add a Respond to
# Webhook node at its end.
CELLS: dict[str, tuple[int, int]] = {
    "lock-skip-leave": (5, 3), "lock-count-skip": (6, 3), "lock-skipped": (7, 3),
    "lock-skipped-response": (8, 3),
}  # fmt: skip


def skipped_exit(g: Group, key: str, names: Names, route: tuple[str, int], decide: str) -> None:
    """A skip (`route`: Lock Route's output for `skipped`) leaves the line (its `gone` mark,
    holding when it left) and is counted, then answers (exit `skipped`). Three nodes after the
    decision, so that a skipped caller answers at once."""
    leave, count, answer = (
        names("Lock Skip Leave"), names("Lock Count Skip"), names("Lock Skipped"),
    )  # fmt: skip
    decision = f"{ref(decide)}.first().json"
    mark = {
        "operation": "set",
        "key": "={{ $json.gone.key }}",
        "value": "={{ $json.gone.at }}",
        "keyType": "string",
        "expire": True,
        "ttl": "={{ $json.gone.ttl }}",
    }
    g.add(redis(key, "lock-skip-leave", leave, CELL, mark, True))
    counter = {
        "operation": "incr",
        "key": f"={{{{ {decision}.incr[0].key }}}}",
        "expire": True,
        "ttl": str(keys.STATS_TTL_SECONDS),
    }
    g.add(redis(key, "lock-count-skip", count, CELL, counter, True))
    g.add(set_raw(key, "lock-skipped", answer, CELL, f"={{{{ {decision}.answer }}}}"))
    g.connect(*route, leave)
    g.chain(leave, count, answer)
    g.exits["skipped"] = [(answer, 0)]
