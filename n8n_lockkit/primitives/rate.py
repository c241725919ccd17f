"""The rate limit as n8n nodes: Set-node decisions and multi-item Redis nodes, no Code node.

One engine for every caller: `add-rate-limit` puts this chain into a workflow, and the
`rate_limit_check` primitive is the same chain behind an Execute Workflow Trigger (its
algorithm and its waiting given at run time), so both count in one budget per scope and window.

Two algorithms count per scope in Redis buckets (the Redis node has INCR, GET and SET only):

- **fixed**: one bucket per window, `n8n-ratelimit-<scope>-<floor(now / W)>` (the keys of the
  `rate_limit_check` primitive before it ran this engine). INCR orders the callers: allowed iff
  the count ≤ L. Up to 2·L calls pass in a W-long interval across a boundary.
- **sliding** (the default): W split into buckets of w = max(W/20, min(0.5 s, W)),
  `n8n-ratelimit-<scope>:sw<W>:<b>`. A check reads every counted bucket (one GET node: the
  buckets of the last W + max(w, `MARGIN_MS`) before its own, its own and `FUTURE` after it),
  refuses without counting when the call would not fit, else INCRs the bucket of the moment the
  INCR runs (under load that can be later than the look), reads the others again (a second GET
  node) and is allowed iff its INCR result plus the others ≤ L. Of two calls in different
  buckets, the one whose INCR came last reads the other's bucket after that INCR (each INCRs
  before it reads), so it counts the other: no interval of W + margin ever holds more than L
  allowed decisions, and no W-long interval more than L body starts while body starts lag their
  decisions by amounts that differ by less than the margin. The price is caution: a call may
  wait or be refused up to margin + w after an exact log would let it in, and calls that race
  past the first read and are then refused still count. Three Redis node executions per
  allowed check, one for a call refused at once.

Several limits on one workflow are one chain: the same three Redis nodes read and count every
limit's keys over one connection each, and a call that one limit refuses before counting
counts in none (one that races past the first read and is refused after counting counts in all).
A call that must wait (`on_denied` wait) sleeps until the buckets ahead of it leave the window,
later by one window per L units over the limit ahead of it: a call refused after counting
knows its place from its count; one refused before counting draws a place among the calls
waiting for the same moment (one INCR of `…q<b>`, b the bucket it waits for). A waiter's looks
add no more than one Redis node execution per second it has waited (the look that ends its
wait is not paid ahead), and it fails at once when its place would come after its max wait.
A refused call answers `retry_after_ms`: when it would fit if nothing new arrived.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from n8n_lockkit.primitives import engine, nodekit
from n8n_lockkit.primitives.nodekit import Group, Names, ref, set_raw, split_out, value_js
from n8n_lockkit.primitives.template_files import read_script

_WEBHOOK_IDS = uuid.UUID("5b0e2f64-3c1d-4e8a-9f27-6d4c8b1a7e35")
SUB_BUCKETS = 20
# How much longer than W a sliding window looks back (at least one bucket more): a body starts
# some time after its call was counted, and under load that time varies by some 100 ms.
MARGIN_MS = 500
MIN_BUCKET_MS = 500  # a burst of calls mostly lands in one bucket (see reread.js)
FUTURE = 2  # buckets after one's own: calls whose clock or INCR ran ahead
WAKE_LATE_MS = 30  # a waiter wakes this long after the bucket it waits for left the window
MIN_SLEEP_MS = 50
STEP = engine.STEP
ROW = engine.ROW
ON_DENIED = ("passthrough", "stop", "error", "wait")
DEFAULT_MAX_WAIT_SECONDS = 300
# INCR one unit in the bucket of the moment the INCR node runs.
COUNT_EACH = {
    **nodekit.INCR_EACH,
    "key": "={{ $json.prefix + Math.floor(Date.now() / $json.bucket_ms) }}",
}
DENIAL = (
    "Rate limit exceeded for scope '{{ $json.scope }}': {{ $json.count }} calls in this "
    "window, limit {{ $json.limit }}"
)


@dataclass(frozen=True)
class RateInputs:
    """One limit. Each value is an n8n parameter value: a literal or an expression."""

    scope: Any
    limit: Any
    window_seconds: Any
    cost: Any = 1
    algorithm: str = "sliding"
    on_denied: str = "passthrough"
    max_wait_seconds: Any = DEFAULT_MAX_WAIT_SECONDS
    # What a bad input is called in the error message, when the caller knows it by another
    # name (rate_limit_check's `windowSeconds`).
    labels: tuple[tuple[str, str], ...] = ()


def _expression(name: str, tokens: dict[str, str]) -> str:
    """`templates/js/engine/rate/<name>.js`; a script that needs the planner has `__PLAN__`."""
    plan = nodekit.without_comments(read_script("engine/rate/plan"))
    return nodekit.script_expression(f"engine/rate/{name}", {"__PLAN__": plan, **tokens})


def _input_js(limits: Sequence[RateInputs]) -> str:
    rows = []
    for limit in limits:
        fields = {
            "scope": limit.scope,
            "limit": limit.limit,
            "window_seconds": limit.window_seconds,
            "cost": limit.cost,
            "algorithm": limit.algorithm,
            "on_denied": limit.on_denied,
            "max_wait_seconds": limit.max_wait_seconds,
        }
        if limit.labels:
            fields["labels"] = dict(limit.labels)
        rows.append("{ " + ", ".join(f"{k}: {value_js(v)}" for k, v in fields.items()) + " }")
    return "const input = [\n" + ",\n".join(rows) + "\n];"


def _state(name: str) -> str:
    return f"$json.state === {nodekit.js_literal(name)}"


@dataclass(frozen=True)
class Shape:
    """Which nodes a chain needs, from its limits (all known when it is built)."""

    precheck: bool  # read before counting: sliding limits, or several limits
    reread: bool  # read again after counting: sliding limits
    waits: bool
    modes: tuple[str, ...]  # the refusing on_denied modes, in order

    @classmethod
    def runtime(cls) -> Shape:
        """For limits whose algorithm and `on_denied` (passthrough or wait) are expressions:
        every node either may need."""
        return cls(True, True, True, ("passthrough",))

    @classmethod
    def of(cls, limits: Sequence[RateInputs]) -> Shape:
        sliding = any(limit.algorithm == "sliding" for limit in limits)
        modes = tuple(dict.fromkeys(x.on_denied for x in limits if x.on_denied != "wait"))
        return cls(len(limits) > 1 or sliding, sliding, any(x.on_denied == "wait" for x in limits),
                   modes)  # fmt: skip

    @property
    def look_cost(self) -> int:
        """Redis node executions of one look that gets as far as counting."""
        return 1 + int(self.precheck) + int(self.reread)


def check(
    key: str,
    limits: Sequence[RateInputs],
    origin: tuple[int, int],
    names: Names,
    *,
    config_note: str = "",
    shape: Shape | None = None,
) -> Group:
    """The rate-limit chain. `entry` takes the caller's items; exit `allowed` continues with
    the verdict once every limit let the call in. Refusals end in the chain's own nodes.
    `shape`: which nodes to build, when the limits' algorithm or on_denied are expressions."""
    shape = shape or Shape.of(limits)
    x, y = origin
    g = Group()
    n = names
    context, look, count_items, count = (
        n("Rate Limit Context"), n("Rate Limit Look"), n("Rate Limit Count Items"),
        n("Rate Limit Count"),
    )  # fmt: skip
    verdict, allowed = n("Rate Limit Verdict"), n("Rate Limit Allowed?")
    ctx = f"{ref(context)}.first().json"
    tokens = {
        "__CONTEXT__": ctx,
        "__LOOK__": f"{ref(look)}.first().json",
        "__WAKE_LATE_MS__": str(WAKE_LATE_MS),
        "__MIN_SLEEP_MS__": str(MIN_SLEEP_MS),
        "__LOOK_COST__": str(shape.look_cost),
        "__COUNTED__": f"{ref(count)}.all().map((item) => Object.entries(item.json)[0])",
    }
    script = _expression(
        "context",
        {
            "__INPUT__": _input_js(limits),
            "__SUB_BUCKETS__": str(SUB_BUCKETS),
            "__MARGIN_MS__": str(MARGIN_MS),
            "__MIN_BUCKET_MS__": str(MIN_BUCKET_MS),
            "__FUTURE__": str(FUTURE),
        },
    )
    g.entry = g.add(set_raw(key, "rate-context", context, [x, y], script))
    g.nodes[-1]["notes"] += config_note
    valid, refused = n("Rate Limit Input Valid?"), n("Rate Limit Input Refused")
    g.add(nodekit.if_node(key, "rate-input-valid", valid, [x + STEP, y], "$json.problem === null"))
    g.add(_stop(key, "rate-input-refused", refused, [x + 2 * STEP, y + ROW], "$json.problem"))
    g.connect(context, 0, valid)
    g.connect(valid, 1, refused)
    g.add(set_raw(key, "rate-look", look, [x + 2 * STEP, y], _expression("look", tokens)))
    g.connect(valid, 0, look)
    at = x + 3 * STEP
    if shape.precheck:
        read_items, read, decide, take = (
            n("Rate Limit Read Items"), n("Rate Limit Read"), n("Rate Limit Check"),
            n("Rate Limit Take?"),
        )  # fmt: skip
        g.add(split_out(key, "rate-read-items", read_items, [at, y], "read"))
        g.add(nodekit.redis(key, "rate-read", read, [at + STEP, y], nodekit.GET_EACH, False))
        check_tokens = {**tokens, "__READ__": f"{ref(read)}.all()"}
        g.add(set_raw(key, "rate-check", decide, [at + 2 * STEP, y],
                      _expression("check", check_tokens)))  # fmt: skip
        g.add(nodekit.if_node(key, "rate-take", take, [at + 3 * STEP, y], _state("take")))
        g.connect(look, 0, read_items)
        g.connect(read_items, 0, read)
        g.connect(read, 0, decide)
        g.connect(decide, 0, take)
        g.connect(take, 0, count_items)
        at += 4 * STEP
    else:
        g.connect(look, 0, count_items)
    g.add(split_out(key, "rate-count-items", count_items, [at, y], "incr"))
    g.add(nodekit.redis(key, "rate-count", count, [at + STEP, y], COUNT_EACH, False))
    g.connect(count_items, 0, count)
    at += 2 * STEP
    last = count
    verdict_tokens = {**tokens, "__REREAD__": "null", "__REREAD_VALUES__": "[]"}
    if shape.reread:
        keys, reread_items, reread = (
            n("Rate Limit Reread Keys"), n("Rate Limit Reread Items"), n("Rate Limit Reread"),
        )  # fmt: skip
        g.add(set_raw(key, "rate-reread-keys", keys, [at, y], _expression("reread", tokens)))
        g.add(split_out(key, "rate-reread-items", reread_items, [at + STEP, y], "read"))
        g.add(
            nodekit.redis(key, "rate-reread", reread, [at + 2 * STEP, y], nodekit.GET_EACH, False)
        )
        g.connect(count, 0, keys)
        g.connect(keys, 0, reread_items)
        g.connect(reread_items, 0, reread)
        verdict_tokens.update(
            {"__REREAD__": f"{ref(keys)}.first().json", "__REREAD_VALUES__": f"{ref(reread)}.all()"}
        )
        at += 3 * STEP
        last = reread
    g.add(set_raw(key, "rate-verdict", verdict, [at, y], _expression("verdict", verdict_tokens)))
    g.add(nodekit.if_node(key, "rate-allowed", allowed, [at + STEP, y], _state("allow")))
    g.connect(last, 0, verdict)
    g.connect(verdict, 0, allowed)
    g.exits["allowed"] = [(allowed, 0)]
    refusals = [(allowed, 1)] + ([(take, 1)] if shape.precheck else [])
    _refusals(g, key, shape, refusals, look, names, (at + 2 * STEP, y + ROW), tokens)
    return g


