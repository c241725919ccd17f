"""The rate limit as n8n nodes: Set-node decisions and multi-item Redis nodes, no Code node.

One engine for every caller: `add-rate-limit` puts this chain into a workflow, and the
`rate_limit_check` primitive is the same chain behind an Execute Workflow Trigger (its
algorithm and its waiting given at run time), so both count in one budget per scope and window.

- **sliding** (the default) is exact: a limit of L per W is L slots in one Redis hash,
  `n8n-ratelimit-<scope>:slots<W>`, each holding "generation:time it is free again". A call
  reads the hash (one GET), picks `cost` free slots at random and claims each with an INCR of
  `<hash>:c<slot>:<generation>` (only the INCR that answers 1 wins), then writes each won slot's
  next generation and its start + W + `MARGIN_MS` (one SET). A slot is used at most once per
  W + margin, so no W-long interval ever holds more than L starts; nothing else counts, so a
  refused call spends nobody's budget, and a call that loses a claim gives back the ones it won
  (the next generation, the old time) and looks again. A call that waits books the earliest
  slots the same way and sleeps until they are free: 20 calls at 5 per 2 s start in rounds
  W + margin apart. The margin covers the hop from the chain's last look at the clock to the
  body: at Rate Limit Outcome (Rate Limit Woken after a sleep) a call more than `GATE_MS` after
  its planned start does not go yet; it claims the generations it wrote again (Route: restamp),
  and only if it wins every one (no waiter booked them) writes them again from now and goes,
  else it looks again; so does a sleeper that Woken finds late. A claim whose winner died
  before writing expires after `CLAIM_TTL_S`, when the slot can be won again; a winner that got
  that far only after `VOID_MS` writes nothing.
- **fixed**: one counter per window, `n8n-ratelimit-<scope>-<floor(now / W)>` (the keys of the
  `rate_limit_check` primitive before it ran this engine). INCR orders the callers: allowed iff
  the count <= L. Up to 2·L calls pass in a W-long interval across a boundary, and a call that
  races past the read and is refused after counting still counts (Redis nodes have no DECR).

Several limits on one workflow are one chain: the same three Redis nodes read, claim and write
every limit's keys, and a call that one limit refuses claims nothing in the others.
A refused call answers `retry_after_ms`: when it would fit if nothing new arrived.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from n8n_lockkit.primitives import engine, nodekit, templating
from n8n_lockkit.primitives.chain import Chain, Names, Row, chained
from n8n_lockkit.primitives.nodekit import (
    Kind,
    if_,
    js_literal,
    no_op,
    redis,
    set_raw,
    split_out,
    stop,
    stop_text,
    switch,
    value_js,
    wait,
)

_WEBHOOK_IDS = uuid.UUID("5b0e2f64-3c1d-4e8a-9f27-6d4c8b1a7e35")
# How long after its start a slot is free again, beyond W: a call goes only if its last look at
# the clock comes at most GATE_MS after its planned start, which leaves MARGIN_MS - GATE_MS for
# the hop from there to the body's first node (measured: 1-30 ms inline, bench.rate_bench;
# over 80 ms once in queue mode on a busy CI machine).
MARGIN_MS = 300
GATE_MS = 120
# rate_limit_check answers its caller, whose body starts only after the sub-workflow has
# returned (measured: 150-350 ms in a burst of 6 on 2 cores): its slots stay taken longer.
PRIMITIVE_MARGIN_MS = 700
# A won claim on a slot lives this long: a winner that died before writing the slot's next
# generation holds it no longer. A winner writes nothing once VOID_MS have passed since its look.
CLAIM_TTL_S = 30
VOID_MS = 10_000
# A slot whose claim this call lost stays in limbo for this long (its winner writes or gives it
# back within a few node hops): a call short of slots looks again meanwhile, not refused.
LIMBO_MS = 1000
# A call late at its last look claims the slots it wrote again (a restamp): a waiter that booked
# one claimed it after that write, and its claim lives CLAIM_TTL_S. So a restamp is begun only
# this long after the write, and counts only if its claims were made (Rate Limit Verdict) while
# every such claim still lives, with a second to spare.
RESTAMP_WITHIN_MS = CLAIM_TTL_S * 1000 - VOID_MS
CLAIMS_LIVE_MS = CLAIM_TTL_S * 1000 - 1000
# The first pause before looking again (a winner writes within ~100 ms); it doubles each time.
RETRY_MS = 80
RETRY_MAX_MS = 500
SLEEP_MIN_MS = 20  # a booked start closer than this goes now
POOL = 16  # a call picks its free slots at random among the lowest this many
STEP = engine.STEP
ROW = engine.ROW
ON_DENIED = ("passthrough", "stop", "error", "wait")
DEFAULT_MAX_WAIT_SECONDS = 300
# The claims: a sliding limit's slot claim has its key; a fixed limit's unit counts in the
# window of the moment the INCR runs.
CLAIM_EACH = {
    **nodekit.INCR_EACH,
    "key": "={{ $json.key || ($json.prefix + Math.floor(Date.now() / $json.bucket_ms)) }}",
}
# Read a sliding limit's hash or a fixed limit's counter, by the item's `type` (a constant when
# every limit of the chain has the same algorithm: each expression costs ~0.6 ms per item).
READ_EACH: dict[str, Any] = {**nodekit.GET_EACH, "keyType": "={{ $json.type }}"}
# Write slots: always a hash, always with its TTL.
COMMIT_EACH = {**nodekit.SET_EACH, "keyType": "hash", "expire": True, "ttl": "={{ $json.ttl }}"}
# A restamp's claims, marked with when it was decided: Rate Limit Verdict tells a restamp from
# a fresh look by this time against the look's.
RESTAMP = "={{ { ...$json, restamp_ms: Date.now() } }}"
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


def _state(*names: str) -> str:
    return " || ".join(f"$json.state === {nodekit.js_literal(name)}" for name in names)


@dataclass(frozen=True)
class Shape:
    """Which nodes a chain needs, from its limits (all known when it is built).

    A Redis node runs once per item. A read and a write handle one item per limit, a claim
    one per unit of cost: with one limit (and a cost of 1) that is one item, which the Redis
    node takes from the decision's list itself, without a Split Out in front (one node fewer
    on the canvas and on the path of every call)."""

    slots: bool  # a sliding limit: its slots are written after the claims
    modes: tuple[str, ...]  # the refusing on_denied modes, in order
    several: bool = False  # several limits: one read and one write item each
    costly: bool = False  # a cost other than a literal 1 (or several limits): several claims
    fixed: bool = False  # a fixed limit (with `slots`, both kinds: reads of either type)

    @property
    def read_type(self) -> str:
        """Rate Limit Read's keyType: a hash (sliding), a string (fixed), or the item's."""
        return (
            str(READ_EACH["keyType"])
            if self.slots and self.fixed
            else "hash"
            if self.slots
            else "string"
        )

    @classmethod
    def runtime(cls) -> Shape:
        """For one limit whose algorithm, cost and `on_denied` (passthrough or wait) are
        expressions: every node each may need."""
        return cls(True, ("passthrough",), several=False, costly=True, fixed=True)

    @classmethod
    def of(cls, limits: Sequence[RateInputs]) -> Shape:
        modes = tuple(dict.fromkeys(x.on_denied for x in limits if x.on_denied != "wait"))
        several = len(limits) > 1
        costly = several or any(str(limit.cost).strip() != "1" for limit in limits)
        sliding = any(limit.algorithm == "sliding" for limit in limits)
        fixed = any(limit.algorithm != "sliding" for limit in limits)
        return cls(sliding, modes, several, costly, fixed)


def check(
    key: str,
    limits: Sequence[RateInputs],
    origin: tuple[int, int],
    names: Names,
    *,
    config_note: str = "",
    shape: Shape | None = None,
    margin_ms: int = MARGIN_MS,
) -> Chain:
    """The rate-limit chain. `entry` takes the caller's items; exit `allowed` continues with
    the verdict once every limit let the call in. Refusals end in the chain's own nodes.
    `shape`: which nodes to build, when the limits' algorithm or on_denied are expressions;
    `margin_ms`: how long after W a slot stays taken (the hop from the last check to the body).

    Context → Input Valid? → Look → Read → Check → Take? → Claim → Verdict → (Commit? →
    Commit) → Outcome → Route; Route sends a call on (allow), to Sleep → Woken → Go? and back
    to Look unless it may go (sleep, retry), to Waited Too Long (fail), to the refusals (deny),
    or to Commit again (restamp: late at its last look). Take? sends the rest to Route too.
    """
    shape = shape or Shape.of(limits)
    c = Chain(key, names, origin)
    r = _Rows(c, _cells(shape), _script_context(c, margin_ms, shape))
    c.add(r.script("rate-context", "Rate Limit Context", "context", input=_input_js(limits)))
    c.nodes[-1]["notes"] += config_note
    c.entry = c.name("Rate Limit Context")
    read_each = {**READ_EACH, "keyType": shape.read_type}
    c.rows([
        r.row("rate-input-valid", "Rate Limit Input Valid?", if_("$json.problem === null")),
        r.row("rate-input-refused", "Rate Limit Input Refused", stop("$json.problem")),
        r.script("rate-look", "Rate Limit Look", "look"),
        *r.items("rate-read", "Rate Limit Read", "read", read_each, split=shape.several),
        r.script("rate-check", "Rate Limit Check", "check"),
        r.row("rate-take", "Rate Limit Take?", if_(_state("take"))),
        *r.items("rate-claim", "Rate Limit Claim", "claims", CLAIM_EACH, split=shape.costly),
        r.script("rate-verdict", "Rate Limit Verdict", "verdict"),
        r.script("rate-outcome", "Rate Limit Outcome", "outcome"),
        # One Switch routes every answer but `take` by its state (one expression, where a row
        # of If nodes took one each): go, sleep (or pause and look again), fail past the max
        # wait, be refused, or write its slots again (a call late at its last look).
        r.row("rate-route", "Rate Limit Route", switch(_outputs(shape), _REFUSED)),
    ])  # fmt: skip
    reading = ["Rate Limit Read Items"] if shape.several else []
    claiming = ["Rate Limit Claim Items"] if shape.costly else []
    c.link([
        ("Rate Limit Context", 0, "Rate Limit Input Valid?"),
        ("Rate Limit Input Valid?", 1, "Rate Limit Input Refused"),
        *chained("Rate Limit Input Valid?", "Rate Limit Look", *reading, "Rate Limit Read",
                 "Rate Limit Check", "Rate Limit Take?", *claiming, "Rate Limit Claim",
                 "Rate Limit Verdict"),
    ])  # fmt: skip
    c.exit("allowed", ("Rate Limit Route", 0))
    _commit(c, shape, r)
    _waiting(c, r)
    _refusals(c, shape, r.cells["rate-denied"])
    return c


def _script_context(c: Chain, margin_ms: int, shape: Shape) -> dict[str, Any]:
    """What the rate limit's scripts read: the chain's nodes, and its tuning. (Only a chain
    with slots has a Rate Limit Restamp: `restamp` is None without one.)"""
    claimed = f"{c.ref('Rate Limit Claim')}.all()"
    return {
        "context": c.first("Rate Limit Context"),
        "look": c.first("Rate Limit Look"),
        "check": c.first("Rate Limit Check"),
        "read": f"{c.ref('Rate Limit Read')}.all()",
        "claimed": f"{claimed}.map((item) => Number(Object.values(item.json)[0]))",
        "restamp": c.ref("Rate Limit Restamp") if shape.slots else None,
        "margin_ms": margin_ms,
        **_TUNING,
    }


@dataclass(frozen=True)
class _Rows:
    """The rows of one rate-limit chain: each at the cell of its role (`_cells`)."""

    c: Chain
    cells: dict[str, tuple[int, int]]
    context: dict[str, Any]

    def row(self, role: str, base: str, kind: Kind) -> Row:
        return Row(role, base, kind, self.cells[role])

    def script(self, role: str, base: str, file: str, **extra: str) -> Row:
        """A Set node running `templates/js/engine/rate/<file>.js`."""
        expression = templating.expression(f"engine/rate/{file}", **self.context, **extra)
        return self.row(role, base, set_raw(expression))

    def items(
        self, role: str, base: str, field: str, each: dict[str, Any], *, split: bool
    ) -> list[Row]:
        """A Redis node that runs once per entry of the decision's list `field`: behind a
        Split Out (`split`), or once, on the list's only entry."""
        if split:
            return [
                self.row(f"{role}-items", f"{base} Items", split_out(field)),
                self.row(role, base, redis(each, False)),
            ]
        only = {k: _first(v, field) for k, v in each.items()}
        return [self.row(role, base, redis(only, True))]


