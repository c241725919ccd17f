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
    value_js,
    wait,
)

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


def _get_once(key: str, property_name: str) -> Kind:
    parameters = {
        "operation": "get",
        "propertyName": property_name,
        "key": key,
        "keyType": "string",
        "options": {"dotNotation": False},
    }
    return redis(parameters, True)


def _scripts(c: Chain, workflow_key: str, inputs: DebounceInputs) -> dict[str, str]:
    context = c.first("Debounce Context")
    decision = c.first("Debounce Decide")
    claimed = f"{c.ref('Debounce Claim')}.all()"
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
            drawn=f"{c.ref('Debounce Take Ticket')}.all()",
        ),
        "claim": f"={{{{ {{ incr: {c.first('Debounce Store')}.incr }} }}}}",
        "verdict": templating.expression(
            "engine/debounce/verdict",
            context=context,
            stored=c.first("Debounce Store"),
            claimed=claimed,
            **tuning,
        ),
        "answer": f"={{{{ {c.first('Debounce Verdict')}.answer }}}}",
        "waits": f"{c.first('Debounce Verdict')}.state === 'wait'",
        "takes": f"{c.first('Debounce Verdict')}.state === 'take'",
        "any": f"{c.first('Debounce Pass Watch')}.tickets.length > 0",
        "runs": f"{c.first('Debounce Taken')}.tickets.length > 0",
        "take_key": f"={{{{ {c.first('Debounce Verdict')}.take_key }}}}",
        "took": f"$json[{c.first('Debounce Verdict')}.take_key] === 1",
        "watch_key": f"={{{{ {context}.base + {js_literal(keys.TEMPLATE_SCHEMA.watch)} }}}}",
        "beacon_key": f"={{{{ $json.base + {js_literal(keys.TEMPLATE_SCHEMA.watch)} }}}}",
        "beacon_value": "={{ JSON.stringify({ s: $json.s, at: Date.now(), "
        "first_at: $json.first_at }) }}",
        "cut_of_key": f"={{{{ $json.base + {cut_of} + $json.s }}}}",
        "owns_cut": f"$json[{decision}.base + {cut_of} + {decision}.s] === 1",
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
        "take": templating.expression("engine/debounce/take", decision=decision),
        "claimed": templating.expression(
            "engine/debounce/claimed",
            decision=decision,
            take=c.first("Debounce Take"),
            claimed=f"{c.ref('Debounce Claim Events')}.all()",
        ),
        "read_prev": f"={{{{ {c.first('Debounce Claimed')}.prev_key }}}}",
        "pass": templating.expression(
            "engine/debounce/pass",
            decision=decision,
            claimed=c.first("Debounce Claimed"),
            read_prev=c.first("Debounce Read Prev"),
        ),
        "ran": templating.expression(
            "engine/debounce/ran", decision=decision, claimed=c.first("Debounce Claimed")
        ),
        "taken": templating.expression(
            "engine/debounce/taken",
            decision=decision,
            claimed=c.first("Debounce Claimed"),
            passed=c.first("Debounce Pass Watch"),
            ran=f"{c.ref('Debounce Ran')}.all()",
        ),
        "burst": templating.expression(
            "engine/debounce/burst", read=f"{c.ref('Debounce Read Events')}.all()"
        ),
        "next": templating.expression(
            "engine/debounce/next", decision=decision, taken=c.first("Debounce Taken"), **tuning
        ),
    }


