"""The debounce as n8n nodes (add-debounce; the design argument is docs/debounce.md).

Per key value, every event INCRs one counter (its ticket), stores its items under its own
ticket, then INCRs two per-ticket rendezvous counters: its claim (the runner that ends the burst
INCRs it too) and the `after` key of the ticket before it (a cut INCRs it too). Whichever INCR
of a rendezvous answers 2 came second and knows the other came first, so no read-modify-write
of shared state decides anything. The waiter of a burst sleeps and looks until the key is quiet
for Q, the burst is M old or it holds N events, then cuts it with its own INCR of the counter:
every event is before the cut (in this burst) or after it (in the next).

The chain is a table, as the lock's and the rate limit's are (`chain.py`): one `Row` per node.
Every decision is a Set node expression, so no Code node (and no task runner) is needed.
"""

from __future__ import annotations

from dataclasses import dataclass

from n8n_lockkit.primitives import keys, templating
from n8n_lockkit.primitives.chain import UNLABELLED, Chain, Edge, Names, Row, chained
from n8n_lockkit.primitives.nodekit import (
    GET_EACH,
    INCR_EACH,
    RETRY,
    Kind,
    if_,
    js_literal,
    redis,
    set_raw,
    split_out,
    stop,
    switch,
    value_js,
    wait,
)

# Where an event's path goes on after its answer (and the webhook's Respond node, if any).
ANSWERED_ON = "Debounce After"
# The waiter looks at least this often, so that a burst that reaches N events is cut within it.
POLL_MS = 500
KIND = "Debounce"
# Exits: `body` gives the burst's items (one n8n item per trigger item, in arrival order);
# `answer` gives each event's answer {buffered, key, position} (a webhook's Respond goes there).
SET_STRING_EACH = {
    "operation": "set",
    "key": "={{ $json.key }}",
    "value": "={{ $json.value }}",
    "keyType": "string",
    "expire": True,
    "ttl": "={{ $json.ttl }}",
}


@dataclass(frozen=True)
class DebounceInputs:
    """A debounce's settings: the key (an n8n parameter value: literal, expression or
    template), the quiet time Q, the max wait M and the max events N."""

    key: str
    quiet_seconds: int
    max_wait_seconds: int = 60
    max_items: int = 100


def _rendezvous(parameters: dict[str, object]) -> Kind:
    """A Redis INCR node of rendezvous counters: never retried, since a second INCR of the same
    counter by one party would read as the other party's (docs/debounce.md, "Retries")."""
    kind = redis(parameters, False)
    settings = {k: v for k, v in kind.settings.items() if k not in RETRY}
    return Kind(kind.type, kind.version, kind.parameters, settings)


def _get_once(key: str, property_name: str, key_type: str = "string", once: bool = True) -> Kind:
    """A Redis GET (key type `list`: LRANGE 0 -1) into `property_name`, dots taken literally."""
    parameters = {
        "operation": "get",
        "propertyName": property_name,
        "key": key,
        "keyType": key_type,
        "options": {"dotNotation": False},
    }
    return redis(parameters, once)