def _stop(key: str, role: str, name: str, position: list[int], message: str) -> nodekit.Node:
    return nodekit.node(
        key, role, name, "n8n-nodes-base.stopAndError", 1, position,
        {"errorType": "errorMessage", "errorMessage": f"={{{{ {message} }}}}"},
    )  # fmt: skip


def _refusals(
    g: Group,
    key: str,
    shape: Shape,
    sources: list[tuple[str, int]],
    look: str,
    names: Names,
    origin: tuple[int, int],
    tokens: dict[str, str],
) -> None:
    """Where a refused call goes: sleep and look again (taking a place in line first when it
    was refused before counting), fail past its max wait, or take the --on-denied path of the
    limit that refused it."""
    x, y = origin
    if shape.waits:
        wait, sleep = names("Rate Limit Wait?"), names("Rate Limit Sleep")
        give_up, too_long = names("Rate Limit Give Up?"), names("Rate Limit Waited Too Long")
        g.add(nodekit.if_node(key, "rate-wait", wait, [x, y], _state("wait")))
        g.add(
            nodekit.node(
                key, "rate-sleep", sleep, "n8n-nodes-base.wait", 1.1, [x + 2 * STEP, y - ROW],
                {"resume": "timeInterval", "amount": "={{ $json.sleep_seconds }}",
                 "unit": "seconds"},
                webhookId=str(uuid.uuid5(_WEBHOOK_IDS, f"{key}:rate-sleep:{sleep}")),
            )
        )  # fmt: skip
        g.add(nodekit.if_node(key, "rate-give-up", give_up, [x + STEP, y + ROW], _state("fail")))
        g.add(_stop(key, "rate-too-long", too_long, [x + 2 * STEP, y + ROW], "$json.message"))
        for source, output in sources:
            g.connect(source, output, wait)
        if shape.precheck:
            _queue(g, key, names, (x + STEP, y), wait, sleep, tokens)
        else:
            g.connect(wait, 0, sleep)
        g.connect(sleep, 0, look)
        g.connect(wait, 1, give_up)
        g.connect(give_up, 0, too_long)
        sources, x, y = [(give_up, 1)], x + 2 * STEP, y + 2 * ROW
    for index, mode in enumerate(shape.modes):
        last = index == len(shape.modes) - 1
        label = (
            names("Rate Limit Denied")
            if len(shape.modes) == 1
            else names(f"Rate Limit Denied ({mode})")
        )
        if not last:
            test = names(f"Rate Limit Denied {mode}?")
            g.add(nodekit.if_node(key, "rate-denied-mode", test, [x, y],
                                 f"$json.mode === {nodekit.js_literal(mode)}"))  # fmt: skip
            for source, output in sources:
                g.connect(source, output, test)
            sources = [(test, 0)]
        g.add(denied_node(key, label, [x + STEP, y], mode))
        for source, output in sources:
            g.connect(source, output, label)
        if not last:
            sources, y = [(test, 1)], y + ROW


