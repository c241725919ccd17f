"""The lock engine as n8n nodes: one builder for the inline form and the sub-workflow primitives.

Engine v2 is a ticket lock with N lanes (N = 1: a mutex). Keys, per scope (`keys.py`):

    n8n-lock-<scope>:ticket      INCR per arrival; the ticket is also the fence
    n8n-lock-<scope>:served:<k>  the last ticket that left lane k (SET; the lane's head is +N)
    n8n-lock-<scope>:holder:<t>  ticket t's record once it entered (JSON, the lock's TTL)
    n8n-lock-<scope>:meta:<k>    a copy of lane k's holder record (operators, format 2)
    n8n-lock-<scope>:gone:<t>    ticket t gave up or was skipped
    n8n-lock-<scope>:hold_ms     average hold time, to sleep until one's turn

    n8n-lock-<scope>:fast        a mutex's fast path: the last ticket out, read by the ticket's INCR

Uncontended, a mutex costs three Redis node executions (ticket, hold, release: the ticket's
INCR node tells an arrival that it is next, so it skips the read) and no Code node: the
decisions are Set node expressions, which n8n evaluates without a task runner. A semaphore,
a scope's first arrival and every waiter read the line (a fourth), and a caller that writes
its record later than SAFE_ENTRY_MS after drawing its ticket reads its `gone` mark (one more:
it may have been skipped meanwhile; `verify.js`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from n8n_lockkit.primitives import keys, overlap
from n8n_lockkit.primitives.nodekit import (
    _NODE_IDS,
    CELL,
    GET_EACH,
    INCR_EACH,
    RETRY,
    SET_EACH,
    SET_EXPIRING_EACH,
    UNLABELLED,
    Group,
    Names,
    if_node,
    js_literal,
    node,
    redis,
    ref,
    script_call,
    script_expression,
    set_raw,
    split_out,
    switch_node,
    value_js,
)

STEP = 180  # the engine's grid: node boxes are 100 x 100, their labels sit below them
ROW = 150
# Where each node of a chain sits, by role: (column, row) in its block's grid. Row 0 is the
# path an uncontended call takes, left to right; the slow paths (reading the line, waiting,
# skipping a dead head, giving up, withdrawing) fold into the rows below. Lock Route is drawn
# about two rows tall (n8n: 32 px per output beyond two), so the cell under it stays empty.
# `Group.place` turns cells into canvas positions.
ACQUIRE_CELLS: dict[str, tuple[int, int]] = {
    "lock-context": (0, 0), "lock-input-valid": (1, 0), "lock-ticket-items": (2, 0),
    "lock-take-ticket": (3, 0), "lock-decide": (4, 0), "lock-route": (5, 0),
    "lock-hold-items": (6, 0), "lock-hold": (7, 0), "lock-verify": (8, 0),
    "lock-input-refused": (1, 1), "lock-give-up-items": (2, 1), "lock-count-give-up": (3, 1),
    "lock-refused": (4, 1), "lock-read-items": (6, 1), "lock-read": (7, 1),
    "lock-check-skipped": (8, 1),
    "lock-was-skipped": (0, 2), "lock-withdraw": (1, 2), "lock-withdraw-items": (2, 2),
    "lock-withdrawn": (3, 2), "lock-redraw": (4, 2),
    "lock-sleep": (6, 2), "lock-skip-items": (7, 2), "lock-skip": (8, 2),
}  # fmt: skip
RELEASE_CELLS: dict[str, tuple[int, int]] = {
    "lock-release-verdict": (0, 0), "lock-release-items": (1, 0), "lock-release": (2, 0),
    "lock-waited": (3, 0),
    "lock-wait-stats": (1, 1), "lock-wait-stats-items": (2, 1), "lock-count-wait": (3, 1),
}  # fmt: skip
MIN_POLL_MS = 10
MAX_POLL_MS = 1000  # the longest pause between looks once one's turn is due
DEFAULT_HOLD_MS = 250
RELEASE_ENTRY = "Lock Release Verdict"  # the release chain's first node
HANDOFF_MS = 55  # a place in line beyond its hold: release chain + handoff gap (bench.lock_bench)
FAR_SLEEP_SHARE = 1.0  # a waiter not next in line sleeps this share of its expected wait
# The next in line wakes this long after the holder's expected release: the release's SET node
# writes `served` about 10 ms after it starts (bench.lock_bench; 5 ms missed it by one look).
WAKE_LATE_MS = 15
# A head that has neither entered nor left a marker for this long is skipped. A live waiter
# looks at least every MAX_POLL_MS and enters within one look, so this is several looks.
SKIP_GRACE_MS = keys.SKIP_GRACE_SECONDS * 1000
MAX_SLEEP_MS = SKIP_GRACE_MS // 2  # the longest sleep before one's expected turn
# How many tickets' records (and marks) a look reads, from the one before the lane's head as
# last seen: enough that the look after a sleep still finds the head (bench.lock_bench: reading
# three, most waiters needed a second look after a sleep).
LOOK_WINDOW = 6
# Lock Route's outputs, by the decisions (decide.js `state`) each takes; a chain whose policy
# may skip adds `skipped` next, and the last output gives up (busy, timeout, duplicate).
_ROUTES: tuple[tuple[str, ...], ...] = (("enter",), ("read",), ("wait",), ("skip",), ("requeue",))
_ENTER, _READ, _WAIT, _SKIP, _REQUEUE = range(len(_ROUTES))


@dataclass(frozen=True)
class LockInputs:
    """Where each input of a lock comes from: n8n parameter values (a literal, or an
    expression `={{ … }}`, possibly inside text) evaluated on the first lock node."""

    scope: str
    ttl_seconds: Any = None
    max_wait_seconds: Any = None
    wait: Any = True
    on_busy: Any = None  # wait | error | skip | buffer-one; None: from `wait` (wait or error)
    dedupe_window: Any = None  # a duplicate guard: how long a success turns its key away
    dedupe_key: Any = None  # the key as the guard's answers name it
    slots: Any = 1
    execution_id: Any = "={{ $execution.id }}"
    workflow_id: Any = "={{ $workflow.id }}"
    workflow_name: Any = "={{ $workflow.name }}"
    lock_id: Any = None


@dataclass(frozen=True)
class EngineOptions:
    default_ttl_seconds: int = 86400
    default_max_wait_seconds: int = 86400


def _input_js(inputs: LockInputs) -> str:
    fields = {
        "scope": inputs.scope,
        "ttl_seconds": inputs.ttl_seconds,
        "max_wait_seconds": inputs.max_wait_seconds,
        "wait": inputs.wait,
        "on_busy": inputs.on_busy,
        "slots": inputs.slots,
        "execution_id": inputs.execution_id,
        "workflow_id": inputs.workflow_id,
        "workflow_name": inputs.workflow_name,
        "lock_id": inputs.lock_id,
    }
    if inputs.dedupe_window is not None:  # only a duplicate guard names them
        fields |= {"dedupe_window": inputs.dedupe_window, "dedupe_key": inputs.dedupe_key}
    pairs = ", ".join(f"{name}: {value_js(value)}" for name, value in fields.items())
    return f"const input = {{ {pairs} }};"


def acquire(
    key: str,
    inputs: LockInputs,
    origin: tuple[int, int],
    names: Names = UNLABELLED,
    options: EngineOptions = EngineOptions(),
    skips: bool = False,
) -> Group:
    """The acquire chain. `entry` takes the caller's items (the first one is read); the exit
    `held` gives the held lock's record (one item per SET), a refusal stops the execution.

    With `skips` (a policy that may skip: skip, buffer-one, or one known only at run time) the
    exit `skipped` gives one item, the skipped answer {skipped, reason, scope, on_busy,
    holder_execution_id}."""
    g = Group()
    n = names
    context, ticket_items, take_ticket = (
        n("Lock Context"),
        n("Lock Ticket Items"),
        n("Lock Take Ticket"),
    )
    read_items, read = n("Lock Read Items"), n("Lock Read Line")
    decide, route = n("Lock Decide"), n("Lock Route")
    hold_items, hold = n("Lock Hold Items"), n("Lock Hold")
    sleep = n("Lock Sleep")
    skip_items, skip = n("Lock Skip Items"), n("Lock Skip Head")
    verify, check, skipped = n("Lock Verify"), n("Lock Check Skipped"), n("Lock Was Skipped?")
    withdraw, withdraw_items, withdrawn = (
        n("Lock Withdraw"), n("Lock Withdraw Items"), n("Lock Withdrawn")
    )  # fmt: skip
    leave_items, count_leave, refused = (
        n("Lock Give-Up Items"), n("Lock Count Give-Up"), n("Lock Refused")
    )  # fmt: skip
    common = {
        "__CONTEXT__": f"{ref(context)}.first().json",
        "__STATS_TTL__": str(keys.STATS_TTL_SECONDS),
    }
    context_script = script_expression(
        "engine/lock/context",
        {
            **common,
            "__INPUT__": _input_js(inputs),
            "__DEFAULT_TTL__": str(options.default_ttl_seconds),
            "__DEFAULT_MAX_WAIT__": str(options.default_max_wait_seconds),
            "__GONE_MIN_TTL__": str(keys.GONE_MIN_TTL_SECONDS),
            "__DONE_PREFIX__": keys.DONE_PREFIX,
        },
    )
    g.entry = g.add(set_raw(key, "lock-context", context, CELL, context_script))
    valid, invalid = n("Lock Input Valid?"), n("Lock Input Refused")
    g.add(if_node(key, "lock-input-valid", valid, CELL, "$json.problem === null"))
    g.add(
        node(
            key, "lock-input-refused", invalid, "n8n-nodes-base.stopAndError", 1,
            CELL,
            {"errorType": "errorMessage", "errorMessage": "={{ $json.problem }}"},
        )
    )  # fmt: skip
    g.connect(context, 0, valid)
    g.connect(valid, 1, invalid)
    g.add(split_out(key, "lock-ticket-items", ticket_items, CELL, "incr"))
    g.add(redis(key, "lock-take-ticket", take_ticket, CELL, INCR_EACH, False))
    waking = {
        "__FAST_SCALE__": str(keys.FAST_SCALE),
        "__HELD_MARK__": str(keys.HELD_MARK),
        "__HELD_WRAP_MS__": str(keys.HELD_WRAP_MS),
        "__MIN_POLL_MS__": str(MIN_POLL_MS),
        "__MAX_SLEEP_MS__": str(MAX_SLEEP_MS),
        "__LOOK_WINDOW__": str(LOOK_WINDOW),
        "__BUFFER_WINDOW__": str(overlap.BUFFER_WINDOW),
        "__SKIP_WINDOW__": str(overlap.SKIP_WINDOW),
        "__HANDOFF_MS__": str(HANDOFF_MS),
        "__FAR_SLEEP_SHARE__": str(FAR_SLEEP_SHARE),
        "__WAKE_LATE_MS__": str(WAKE_LATE_MS),
    }
    # Lock Decide's last decision, read from Lock Decide itself: n8n's `$()` gives a node's
    # last finished run, and the run in progress is not one yet.
    previous = {
        "__DECIDED__": f"{ref(decide)}.isExecuted",
        "__DECISION__": f"{ref(decide)}.first().json",
    }
    look_call = script_call(
        "engine/lock/read",
        {**common, **previous, "__DRAWN__": f"{ref(take_ticket)}.all()", **waking},
    )
    g.add(split_out(key, "lock-read-items", read_items, CELL, "read"))
    g.add(
        redis(
            key,
            "lock-read",
            read,
            CELL,
            GET_EACH,
            False,
        )
    )
    decide_script = script_expression(
        "engine/lock/decide",
        {
            **common,
            **previous,
            "__LOOK__": look_call,
            "__READ__": f"{ref(read)}.all()",
            "__DEFAULT_HOLD_MS__": str(DEFAULT_HOLD_MS),
            "__WAIT_BUCKETS__": js_literal(list(keys.WAIT_BUCKETS)),
            "__SKIP_GRACE_MS__": str(SKIP_GRACE_MS),
            "__MAX_POLL_MS__": str(MAX_POLL_MS),
            "__FORMAT__": str(keys.FORMAT),
            **waking,
        },
    )
    g.add(set_raw(key, "lock-decide", decide, CELL, decide_script))
    # One Switch sends each decision on: enter, read the line, sleep, skip a dead head, draw
    # again, (a policy that may skip: answer skipped,) else give up.
    routes = [*_ROUTES, *([("skipped",)] if skips else []), ()]
    g.add(switch_node(key, "lock-route", route, CELL, routes, len(routes) - 1))
    g.add(split_out(key, "lock-hold-items", hold_items, CELL, "set"))
    g.add(
        redis(
            key,
            "lock-hold",
            hold,
            CELL,
            SET_EXPIRING_EACH,
            False,
        )
    )
    g.connect(valid, 0, ticket_items)
    g.connect(ticket_items, 0, take_ticket)
    g.connect(take_ticket, 0, decide)
    g.connect(decide, 0, route)
    g.connect(route, _ENTER, hold_items)
    g.connect(route, _READ, read_items)
    g.connect(read_items, 0, read)
    g.connect(read, 0, decide)
    g.connect(hold_items, 0, hold)
    # Entered late? Read the ticket's mark; a skipped caller withdraws and draws again.
    decision = f"{ref(decide)}.first().json"
    verify_js = script_call(
        "engine/lock/verify",
        {"__DECISION__": decision, "__SAFE_ENTRY_MS__": str(keys.SAFE_ENTRY_MS)},
    )
    g.add(if_node(key, "lock-verify", verify, CELL, f"{verify_js}.check"))
    g.add(
        redis(
            key,
            "lock-check-skipped",
            check,
            CELL,
            {
                "operation": "get",
                "propertyName": "gone",
                "key": f"={{{{ {decision}.gone_key }}}}",
                "keyType": "string",
                "options": {"dotNotation": False},
            },
            True,
        )
    )
    g.add(if_node(key, "lock-was-skipped", skipped, CELL, "$json.gone !== null"))
    withdraw_script = script_expression(
        "engine/lock/withdraw",
        {"__DECISION__": decision, "__RELEASED_TTL__": str(keys.RELEASED_META_TTL_SECONDS)},
    )
    g.add(set_raw(key, "lock-withdraw", withdraw, CELL, withdraw_script))
    g.add(split_out(key, "lock-withdraw-items", withdraw_items, CELL, "set"))
    g.add(redis(key, "lock-withdrawn", withdrawn, CELL, SET_EACH, False))
    g.chain(hold, verify, check, skipped, withdraw, withdraw_items, withdrawn)
    g.exits["held"] = [(verify, 1), (skipped, 1)]
    # Not entering: wait, skip a dead head, draw again, or give up.
    g.add(
        node(
            key,
            "lock-sleep",
            sleep,
            "n8n-nodes-base.wait",
            1.1,
            CELL,
            {"resume": "timeInterval", "amount": "={{ $json.sleep_seconds }}", "unit": "seconds"},
            webhookId=str(uuid.uuid5(_NODE_IDS, f"{key}:lock-sleep:{sleep}")),
            **RETRY,
        )
    )
    g.add(split_out(key, "lock-skip-items", skip_items, CELL, "skip"))
    g.add(redis(key, "lock-skip", skip, CELL, SET_EACH, False))
    g.add(split_out(key, "lock-give-up-items", leave_items, CELL, "leave"))
    g.add(redis(key, "lock-count-give-up", count_leave, CELL, INCR_EACH, False))
    message = f"{ref(decide)}.first().json.message"
    g.add(
        node(
            key,
            "lock-refused",
            refused,
            "n8n-nodes-base.stopAndError",
            1,
            CELL,
            {"errorType": "errorMessage", "errorMessage": f"={{{{ {message} }}}}"},
        )
    )
    if skips:
        overlap.skipped_exit(g, key, names, (route, len(_ROUTES)), decide)
    g.connect(route, _WAIT, sleep)
    g.connect(sleep, 0, decide)
    g.connect(route, _SKIP, skip_items)
    g.connect(skip_items, 0, skip)
    g.connect(skip, 0, decide)
    g.connect(route, _REQUEUE, ticket_items)
    redraw = n("Lock Redraw")
    g.add(
        set_raw(
            key, "lock-redraw", redraw, CELL,
            f"={{{{ {{ incr: {ref(withdraw)}.first().json.incr }} }}}}",
        )
    )  # fmt: skip
    g.connect(withdrawn, 0, redraw)
    g.connect(redraw, 0, ticket_items)
    g.connect(route, len(routes) - 1, leave_items)
    g.connect(leave_items, 0, count_leave)
    g.connect(count_leave, 0, refused)
    g.place(origin, {**ACQUIRE_CELLS, **overlap.CELLS} if skips else ACQUIRE_CELLS, STEP, ROW)
    names.retag(g)
    return g


def release(key: str, held: str, origin: tuple[int, int], names: Names = UNLABELLED) -> Group:
    """The release chain. `held` is a JS expression of the acquire's decision (the record).
    Exit `done` continues with the verdict {released, reason, scope, lock_id} (as its first
    item, or after the SET the items it wrote)."""
    g = Group()
    verdict, items, store = (
        names(RELEASE_ENTRY), names("Lock Release Items"), names("Lock Release")
    )  # fmt: skip
    waited, stats_items, count = (
        names("Lock Waited?"), names("Lock Wait Stats"), names("Lock Count Wait")
    )  # fmt: skip
    script = script_expression(
        "engine/lock/release",
        {
            "__HELD__": held,
            "__RELEASE_MARGIN_MS__": str(keys.RELEASE_MARGIN_SECONDS * 1000),
            "__RELEASED_TTL__": str(keys.RELEASED_META_TTL_SECONDS),
            "__FAST_SCALE__": str(keys.FAST_SCALE),
        },
    )
    g.entry = g.add(set_raw(key, "lock-release-verdict", verdict, CELL, script))
    g.add(split_out(key, "lock-release-items", items, CELL, "set"))
    g.add(
        redis(
            key,
            "lock-release",
            store,
            CELL,
            {
                "operation": "set",
                "key": "={{ $json.key }}",
                "value": "={{ $json.value }}",
                "keyType": "string",
                "expire": "={{ $json.ttl > 0 }}",
                "ttl": "={{ Math.max(1, $json.ttl) }}",
            },
            False,
        )
    )
    # A waiter's statistics are counted here, after the lock is free: the next holder does
    # not wait for them.
    test = f"{ref(verdict)}.first().json.incr.length > 0"
    g.add(if_node(key, "lock-waited", waited, CELL, test))
    g.add(
        set_raw(
            key, "lock-wait-stats", stats_items, CELL,
            f"={{{{ {{ incr: {ref(verdict)}.first().json.incr }} }}}}",
        )
    )  # fmt: skip
    split = names("Lock Wait Stats Items")
    g.add(split_out(key, "lock-wait-stats-items", split, CELL, "incr"))
    g.add(redis(key, "lock-count-wait", count, CELL, INCR_EACH, False))
    g.connect(verdict, 0, items)
    g.connect(items, 0, store)
    g.connect(store, 0, waited)
    g.connect(waited, 0, stats_items)
    g.connect(stats_items, 0, split)
    g.connect(split, 0, count)
    g.exits["done"] = [(waited, 1), (count, 0)]
    g.place(origin, RELEASE_CELLS, STEP, ROW)
    names.retag(g)
    return g