def _commit(c: Chain, shape: Shape, r: _Rows) -> None:
    """A sliding limit writes its slots (Commit? → Commit) between Verdict and Outcome; Route
    sends a call late at its last look to Restamp, which claims the slots it holds again
    (Claim → Verdict: only a call that wins them all writes them again from now)."""
    if not shape.slots:
        c.link(chained("Rate Limit Verdict", "Rate Limit Outcome", "Rate Limit Route"))
        return
    test = r.row("rate-commit-test", "Rate Limit Commit?", if_("$json.commit.length > 0"))
    committing = r.items("rate-commit", "Rate Limit Commit", "commit", COMMIT_EACH,
                         split=shape.several)  # fmt: skip
    restamp = r.row("rate-restamp", "Rate Limit Restamp", set_raw(RESTAMP))
    c.rows([test, *committing, restamp])
    claiming = "Rate Limit Claim Items" if shape.costly else "Rate Limit Claim"
    c.link([
        *chained("Rate Limit Verdict", "Rate Limit Commit?", *(x.name for x in committing),
                 "Rate Limit Outcome", "Rate Limit Route"),
        ("Rate Limit Commit?", 1, "Rate Limit Outcome"),
        ("Rate Limit Route", len(_outputs(shape)) - 1, "Rate Limit Restamp"),
        ("Rate Limit Restamp", 0, claiming),
    ])  # fmt: skip


