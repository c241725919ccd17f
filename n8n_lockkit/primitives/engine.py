"""The lock engine as n8n nodes: one builder for the inline form and the sub-workflow primitives.

Engine v2 is a ticket lock with N lanes (N = 1: a mutex): every arrival draws a ticket, a
lane serves its tickets in order, each ticket that enters writes its own record (the lease), and
a waiter sleeps until its expected turn. The keys are `keys.py`'s (`KeySchema`), and the chains
below are tables: one `Row` per node, their links a list (`chain.py`).

Uncontended, a mutex costs three Redis node executions (ticket, hold, release: the ticket's
INCR node tells an arrival that it is next, so it skips the read) and no Code node: the
decisions are Set node expressions, which n8n evaluates without a task runner. A semaphore,
a scope's first arrival and every waiter read the line (a fourth), and a caller that writes
its record later than SAFE_ENTRY_MS after drawing its ticket reads its `gone` mark (one more:
it may have been skipped meanwhile; `verify.js`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from n8n_lockkit.primitives import keys, overlap, templating
from n8n_lockkit.primitives.chain import UNLABELLED, Chain, Edge, Names, Row, chained
from n8n_lockkit.primitives.nodekit import (
    GET_EACH,
    INCR_EACH,
    SET_EACH,
    SET_EXPIRING_EACH,
    SET_STRING_EACH,
    if_,
    js_literal,
    park,
    redis,
    resume_request,
    set_raw,
    split_out,
    stop,
    switch,
    value_js,
    wait,
)

STEP = 180  # the engine's grid (chain.ENGINE_GRID): node boxes are 100 x 100, labels below
ROW = 150
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
# Parking (acquire(parks=True)): a waiter further back than the next in line whose turn is more
# than PARK_AFTER_MS away parks in a Wait "On Webhook Call", which gives its n8n concurrency slot
# back; the next in line stays awake, and each release wakes the parked waiter two tickets
# behind it, second in line then (bench/park_handoff.py: "hybrid, woken after release", a
# polling handoff with one waiter awake behind the holder and the wake off the handoff's path).
# The park's backstop ("Limit Wait Time"): a lost resume costs this at most; a waiter parked
# longer wakes, looks and parks again (3 node executions a minute, 2 of them Redis).
PARK_LIMIT_S = 60
# ... but PARK_NEAR_LIMIT_S for a waiter at most PARK_NEAR_AHEAD places back when it parks: after
# an n8n crash the awake waiters died with the process and nothing resumes the parked ones but
# their backstops. n8n's WaitTracker loads every wait due within 70 s when it starts, so a
# near waiter's short backstop has fired by the time n8n is ready (or fires soon after), and it
# heals the line (passes the dead, and its entry wakes the one behind). In steady state the
# WaitTracker looks every 60 s, so a backstop under 60 s fires up to 60 s late (never later
# than PARK_LIMIT_S would); it costs a look and a park per backstop, for two or three waiters
# per line.
PARK_NEAR_AHEAD = 3
PARK_NEAR_LIMIT_S = 10
# A waiter woken by its backstop stays awake this long before it parks again (decide.js), and
# looks no more often than every PARK_BACKSTOP_LOOK_MS meanwhile (unless it is next in line).
PARK_BACKSTOP_AWAKE_MS = 3000
PARK_BACKSTOP_LOOK_MS = 500
# Not when its turn is nearer than a resume takes to start the run (0.2-0.3 s on n8n 2.x): it
# would be late. Every waiter awake beyond the next in line holds a slot, so no more than that.
PARK_AFTER_MS = 300
# A quiet head whose waiter is parked (its resume URL is listed) is woken by an awake waiter
# behind it after this watch, and skipped only after PARKED_GRACE_MS: a woken waiter may queue
# for a concurrency slot before its run starts.
WAKE_PARKED_MS = 2000
PARKED_GRACE_MS = 30000
# A waiter listed less than PARK_SETTLE_MS ago is not woken yet (it is still on its way to the
# park); a resume refused all the same (409) is sent again at a look PARK_RETRY_MS later.
PARK_SETTLE_MS = 250
PARK_RETRY_MS = 50
PARK_REFUSALS = 10
# n8n answers a resume once the resumed run has a concurrency slot (measured: a resume whose
# request was given up after 0.5 s was lost), so the waker waits for the answer.
RESUME_TIMEOUT_MS = 10000
PARK_TUNING = {
    "park_limit_s": PARK_LIMIT_S,
    "park_near_ahead": PARK_NEAR_AHEAD,
    "park_near_limit_s": PARK_NEAR_LIMIT_S,
    "park_backstop_awake_ms": PARK_BACKSTOP_AWAKE_MS,
    "park_backstop_look_ms": PARK_BACKSTOP_LOOK_MS,
    "park_after_ms": PARK_AFTER_MS,
    "wake_parked_ms": WAKE_PARKED_MS,
    "parked_grace_ms": PARKED_GRACE_MS,
    "park_settle_ms": PARK_SETTLE_MS,
    "park_retry_ms": PARK_RETRY_MS,
    "park_refusals": PARK_REFUSALS,
}
# What the lock's scripts are tuned by (`<< min_poll_ms >>` in decide.js and read.js).
TUNING = {
    "min_poll_ms": MIN_POLL_MS,
    "max_poll_ms": MAX_POLL_MS,
    "max_sleep_ms": MAX_SLEEP_MS,
    "look_window": LOOK_WINDOW,
    "buffer_window": overlap.BUFFER_WINDOW,
    "skip_window": overlap.SKIP_WINDOW,
    "handoff_ms": HANDOFF_MS,
    "far_sleep_share": FAR_SLEEP_SHARE,
    "wake_late_ms": WAKE_LATE_MS,
    "default_hold_ms": DEFAULT_HOLD_MS,
    "wait_buckets": js_literal(list(keys.WAIT_BUCKETS)),
}
# Lock Route's outputs, by the decisions (decide.js `state`) each takes; a chain whose policy
# may skip adds `skipped` next, and the last output gives up (busy, timeout, duplicate).
_ROUTES: tuple[tuple[str, ...], ...] = (
    ("enter",), ("read",), ("wait",), ("skip",), ("requeue",), ("queue",)
)  # fmt: skip
_ENTER, _READ, _WAIT, _SKIP, _REQUEUE, _QUEUE = range(len(_ROUTES))
# A chain that parks adds two: park (Lock Park), and wake a parked waiter first (Lock Wake).
_PARK_ROUTES: tuple[tuple[str, ...], ...] = (("park",), ("wake",))
_PARK, _WAKE = range(len(_ROUTES), len(_ROUTES) + len(_PARK_ROUTES))


# Lock Enqueue writes the one key its decision names (`queue`: an object is a hash).
_ENQUEUE = {
    **SET_EXPIRING_EACH,
    "key": "={{ $json.queue.key }}",
    "value": "={{ $json.queue.value }}",
    "ttl": "={{ $json.queue.ttl }}",
}


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
    # Where a parked waiter is resumed (acquire(parks=True)): n8n's resume URL, or one with the
    # base an HTTP Request inside n8n reaches (behind a reverse proxy).
    resume_url: Any = "={{ $execution.resumeUrl }}"


@dataclass(frozen=True)
class EngineOptions:
    default_ttl_seconds: int = 86400
    default_max_wait_seconds: int = 86400


def _input_js(inputs: LockInputs, parks: bool) -> str:
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
    if parks:
        fields |= {"resume_url": inputs.resume_url}
    pairs = ", ".join(f"{name}: {value_js(value)}" for name, value in fields.items())
    return f"const input = {{ {pairs} }};"


def _scripts(
    c: Chain, inputs: LockInputs, options: EngineOptions, parks: bool, reads_first: bool = False
) -> dict[str, str]:
    """The acquire chain's scripts, by the node that runs each. Lock Decide reads its own last
    decision: n8n's `$()` gives a node's last finished run, and the run in progress is not one
    yet."""
    context = c.first("Lock Context")
    decision = c.first("Lock Decide")
    previous = {"decided": f"{c.ref('Lock Decide')}.isExecuted", "decision": decision}
    tuning = {**TUNING, "park": parks, "reads_first": reads_first}
    tuning |= PARK_TUNING if parks else {}
    parked = {"parked": c.ref("Lock Park"), "woke": c.ref("Lock Wake")} if parks else {}
    look = templating.call(
        "engine/lock/read",
        context=context,
        drawn=f"{c.ref('Lock Take Ticket')}.all()",
        **previous,
        **parked,
        **tuning,
    )
    verify = templating.call("engine/lock/verify", decision=decision)
    return {
        "context": templating.expression(
            "engine/lock/context",
            input=_input_js(inputs, parks),
            default_ttl=options.default_ttl_seconds,
            default_max_wait=options.default_max_wait_seconds,
            park=parks,
        ),
        "decide": templating.expression(
            "engine/lock/decide",
            context=context,
            look=look,
            read=f"{c.ref('Lock Read Line')}.all()",
            **previous,
            **parked,
            **tuning,
        ),
        "verify": f"{verify}.check",
        "gone": f"={{{{ {decision}.gone_key }}}}",
        "withdraw": templating.expression("engine/lock/withdraw", decision=decision),
        "redraw": f"={{{{ {{ incr: {c.ref('Lock Withdraw')}.first().json.incr }} }}}}",
        "refused": f"{decision}.message",
        # From Lock Route or after Lock Enqueue (whose item is the decision too; one source).
        "sleep": f"={{{{ {decision}.sleep_seconds }}}}",
        "park": f"={{{{ {decision}.park_seconds }}}}",
        "wake_url": f"={{{{ {decision}.wake.url }}}}",
        "wake_body": f"={{{{ JSON.stringify({{ n8nlock_wake: {decision}.wake.ticket }}) }}}}",
    }


def _park_rows(s: dict[str, str]) -> list[Row]:
    """A chain that parks: Lock Park (the waiter's Wait "On Webhook Call") and Lock Wake (the
    resume of a parked waiter, then Lock Decide again: decide.js carries out the decision it
    took with the wake), in a row of their own under the slow paths."""
    wake = resume_request(s["wake_url"], s["wake_body"], RESUME_TIMEOUT_MS)
    return [
        Row("lock-park", "Lock Park", park(s["park"]), (6, 3)),
        Row("lock-wake", "Lock Wake", wake, (4, 3)),
    ]


_PARK_EDGES: list[Edge] = [
    ("Lock Route", _PARK, "Lock Park"),
    ("Lock Park", 0, "Lock Decide"),
    ("Lock Route", _WAKE, "Lock Wake"),
    ("Lock Wake", 0, "Lock Decide"),
]


def _get_one(field: str, key: str) -> dict[str, Any]:
    """A Redis GET of the one key `key` (an expression) into the item's `field`."""
    return {
        "operation": "get",
        "propertyName": field,
        "key": key,
        "keyType": "string",
        "options": {"dotNotation": False},
    }