def _queue(
    g: Group,
    key: str,
    names: Names,
    origin: tuple[int, int],
    wait: str,
    sleep: str,
    tokens: dict[str, str],
) -> None:
    """Rate Limit Queue? → Queue Items → Take Place (INCR) → Place, back to Rate Limit Wait?:
    a waiter refused before counting draws its place among those waiting for that moment."""
    x, y = origin
    test, items, take, place = (
        names("Rate Limit Queue?"), names("Rate Limit Queue Items"),
        names("Rate Limit Take Place"), names("Rate Limit Place"),
    )  # fmt: skip
    g.add(nodekit.if_node(key, "rate-queue-test", test, [x, y], "$json.queue.length > 0"))
    g.add(split_out(key, "rate-queue-items", items, [x + STEP, y], "queue"))
    g.add(nodekit.redis(key, "rate-queue", take, [x + 2 * STEP, y], nodekit.INCR_EACH, False))
    decision = {**tokens, "__DECISION__": f"{ref(names('Rate Limit Check'))}.first().json"}
    g.add(set_raw(key, "rate-place", place, [x + 3 * STEP, y], _expression("place", decision)))
    g.connect(wait, 0, test)
    g.connect(test, 0, items)
    g.connect(test, 1, sleep)
    g.connect(items, 0, take)
    g.connect(take, 0, place)
    g.connect(place, 0, wait)


def denied_node(key: str, name: str, position: list[int], mode: str) -> nodekit.Node:
    """The end of a refused call: its verdict as the output (passthrough), a quiet end (stop),
    or a failed execution with the denial message (error)."""
    if mode == "error":
        return nodekit.node(
            key, "rate-denied-error", name, "n8n-nodes-base.stopAndError", 1, position,
            {"errorType": "errorMessage", "errorMessage": f"={DENIAL}"},
        )  # fmt: skip
    if mode == "stop":
        return nodekit.node(key, "rate-denied-stop", name, "n8n-nodes-base.noOp", 1, position, {})
    fields = "{ allowed: false, scope: $json.scope, count: $json.count, limit: $json.limit, " \
        "retry_after_ms: $json.retry_after_ms, message: $json.message }"  # fmt: skip
    node = set_raw(key, "rate-denied-passthrough", name, position, f"={{{{ {fields} }}}}")
    return node