def _scripts(c: Chain, workflow_key: str, inputs: DebounceInputs) -> dict[str, str]:
    context = c.first("Debounce Context")
    decision = c.first("Debounce Decide")
    tuning = {"poll_ms": POLL_MS}
    cut_of = js_literal(keys.TEMPLATE_SCHEMA.cut_of)
    return {
        "context": templating.expression(
            "engine/debounce/context",
            input=f"const input = {{ key: {value_js(inputs.key)} }};",
            workflow=js_literal(workflow_key),
            quiet_ms=inputs.quiet_seconds * 1000,
            max_ms=inputs.max_wait_seconds * 1000,
            max_items=inputs.max_items,
        ),
        "store": templating.expression(
            "engine/debounce/store",
            context=context,
            drawn=c.first("Debounce Take Ticket"),
        ),
        "ticket_key": f"={{{{ {context}.seq_key }}}}",
        "event_key": f"={{{{ {c.first('Debounce Store')}.event_key }}}}",
        "event": f"={{{{ {c.first('Debounce Store')}.event }}}}",
        "claim_list": f"={{{{ {c.first('Debounce Store')}.claim_key }}}}",
        "after_key": f"={{{{ {c.first('Debounce Store')}.after_key }}}}",
        "verdict": templating.expression(
            "engine/debounce/verdict",
            context=context,
            stored=c.first("Debounce Store"),
            after=c.first("Debounce After"),
            **tuning,
        ),
        # The event is in once its own mark is the first of its claims list; otherwise a runner
        # passed its ticket, and it draws a new one.
        "in": "Array.isArray($json.claims) && $json.claims[0] === 'e'",
        "answer": (
            f"={{{{ ({{ buffered: true, key: {context}.key, "
            f"position: {c.first('Debounce Store')}.ticket }}) }}}}"
        ),
        "runs": f"{c.first('Debounce Taken')}.tickets.length > 0",
        "take_key": f"={{{{ {c.first('Debounce Verdict')}.take_key }}}}",
        "took": f"$json[{c.first('Debounce Verdict')}.take_key] === 1",
        "watch_key": f"={{{{ {context}.base + {js_literal(keys.TEMPLATE_SCHEMA.watch)} }}}}",
        "beacon_key": f"={{{{ $json.base + {js_literal(keys.TEMPLATE_SCHEMA.watch)} }}}}",
        "beacon_value": "={{ JSON.stringify({ s: $json.s, at: Date.now(), "
        "first_at: $json.first_at }) }}",
        "cuts_key": f"={{{{ {decision}.base + {cut_of} + {decision}.s }}}}",
        # A Push sends its data as given: node-redis refuses a number ("Invalid argument type").
        "cut_value": f"={{{{ String($json[{decision}.seq_key]) }}}}",
        "seq_key": f"={{{{ {decision}.seq_key }}}}",
        "watch": f"={{{{ {c.first('Debounce Verdict')}.watch }}}}",
        "decide": templating.expression(
            "engine/debounce/decide",
            state=c.first("Debounce Sleep"),
            seq=c.first("Debounce Read Seq"),
            **tuning,
        ),
        "read_last": (
            f"={{{{ {c.first('Debounce Sleep')}.base + "
            f"{js_literal(keys.TEMPLATE_SCHEMA.event)} + $json.last_ticket }}}}"
        ),
        "take": templating.expression(
            "engine/debounce/take",
            decision=decision,
            cuts="$json.cuts",
            drawn=c.first("Debounce Cut"),
        ),
        "claimed": templating.expression(
            "engine/debounce/claimed",
            decision=decision,
            take=c.first("Debounce Take"),
            read=f"{c.ref('Debounce Read Claims')}.all()",
        ),
        "pass": templating.expression(
            "engine/debounce/pass", decision=decision, claimed=c.first("Debounce Claimed")
        ),
        "walk_start": templating.expression(
            "engine/debounce/walk",
            decision=decision,
            claimed=c.first("Debounce Claimed"),
            walked="null",
        ),
        "walk_step": templating.expression(
            "engine/debounce/walk",
            decision=decision,
            claimed=c.first("Debounce Claimed"),
            walked=(
                f"{{ state: {c.first('Debounce Walk More?')}, "
                f"read: {c.ref('Debounce Read Walk')}.all() }}"
            ),
        ),
        "plan": templating.expression(
            "engine/debounce/plan",
            decision=decision,
            claimed=c.first("Debounce Claimed"),
            passed=c.first("Debounce Pass Watch"),
        ),
        "ran": templating.expression("engine/debounce/ran", plan=c.first("Debounce Read Plan")),
        "any": f"{c.first('Debounce Read Plan')}.get.length > 0",
        "taken": templating.expression(
            "engine/debounce/taken",
            decision=decision,
            claimed=c.first("Debounce Claimed"),
            plan=c.first("Debounce Read Plan"),
            passed=c.first("Debounce Pass Watch"),
            ran=f"{c.ref('Debounce Ran')}.all()",
        ),
        "burst": templating.expression(
            "engine/debounce/burst",
            decision=decision,
            taken=c.first("Debounce Taken"),
            read=f"{c.ref('Debounce Read Events')}.all()",
        ),
        "next": templating.expression(
            "engine/debounce/next", decision=decision, taken=c.first("Debounce Taken"), **tuning
        ),
    }