def _acquire_rows(
    c: Chain, s: dict[str, str], routes: list[tuple[str, ...]], parks: bool
) -> list[Row]:
    """Row 0 is the path an uncontended call takes, left to right; the slow paths (reading the
    line, waiting, skipping a dead head, giving up, withdrawing) fold into the rows below. Lock
    Route is drawn about two rows tall, so the cell under it stays empty."""
    return [
        Row("lock-context", "Lock Context", set_raw(s["context"]), (0, 0)),
        Row("lock-input-valid", "Lock Input Valid?", if_("$json.problem === null"), (1, 0)),
        Row("lock-input-refused", "Lock Input Refused", stop("$json.problem"), (1, 1)),
        Row("lock-ticket-items", "Lock Ticket Items", split_out("incr"), (2, 0)),
        Row("lock-take-ticket", "Lock Take Ticket", redis(INCR_EACH, False), (3, 0)),
        Row("lock-read-items", "Lock Read Items", split_out("read"), (6, 1)),
        Row("lock-read", "Lock Read Line", redis(GET_EACH, False), (7, 1)),
        Row("lock-decide", "Lock Decide", set_raw(s["decide"]), (4, 0)),
        Row("lock-route", "Lock Route", switch(routes, len(routes) - 1), (5, 0)),
        Row("lock-hold-items", "Lock Hold Items", split_out("set"), (6, 0)),
        Row("lock-hold", "Lock Hold", redis(SET_EXPIRING_EACH, False), (7, 0)),
        # Entered late? Read the ticket's mark; a skipped caller withdraws and draws again.
        Row("lock-verify", "Lock Verify", if_(s["verify"]), (8, 0)),
        Row(
            "lock-check-skipped",
            "Lock Check Skipped",
            redis(_get_one("gone", s["gone"]), True),
            (8, 1),
        ),
        Row("lock-was-skipped", "Lock Was Skipped?", if_("$json.gone !== null"), (0, 2)),
        Row("lock-withdraw", "Lock Withdraw", set_raw(s["withdraw"]), (1, 2)),
        Row("lock-withdraw-items", "Lock Withdraw Items", split_out("set"), (2, 2)),
        Row("lock-withdrawn", "Lock Withdrawn", redis(SET_EACH, False), (3, 2)),
        # Not entering: wait, skip a dead head, draw again, or give up.
        Row("lock-sleep", "Lock Sleep", wait(s["sleep"]), (6, 2)),
        # Before a sleep: the waiter's cleanup index entry, or its alive beacon (decide.js).
        # (Lock Route's park outputs make it taller: then a row lower, beside Lock Park.)
        Row("lock-enqueue", "Lock Enqueue", redis(_ENQUEUE, True), (5, 3 if parks else 2)),
        Row("lock-skip-items", "Lock Skip Items", split_out("skip"), (7, 2)),
        Row("lock-skip", "Lock Skip Head", redis(SET_EACH, False), (8, 2)),
        Row("lock-give-up-items", "Lock Give-Up Items", split_out("leave"), (2, 1)),
        Row("lock-count-give-up", "Lock Count Give-Up", redis(INCR_EACH, False), (3, 1)),
        Row("lock-refused", "Lock Refused", stop(s["refused"]), (4, 1)),
    ]