def _waiting(c: Chain, r: _Rows) -> None:
    """Sleeping and looking again, and failing past the max wait."""
    sleep = wait("={{ $json.sleep_seconds }}", _WEBHOOK_IDS)
    c.rows([
        r.row("rate-sleep", "Rate Limit Sleep", sleep),
        r.script("rate-woken", "Rate Limit Woken", "woken"),
        r.row("rate-go", "Rate Limit Go?", if_(_state("allow"))),
    ])  # fmt: skip
    c.link(
        [
            ("Rate Limit Take?", 1, "Rate Limit Route"),
            ("Rate Limit Route", 1, "Rate Limit Sleep"),
            *chained("Rate Limit Sleep", "Rate Limit Woken", "Rate Limit Go?"),
            ("Rate Limit Go?", 1, "Rate Limit Look"),
        ]
    )
    c.exit("allowed", ("Rate Limit Go?", 0))
    c.add(r.row("rate-too-long", "Rate Limit Waited Too Long", stop("$json.message")))
    c.link([("Rate Limit Route", 2, "Rate Limit Waited Too Long")])


def _outputs(shape: Shape) -> tuple[tuple[str, ...], ...]:
    return _ROUTES if shape.slots else _ROUTES[:-1]


# Rate Limit Route's outputs, by the states each takes; anything else (`deny`) is refused.
_ROUTES: tuple[tuple[str, ...], ...] = (("allow",), ("sleep", "retry"), ("fail",), (), ("restamp",))
_REFUSED = 3