def _rows(s: dict[str, str]) -> list[Row]:
    """Row 0: an event's path (draw, store, claim, answer); row 1: the waiter's look and the cut;
    row 2: the runner's claims, its pass and the burst's items."""

    def incr(key: str) -> dict[str, object]:
        return {"operation": "incr", "key": key, "expire": True, "ttl": keys.DEBOUNCE_TTL_SECONDS}

    def store(key: str, value: str) -> dict[str, object]:
        ttl = keys.DEBOUNCE_TTL_SECONDS
        return {**SET_STRING_EACH, "key": key, "value": value, "ttl": ttl}

    def node(key: str, name: str, kind: Kind, at: tuple[int, int]) -> Row:
        return Row(f"debounce-{key}", f"Debounce {name}", kind, at)

    return [
        node("context", "Context", set_raw(s["context"]), (0, 0)),
        node("input-valid", "Input Valid?", if_("$json.problem === null"), (1, 0)),
        node("input-refused", "Input Refused", stop("$json.problem"), (0, 1)),
        # A retried ticket INCR leaves a ticket nobody stores or claims: its runner leaves it out.
        node("take-ticket", "Take Ticket", redis(incr(s["ticket_key"]), True), (2, 0)),
        node("store", "Store", set_raw(s["store"]), (3, 0)),
        node("store-event", "Store Event", redis(store(s["event_key"], s["event"]), True), (4, 0)),
        node("claim", "Claim", _push(s["claim_list"], "e"), (5, 0)),
        node("read-claim", "Read Claim", _get_list(s["claim_list"], "claims"), (6, 0)),
        node("in", "In?", if_(s["in"]), (7, 0)),
        node("answer", "Answer", set_raw(s["answer"]), (8, 0)),
        # After the answer (the caller's Response sits at column 9): only what decides whether
        # this event waits, which its caller need not wait for.
        node("after", "After", _rendezvous(incr(s["after_key"])), (10, 0)),
        node("claim-expire", "Claim Expire", _expire(s["claim_list"]), (11, 0)),
        node("read-watch", "Read Watch", _get_once(s["watch_key"], "watch"), (12, 0)),
        node("verdict", "Verdict", set_raw(s["verdict"]), (13, 0)),
        node("route", "Route", switch([["wait"], ["take"], ["buffered"]], 2), (14, 0)),
        node("take-over", "Take Over", _rendezvous(incr(s["take_key"])), (15, 0)),
        node("took", "Took?", if_(s["took"]), (16, 0)),
        node("watch", "Watch", set_raw(s["watch"]), (17, 0)),
        node("beacon", "Beacon", redis(store(s["beacon_key"], s["beacon_value"]), True), (1, 1)),
        node("sleep", "Sleep", wait("={{ $json.sleep }}"), (2, 1)),
        node("read-seq", "Read Seq", _get_once("={{ $json.seq_key }}", "last_ticket"), (3, 1)),
        node("read-last", "Read Last", _get_once(s["read_last"], "last_event"), (4, 1)),
        node("decide", "Decide", set_raw(s["decide"]), (5, 1)),
        node("cut-check", "Cut?", if_("$json.cut === true"), (6, 1)),
        node("cut", "Cut", _rendezvous(incr(s["seq_key"])), (7, 1)),
        node("cut-log", "Cut Log", _push(s["cuts_key"], s["cut_value"]), (8, 1)),
        node("cut-expire", "Cut Expire", _expire(s["cuts_key"]), (9, 1)),
        node("read-cuts", "Read Cuts", _get_list(s["cuts_key"], "cuts"), (10, 1)),
        node("take", "Take", set_raw(s["take"]), (11, 1)),
        node("take-items", "Take Items", split_out("push"), (12, 1)),
        node(
            "claim-events",
            "Claim Events",
            _push("={{ $json.list }}", "={{ $json.mark }}", False),
            (13, 1),
        ),
        node("claims-expire", "Claims Expire", _expire("={{ $json.list }}", False), (14, 1)),
        node(
            "read-claims",
            "Read Claims",
            _get_list("={{ $json.list }}", "={{ $json.list }}", False),
            (15, 1),
        ),
        node("claimed", "Claimed", set_raw(s["claimed"]), (16, 1)),
        node("pass-watch", "Pass Watch", set_raw(s["pass"]), (1, 2)),
        node("pass-items", "Pass Items", split_out("set"), (2, 2)),
        node("pass", "Pass", redis(SET_STRING_EACH, False), (3, 2)),
        node("walk-start", "Walk Start", set_raw(s["walk_start"]), (4, 2)),
        node("walk-more", "Walk More?", if_("$json.done !== true"), (5, 2)),
        node("walk-items", "Walk Items", split_out("get"), (6, 3)),
        node("read-walk", "Read Walk", redis(_get_each("={{ $json.property }}"), False), (7, 3)),
        node("walk-step", "Walk Step", set_raw(s["walk_step"]), (8, 3)),
        node("read-plan", "Read Plan", set_raw(s["plan"]), (6, 2)),
        node("any", "Any?", if_(s["any"]), (7, 2)),
        node("read-items", "Read Items", split_out("get"), (8, 2)),
        node("read-events", "Read Events", redis(_get_each("={{ $json.key }}"), False), (9, 2)),
        node("ran-list", "Ran List", set_raw(s["ran"]), (10, 2)),
        node("ran-items", "Ran Items", split_out("incr"), (11, 2)),
        # Right before the body (only expressions between): who runs each burst, who waits next.
        node("ran", "Ran", _rendezvous(INCR_EACH), (12, 2)),
        node("taken", "Taken", set_raw(s["taken"]), (13, 2)),
        node("runs", "Runs?", if_(s["runs"]), (15, 2)),
        node("burst", "Burst", set_raw(s["burst"]), (16, 2)),
        node("next", "Next", set_raw(s["next"]), (17, 2)),
        node("again", "Again?", if_("$json.next === true"), (18, 2)),
    ]