def _routes(waiting: tuple[tuple[str, ...], ...], skips: bool) -> list[tuple[str, ...]]:
    """Lock Route's outputs: enter, read the line, sleep, skip a dead head, draw again, write
    the waiter's index entry or beacon then sleep, (a chain that parks: park, wake a parked
    waiter,) (a policy that may skip: answer skipped,) else give up."""
    return [*waiting, *([("skipped",)] if skips else []), ()]


_ACQUIRE_EDGES: list[Edge] = [
    ("Lock Context", 0, "Lock Input Valid?"),
    ("Lock Input Valid?", 1, "Lock Input Refused"),
    ("Lock Input Valid?", 0, "Lock Ticket Items"),
    ("Lock Ticket Items", 0, "Lock Take Ticket"),
    ("Lock Take Ticket", 0, "Lock Decide"),
    ("Lock Decide", 0, "Lock Route"),
    ("Lock Route", _ENTER, "Lock Hold Items"),
    ("Lock Route", _READ, "Lock Read Items"),
    ("Lock Read Items", 0, "Lock Read Line"),
    ("Lock Read Line", 0, "Lock Decide"),
    ("Lock Hold Items", 0, "Lock Hold"),
    *chained(
        "Lock Hold",
        "Lock Verify",
        "Lock Check Skipped",
        "Lock Was Skipped?",
        "Lock Withdraw",
        "Lock Withdraw Items",
        "Lock Withdrawn",
    ),
]
_WAITING_EDGES: list[Edge] = [
    ("Lock Route", _WAIT, "Lock Sleep"),
    ("Lock Sleep", 0, "Lock Decide"),
    ("Lock Route", _SKIP, "Lock Skip Items"),
    ("Lock Skip Items", 0, "Lock Skip Head"),
    ("Lock Skip Head", 0, "Lock Decide"),
    ("Lock Route", _REQUEUE, "Lock Ticket Items"),
    ("Lock Route", _QUEUE, "Lock Enqueue"),
    ("Lock Enqueue", 0, "Lock Sleep"),
]
_REDRAW_EDGES: list[Edge] = [
    ("Lock Withdrawn", 0, "Lock Redraw"),
    ("Lock Redraw", 0, "Lock Ticket Items"),
]