def _rows(s: dict[str, str]) -> list[Row]:
    """Row 0: an event's path (draw, store, claim, answer); row 1: the waiter's look; row 2:
    the runner's cut, its claims and the burst's items."""

    def incr(key: str) -> dict[str, object]:
        return {"operation": "incr", "key": key, "expire": True, "ttl": keys.DEBOUNCE_TTL_SECONDS}

    def store(key: str, value: str) -> dict[str, object]:
        ttl = keys.DEBOUNCE_TTL_SECONDS
        return {**SET_STRING_EACH, "key": key, "value": value, "ttl": ttl}

    return [
        Row("debounce-context", "Debounce Context", set_raw(s["context"]), (0, 0)),
        Row("debounce-input-valid", "Debounce Input Valid?", if_("$json.problem === null"), (1, 0)),
        Row("debounce-input-refused", "Debounce Input Refused", stop("$json.problem"), (1, 1)),
        Row("debounce-ticket-items", "Debounce Ticket Items", split_out("incr"), (2, 0)),
        # A retried ticket INCR leaves a ticket nobody stores or claims: its runner leaves it out.
        Row("debounce-take-ticket", "Debounce Take Ticket", redis(INCR_EACH, False), (3, 0)),
        Row("debounce-store", "Debounce Store", set_raw(s["store"]), (4, 0)),
        Row("debounce-store-items", "Debounce Store Items", split_out("set"), (5, 0)),
        Row("debounce-store-event", "Debounce Store Event", redis(SET_STRING_EACH, False), (6, 0)),
        Row("debounce-claim-list", "Debounce Claim List", set_raw(s["claim"]), (7, 0)),
        Row("debounce-claim-items", "Debounce Claim Items", split_out("incr"), (8, 0)),
        Row("debounce-claim", "Debounce Claim", _rendezvous(INCR_EACH), (9, 0)),
        Row(
            "debounce-read-watch",
            "Debounce Read Watch",
            _get_once(s["watch_key"], "watch"),
            (10, 0),
        ),
        Row("debounce-verdict", "Debounce Verdict", set_raw(s["verdict"]), (11, 0)),
        Row("debounce-redraw", "Debounce Redraw?", if_("$json.state === 'redraw'"), (12, 0)),
        Row("debounce-answer", "Debounce Answer", set_raw(s["answer"]), (13, 0)),
        Row("debounce-waits", "Debounce Waits?", if_(s["waits"]), (15, 0)),
        Row("debounce-takes", "Debounce Takes?", if_(s["takes"]), (15, 1)),
        Row("debounce-take-over", "Debounce Take Over", _rendezvous(incr(s["take_key"])), (16, 1)),
        Row("debounce-took", "Debounce Took?", if_(s["took"]), (17, 1)),
        Row("debounce-watch", "Debounce Watch", set_raw(s["watch"]), (16, 0)),
        Row(
            "debounce-beacon",
            "Debounce Beacon",
            redis(store(s["beacon_key"], s["beacon_value"]), True),
            (1, 1),
        ),
        Row("debounce-sleep", "Debounce Sleep", wait("={{ $json.sleep }}"), (2, 1)),
        Row(
            "debounce-read-seq",
            "Debounce Read Seq",
            _get_once("={{ $json.seq_key }}", "last_ticket"),
            (3, 1),
        ),
        Row(
            "debounce-read-last",
            "Debounce Read Last",
            _get_once(s["read_last"], "last_event"),
            (4, 1),
        ),
        Row("debounce-decide", "Debounce Decide", set_raw(s["decide"]), (5, 1)),
        Row("debounce-cut-check", "Debounce Cut?", if_("$json.cut === true"), (6, 1)),
        Row("debounce-own-cut", "Debounce Own Cut", _rendezvous(incr(s["cut_of_key"])), (7, 1)),
        Row("debounce-owns-cut", "Debounce Owns Cut?", if_(s["owns_cut"]), (8, 1)),
        Row("debounce-cut", "Debounce Cut", _rendezvous(incr(s["seq_key"])), (9, 1)),
        Row("debounce-take", "Debounce Take", set_raw(s["take"]), (10, 1)),
        Row("debounce-take-items", "Debounce Take Items", split_out("incr"), (11, 1)),
        Row("debounce-claim-events", "Debounce Claim Events", _rendezvous(INCR_EACH), (12, 1)),
        Row("debounce-claimed", "Debounce Claimed", set_raw(s["claimed"]), (13, 1)),
        Row("debounce-read-prev", "Debounce Read Prev", _get_once(s["read_prev"], "prev"), (14, 1)),
        Row("debounce-pass-watch", "Debounce Pass Watch", set_raw(s["pass"]), (2, 2)),
        Row("debounce-pass-items", "Debounce Pass Items", split_out("set"), (3, 2)),
        Row("debounce-pass", "Debounce Pass", redis(SET_STRING_EACH, False), (4, 2)),
        Row("debounce-any", "Debounce Any?", if_(s["any"]), (5, 2)),
        Row("debounce-read-items", "Debounce Read Items", split_out("get"), (6, 2)),
        Row("debounce-read-events", "Debounce Read Events", redis(_read_each(), False), (7, 2)),
        Row("debounce-ran-list", "Debounce Ran List", set_raw(s["ran"]), (8, 2)),
        Row("debounce-ran-items", "Debounce Ran Items", split_out("incr"), (9, 2)),
        # Right before the body (only expressions between): this runner and the next one meet.
        Row("debounce-ran", "Debounce Ran", _rendezvous(INCR_EACH), (10, 2)),
        Row("debounce-taken", "Debounce Taken", set_raw(s["taken"]), (11, 2)),
        Row("debounce-runs", "Debounce Runs?", if_(s["runs"]), (12, 2)),
        Row("debounce-burst", "Debounce Burst", set_raw(s["burst"]), (13, 2)),
        Row("debounce-next", "Debounce Next", set_raw(s["next"]), (14, 2)),
        Row("debounce-again", "Debounce Again?", if_("$json.next === true"), (15, 2)),
    ]