def _push(list_key: str, mark: str, once: bool = True) -> Kind:
    """RPUSH of a mark onto an append-only list: safe to retry, since only the first mark of the
    list decides and a party's later copies change nothing."""
    return redis({"operation": "push", "list": list_key, "messageData": mark, "tail": True}, once)


def _expire(key: str, once: bool = True) -> Kind:
    """A list's TTL: n8n's Set with key type list writes each element of the value by index
    (none for an empty value), then EXPIREs; a Push sets no TTL."""
    parameters = {
        "operation": "set",
        "key": key,
        "value": "={{ '' }}",
        "keyType": "list",
        "expire": True,
        "ttl": keys.DEBOUNCE_TTL_SECONDS,
    }
    return redis(parameters, once)


def _get_list(key: str, property_name: str, once: bool = True) -> Kind:
    return _get_once(key, property_name, "list", once)


def _get_each(property_name: str) -> dict[str, object]:
    return {**GET_EACH, "propertyName": property_name}


_EDGES: list[Edge] = [
    ("Debounce Context", 0, "Debounce Input Valid?"),
    ("Debounce Input Valid?", 1, "Debounce Input Refused"),
    ("Debounce Input Valid?", 0, "Debounce Take Ticket"),
    *chained(
        "Debounce Take Ticket",
        "Debounce Store",
        "Debounce Store Event",
        "Debounce Claim",
        "Debounce Read Claim",
        "Debounce In?",
        "Debounce Answer",
    ),
    # A runner left the ticket out (its mark came first): the event draws a new one. The list
    # has its TTL from that runner's Debounce Claims Expire.
    ("Debounce In?", 1, "Debounce Take Ticket"),
    *chained(
        "Debounce After",
        "Debounce Claim Expire",
        "Debounce Read Watch",
        "Debounce Verdict",
        "Debounce Route",
    ),
    ("Debounce Route", 0, "Debounce Watch"),
    ("Debounce Route", 1, "Debounce Take Over"),
    *chained("Debounce Take Over", "Debounce Took?", "Debounce Watch"),
    *chained("Debounce Watch", "Debounce Beacon", "Debounce Sleep"),
    *chained(
        "Debounce Sleep",
        "Debounce Read Seq",
        "Debounce Read Last",
        "Debounce Decide",
        "Debounce Cut?",
    ),
    ("Debounce Cut?", 1, "Debounce Beacon"),
    *chained(
        "Debounce Cut?",
        "Debounce Cut",
        "Debounce Cut Log",
        "Debounce Cut Expire",
        "Debounce Read Cuts",
        "Debounce Take",
        "Debounce Take Items",
        "Debounce Claim Events",
        "Debounce Claims Expire",
        "Debounce Read Claims",
        "Debounce Claimed",
        "Debounce Pass Watch",
        "Debounce Pass Items",
        "Debounce Pass",
        "Debounce Walk Start",
        "Debounce Walk More?",
        "Debounce Walk Items",
        "Debounce Read Walk",
        "Debounce Walk Step",
        "Debounce Walk More?",
    ),
    ("Debounce Walk More?", 1, "Debounce Read Plan"),
    *chained(
        "Debounce Read Plan",
        "Debounce Any?",
        "Debounce Read Items",
        "Debounce Read Events",
        "Debounce Ran List",
        "Debounce Ran Items",
        "Debounce Ran",
        "Debounce Taken",
        "Debounce Runs?",
        "Debounce Burst",
    ),
    ("Debounce Any?", 1, "Debounce Ran List"),
    ("Debounce Runs?", 1, "Debounce Next"),
    ("Debounce Again?", 0, "Debounce Beacon"),
    ("Debounce Next", 0, "Debounce Again?"),
]


def debounce(
    key: str,
    workflow_key: str,
    inputs: DebounceInputs,
    origin: tuple[int, int],
    names: Names = UNLABELLED,
) -> Chain:
    """The debounce chain. `entry` takes the trigger's items. Exits: `answer` (each event's
    answer, before it may wait: `Debounce Answer`, which the caller links on to `ANSWERED_ON`
    through its Respond node, if any), `burst` (`Debounce Burst`, one item {items}), which the
    caller splits into the body's items and links on to `Debounce Next` after the body."""
    c = Chain(key, names, origin)
    c.rows(_rows(_scripts(c, workflow_key, inputs)))
    c.entry = c.name("Debounce Context")
    c.link(_EDGES)
    c.exit("answer", ("Debounce Answer", 0))
    c.exit("burst", ("Debounce Burst", 0))
    return c