def acquire(
    key: str,
    inputs: LockInputs,
    origin: tuple[int, int],
    names: Names = UNLABELLED,
    options: EngineOptions = EngineOptions(),
    skips: bool = False,
    parks: bool = False,
    reads_first: bool = False,
) -> Chain:
    """The acquire chain. `entry` takes the caller's items (the first one is read); the exit
    `held` gives the held lock's record (one item per SET), a refusal stops the execution.

    With `skips` (a policy that may skip: skip, buffer-one, or one known only at run time) the
    exit `skipped` gives one item, the skipped answer {skipped, reason, scope, on_busy,
    holder_execution_id}.

    With `parks` a waiter far back in line parks (PARK_LIMIT_S) instead of sleeping, and the
    release wakes the one two behind it (`release(parks=True)`): only for a caller whose
    execution may end its run and be resumed (not a sub-workflow's, not a webhook's in queue
    mode).

    With `reads_first` a waiter reads the line before it sleeps, however far back it is: a
    replaying duplicate guard's, whose first read finds the key's done mark when the first
    run has succeeded (the sleep of one far back in line would delay every retry's answer)."""
    c = Chain(key, names, origin)
    waiting = _ROUTES + (_PARK_ROUTES if parks else ())
    routes = _routes(waiting, skips)
    s = _scripts(c, inputs, options, parks, reads_first)
    c.rows(_acquire_rows(c, s, routes, parks))
    c.entry = c.name("Lock Context")
    c.link(_ACQUIRE_EDGES)
    c.exit("held", ("Lock Verify", 1), ("Lock Was Skipped?", 1))
    if skips:
        overlap.skipped_exit(c, ("Lock Route", len(waiting)), c.first("Lock Decide"))
    c.link(_WAITING_EDGES)
    if parks:
        c.rows(_park_rows(s))
        c.link(_PARK_EDGES)
    c.add(Row("lock-redraw", "Lock Redraw", set_raw(s["redraw"]), (4, 2)))
    c.link(_REDRAW_EDGES)
    c.link(
        [
            ("Lock Route", len(routes) - 1, "Lock Give-Up Items"),
            *chained("Lock Give-Up Items", "Lock Count Give-Up", "Lock Refused"),
        ]
    )
    return c


