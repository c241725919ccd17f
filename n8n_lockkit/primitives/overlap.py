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
from n8n_lockkit.primitives.chain import Chain, Row, chained
from n8n_lockkit.primitives.nodekit import redis, set_raw

ON_BUSY = ("wait", "error", "skip", "buffer-one")
SKIPPING = ("skip", "buffer-one")
# How many tickets between the head and its own a buffer-one caller reads: more than this many
# callers arriving within one hold (each skipped) make the next one skip too.
BUFFER_WINDOW = 32
# How many tickets a skip caller reads, from the one before the head: the head (does it hold?)
# and the first callers after it, whose marks are the oldest (is the head dead?). Every GET is
# a round trip of Lock Read Line, the slowest node on the skip path in a burst (bench).
SKIP_WINDOW = 4
# The skip nodes sit in a row of their own below the acquire block's slow paths, under Lock
# Route's other outputs; the inline form may add a Respond to Webhook node at its end.
SKIPPED_RESPONSE_CELL = (8, 3)


def skipped_exit(c: Chain, route: tuple[str, int], decision: str) -> None:
    """A skip (`route`: Lock Route's output for `skipped`) leaves the line (its `gone` mark,
    holding when it left) and is counted, then answers (exit `skipped`). Three nodes after the
    decision (`decision`: its JavaScript), so that a skipped caller answers at once."""
    mark = {
        "operation": "set",
        "key": "={{ $json.gone.key }}",
        "value": "={{ $json.gone.at }}",
        "keyType": "string",
        "expire": True,
        "ttl": "={{ $json.gone.ttl }}",
    }
    counter = {
        "operation": "incr",
        "key": f"={{{{ {decision}.incr[0].key }}}}",
        "expire": True,
        "ttl": str(keys.STATS_TTL_SECONDS),
    }
    c.rows(
        [
            Row("lock-skip-leave", "Lock Skip Leave", redis(mark, True), (5, 3)),
            Row("lock-count-skip", "Lock Count Skip", redis(counter, True), (6, 3)),
            Row("lock-skipped", "Lock Skipped", set_raw(f"={{{{ {decision}.answer }}}}"), (7, 3)),
        ]
    )
    c.link(
        [
            (*route, "Lock Skip Leave"),
            *chained("Lock Skip Leave", "Lock Count Skip", "Lock Skipped"),
        ]
    )
    c.exit("skipped", ("Lock Skipped", 0))