# Where each node of the chain sits: the path of an allowed call along the top row, ending at
# Rate Limit Route; the rest in the row below: an input refused under Rate Limit Look, then
# sleeping and looking again, and towards Route failing and the refusals (`rate-denied` is
# where they begin; a second on_denied mode takes a row more). Nothing sits under Route or the
# column before it: the editor draws a node with five outputs taller than a row, its label lower.
_TOP = (
    "rate-context",
    "rate-input-valid",
    "rate-look",
    "rate-read-items",
    "rate-read",
    "rate-check",
    "rate-take",
    "rate-claim-items",
    "rate-claim",
    "rate-verdict",
    "rate-commit-test",
    "rate-commit-items",
    "rate-commit",
    "rate-outcome",
    "rate-route",
)
_WAITING = ("rate-sleep", "rate-woken", "rate-go")
_SLOTS_ONLY = frozenset({"rate-commit-test", "rate-commit-items", "rate-commit"})


def _cells(shape: Shape) -> dict[str, tuple[int, int]]:
    unsplit = {"rate-read-items", "rate-commit-items"} if not shape.several else set()
    if not shape.costly:
        unsplit.add("rate-claim-items")
    top = [r for r in _TOP if (shape.slots or r not in _SLOTS_ONLY) and r not in unsplit]
    cells = {role: (column, 0) for column, role in enumerate(top)}
    look, route = cells["rate-look"][0], cells["rate-route"][0]
    cells["rate-input-refused"] = (look, 1)
    # A restamp claims its slots again: under the claims, left of where the refusals begin.
    cells["rate-restamp"] = (cells.get("rate-claim-items", cells["rate-claim"])[0], 1)
    cells.update({role: (look + 1 + k, 1) for k, role in enumerate(_WAITING)})
    # The refusals: with several modes an If (at `rate-denied`) before each Denied node.
    tests = 1 if len(shape.modes) > 1 else 0
    denied = max(route - 2, look + len(_WAITING) + 2 + tests)
    cells["rate-denied"] = (denied - 1, 1)
    cells["rate-too-long"] = (denied - 1 - tests, 1)
    return cells