def _wake_rows(c: Chain, verdict: str) -> list[Row]:
    """A release whose waiters park wakes the one two behind it (release.js `wake`): Lock Wake
    Read gets its listing ("<ms> <resume URL>", or nothing), Lock Wake Due? tells whether there
    is one, Lock Wake Settle waits until it is PARK_SETTLE_MS old (its waiter is then in the
    park), Lock Wake Next resumes it; a refusal (409: not parked yet) is sent again
    PARK_RETRY_MS later, at most PARK_REFUSALS times in all (then the waiter is its
    backstop's, or a watcher's: decide.js)."""
    get_listing = _get_one("listing", f"={{{{ {verdict}.wake.key }}}}")
    listing = f"String({c.first('Lock Wake Read')}.listing ?? '')"
    since = f"Number({listing}.split(' ')[0])"
    url = f"={{{{ {listing}.slice({listing}.indexOf(' ') + 1) }}}}"
    settle = f"={{{{ Math.max(0.01, ({PARK_SETTLE_MS} - (Date.now() - {since})) / 1000) }}}}"
    body = f"={{{{ JSON.stringify({{ n8nlock_wake: {verdict}.wake.ticket }}) }}}}"
    again = f"$json.statusCode === 409 && $runIndex < {PARK_REFUSALS - 1}"
    resume = resume_request(url, body, RESUME_TIMEOUT_MS)
    retry = wait(f"={{{{ {PARK_RETRY_MS / 1000} }}}}")
    return [
        # Under the release's statistics row.
        Row("lock-wake-read", "Lock Wake Read", redis(get_listing, True), (0, 2)),
        Row("lock-wake-due", "Lock Wake Due?", if_(f"{listing}.indexOf(' ') > 0"), (1, 2)),
        Row("lock-wake-settle", "Lock Wake Settle", wait(settle), (2, 2)),
        Row("lock-wake-next", "Lock Wake Next", resume, (3, 2)),
        Row("lock-wake-again", "Lock Wake Again?", if_(again), (3, 3)),
        Row("lock-wake-retry", "Lock Wake Retry", retry, (2, 3)),
    ]