def _read_each() -> dict[str, object]:
    return {**GET_EACH, "propertyName": "record"}


_EDGES: list[Edge] = [
    ("Debounce Context", 0, "Debounce Input Valid?"),
    ("Debounce Input Valid?", 1, "Debounce Input Refused"),
    ("Debounce Input Valid?", 0, "Debounce Ticket Items"),
    *chained(
        "Debounce Ticket Items",
        "Debounce Take Ticket",
        "Debounce Store",
        "Debounce Store Items",
        "Debounce Store Event",
        "Debounce Claim List",
        "Debounce Claim Items",
        "Debounce Claim",
        "Debounce Read Watch",
        "Debounce Verdict",
        "Debounce Redraw?",
    ),
    ("Debounce Redraw?", 0, "Debounce Ticket Items"),
    ("Debounce Redraw?", 1, "Debounce Answer"),
    ("Debounce Waits?", 0, "Debounce Watch"),
    ("Debounce Waits?", 1, "Debounce Takes?"),
    *chained("Debounce Takes?", "Debounce Take Over", "Debounce Took?", "Debounce Watch"),
    *chained("Debounce Watch", "Debounce Beacon", "Debounce Sleep"),
    *chained(
        "Debounce Sleep",
        "Debounce Read Seq",
        "Debounce Read Last",
        "Debounce Decide",
        "Debounce Cut?",
    ),
    ("Debounce Cut?", 1, "Debounce Beacon"),
    *chained("Debounce Cut?", "Debounce Own Cut", "Debounce Owns Cut?", "Debounce Cut"),
    *chained(
        "Debounce Cut",
        "Debounce Take",
        "Debounce Take Items",
        "Debounce Claim Events",
        "Debounce Claimed",
        "Debounce Read Prev",
        "Debounce Pass Watch",
        "Debounce Pass Items",
        "Debounce Pass",
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
    answer, before it may wait: `Debounce Answer`, which the caller links on to `Debounce
    Waits?` through its Respond node, if any), `burst` (`Debounce Burst`, one item
    {items}), which the caller splits into the body's items and links on to `Debounce Next`
    after the body."""
    c = Chain(key, names, origin)
    c.rows(_rows(_scripts(c, workflow_key, inputs)))
    c.entry = c.name("Debounce Context")
    c.link(_EDGES)
    c.exit("answer", ("Debounce Answer", 0))
    c.exit("burst", ("Debounce Burst", 0))
    return c