# What the rate limit's scripts are tuned by (`<< gate_ms >>` in outcome.js, …).
_TUNING = {
    "gate_ms": GATE_MS,
    "claim_ttl_s": CLAIM_TTL_S,
    "void_ms": VOID_MS,
    "limbo_ms": LIMBO_MS,
    "retry_ms": RETRY_MS,
    "retry_max_ms": RETRY_MAX_MS,
    "sleep_min_ms": SLEEP_MIN_MS,
    "pool": POOL,
    "restamp_within_ms": RESTAMP_WITHIN_MS,
    "claims_live_ms": CLAIMS_LIVE_MS,
}


def _first(value: Any, field: str) -> Any:
    """An `*_EACH` parameter on the first entry of the item's list `field` instead of the item."""
    return value.replace("$json.", f"$json.{field}[0].") if isinstance(value, str) else value


def _refusals(c: Chain, shape: Shape, origin: tuple[int, int]) -> None:
    """Where a refused call goes: the --on-denied path of the limit that refused it; with
    several modes an If before each Denied node but the last."""
    column, row = origin
    source: tuple[str, int] = ("Rate Limit Route", _REFUSED)
    for index, mode in enumerate(shape.modes):
        last = index == len(shape.modes) - 1
        label = "Rate Limit Denied" if len(shape.modes) == 1 else f"Rate Limit Denied ({mode})"
        if not last:
            test = f"Rate Limit Denied {mode}?"
            condition = f"$json.mode === {js_literal(mode)}"
            c.add(Row("rate-denied-mode", test, if_(condition), (column, row + index)))
            c.link([(*source, test)])
            source = (test, 0)
        c.add(Row(f"rate-denied-{mode}", label, denied(mode), (column + 1, row + index)))
        c.link([(*source, label)])
        if not last:
            source = (test, 1)


def denied(mode: str) -> Kind:
    """The end of a refused call: its verdict as the output (passthrough), a quiet end (stop),
    or a failed execution with the denial message (error)."""
    if mode == "error":
        return stop_text(f"={DENIAL}")
    if mode == "stop":
        return no_op()
    fields = (
        "{ allowed: false, scope: $json.scope, count: $json.count, limit: $json.limit, "
        "retry_after_ms: $json.retry_after_ms, message: $json.message }"
    )
    return set_raw(f"={{{{ {fields} }}}}")