def release(
    key: str, held: str, origin: tuple[int, int], names: Names = UNLABELLED, parks: bool = False
) -> Chain:
    """The release chain. `held` is a JS expression of the acquire's decision (the record).
    Exit `done` continues with the verdict {released, reason, scope, lock_id} (as its first
    item, or after the SET the items it wrote). A waiter's statistics are counted after the
    lock is free: the next holder does not wait for them. With `parks` (the acquire's waiters
    park) it then wakes the waiter two behind, if it parked (`_wake_rows`)."""
    c = Chain(key, names, origin)
    verdict = c.first(RELEASE_ENTRY)
    script = templating.expression("engine/lock/release", held=held, park=parks)
    stats = f"={{{{ {{ incr: {verdict}.incr }} }}}}"
    c.rows(
        [
            Row("lock-release-verdict", RELEASE_ENTRY, set_raw(script), (0, 0)),
            Row("lock-release-items", "Lock Release Items", split_out("set"), (1, 0)),
            Row("lock-release", "Lock Release", redis(SET_STRING_EACH, False), (2, 0)),
            Row("lock-waited", "Lock Waited?", if_(f"{verdict}.incr.length > 0"), (3, 0)),
            Row("lock-wait-stats", "Lock Wait Stats", set_raw(stats), (1, 1)),
            Row("lock-wait-stats-items", "Lock Wait Stats Items", split_out("incr"), (2, 1)),
            Row("lock-count-wait", "Lock Count Wait", redis(INCR_EACH, False), (3, 1)),
        ]
    )
    c.entry = c.name(RELEASE_ENTRY)
    c.link(
        [
            *chained(RELEASE_ENTRY, "Lock Release Items", "Lock Release", "Lock Waited?"),
            ("Lock Waited?", 0, "Lock Wait Stats"),
            *chained("Lock Wait Stats", "Lock Wait Stats Items", "Lock Count Wait"),
        ]
    )
    if not parks:
        c.exit("done", ("Lock Waited?", 1), ("Lock Count Wait", 0))
        return c
    c.rows(_wake_rows(c, verdict))
    c.link(
        [
            ("Lock Waited?", 1, "Lock Wake Read"),
            ("Lock Count Wait", 0, "Lock Wake Read"),
            # Lock Wake Again?'s true output retries: back to Lock Wake Next after the pause.
            *chained(
                "Lock Wake Read",
                "Lock Wake Due?",
                "Lock Wake Settle",
                "Lock Wake Next",
                "Lock Wake Again?",
                "Lock Wake Retry",
                "Lock Wake Next",
            ),
        ]
    )
    c.exit("done", ("Lock Wake Due?", 1), ("Lock Wake Again?", 1))
    return c
