"""The Redis keys n8nlock's primitives write, as the operator commands read them.

Engine v2 is a ticket lock with N lanes, N = `--max-concurrent` (1: a mutex). Format 3 made
it stall-safe: the holder's record is per ticket, and a caller that entered late checks that
nobody skipped it (docs/lock-engine.md). Format 4, this one, keeps format 3's keys and decides
on them alone: a caller of format 1 or 2 is invisible to it, so `n8nlock push` drains those
before it brings format 4 (ops/drain.py). The scripts in `templates/js/` write every name from
`TEMPLATE_SCHEMA` below; `tests/e2e` proves the scripts and the operator commands agree.

Every kind of key, with its Redis type, TTL, writers, readers and meaning, is a row of
`KEY_KINDS` in `key_kinds.py`; docs/reference/keys.md is generated from it (`make
docs-reference`, scripts/gen_key_reference.py), so the layout is described in one place.
Format 1 (before engine v2) and format 2 wrote other keys and records; only the operator
commands read them, in one module (ops/compat.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

FORMAT = 4
LOCK_PREFIX = "n8n-lock-"
TICKET_SUFFIX = ":ticket"
SERVED_SUFFIX = ":served:"
LANE_META_SUFFIX = ":meta:"
HOLDER_SUFFIX = ":holder:"
GONE_SUFFIX = ":gone:"
ALIVE_SUFFIX = ":alive:"
PARK_SUFFIX = ":park:"
HOLD_SUFFIX = ":hold_ms"
FAST_SUFFIX = ":fast"
# Arrivals between two writes stay far below this, so value // FAST_SCALE is the last ticket
# out. Past 4 x 10^7 INCRs it would read one ticket too late, but each INCR comes with a ticket
# drawn in the same node, so every arrival's ticket is then millions past it: none is "next".
FAST_SCALE = 100_000_000
# A holder's Lock Hold sets the value to FAST_SCALE x (its ticket - 1) + HELD_MARK + its entry
# time in ms modulo HELD_WRAP_MS: below the mark, the rest counts arrivals since a release.
HELD_MARK = 50_000_000
HELD_WRAP_MS = 10_000_000
SKIP_GRACE_SECONDS = 5
# A caller that wrote its record within this long of drawing its ticket enters without reading
# its `gone` mark: a caller behind it skips it only after SKIP_GRACE_SECONDS of quiet that began
# after that ticket was drawn, so it would have seen the record. The rest of the grace covers
# clocks that run at different rates (docs/lock-engine.md).
SAFE_ENTRY_MS = SKIP_GRACE_SECONDS * 1000 - 500
# A skip mark outlives any stall of the skipped caller shorter than its lease.
GONE_MIN_TTL_SECONDS = 86400
# A waiter that has watched a quiet head this long, with unmarked tickets between it and the
# head, writes its `alive` beacon (`:alive:<t>`) at every look: it is in line, not dead. A
# waiter that watched the head RUN_GRACE_MS (a stall of its own counted as one sleep at most,
# so that waiters stopped with it get a look to say so) passes the head and every unmarked
# ticket between them without a fresh beacon in one skip (their `gone` marks), not one grace
# each: a live one among them would have written its beacon by then (it watches from one
# sleep after this one at most, and looks at least every sleep). decide.js,
# docs/lock-engine.md.
BEACON_AFTER_MS = 2000
ALIVE_FRESH_MS = 6000
ALIVE_TTL_SECONDS = 30
RUN_GRACE_MS = SKIP_GRACE_SECONDS * 1000 + 4000
# A released (or withdrawn) record stays this long: a head whose record says released has left
# even when `served` says otherwise (a late skip wrote it back), and is skipped at once.
RELEASED_META_TTL_SECONDS = 60
INDEX_PREFIX = "n8nlock:exec:"
STATS_PREFIX = "n8nlock:stats:"
STATS_TTL_SECONDS = 8 * 86400
# A duplicate guard (add-dedupe) is a lock on `dedupe-<workflow key>-<key>`; a success leaves
# `n8nlock:done:<that scope>` (TTL: the window), which turns the key's duplicates away.
DEDUPE_SCOPE_PREFIX = "dedupe-"
DONE_PREFIX = "n8nlock:done:"
# A guard with --on-duplicate replay also stores the first run's answer under
# `n8nlock:answer:<that scope>` (TTL: the window), which its duplicates are answered with.
ANSWER_PREFIX = "n8nlock:answer:"
# A release this close to its lock's expiry leaves the key to its TTL instead of deleting it.
RELEASE_MARGIN_SECONDS = 2
# Histogram buckets of the wait before an acquisition (seconds; `inf` above the last).
WAIT_BUCKETS = (0.1, 0.5, 1, 2, 5, 10, 30, 60, 300)
# The rate limit's keys (primitives/rate.py): a sliding limit's slots hash
# `n8n-ratelimit-<scope>:slots<W>` and its claims `<hash>:c<slot>:<generation>`; a fixed
# limit's counter `n8n-ratelimit-<scope>-<window number>`.
RATE_PREFIX = "n8n-ratelimit-"
SLOTS_SUFFIX = ":slots"
CLAIM_SUFFIX = ":c"
WINDOW_SEPARATOR = "-"
# A debounce's keys (add-debounce, docs/debounce.md), after `n8nlock:debounce2:<wf>:<key>`.
# The 2 is the protocol with lists (claims and cuts): a workflow upgraded from the one that
# only INCRed starts a sequence of its own, so that a burst its old executions still wait for
# runs under the old keys and no old runner meets a new event.
DEBOUNCE_PREFIX = "n8nlock:debounce2:"
DEBOUNCE_SEQ_SUFFIX = ":seq"
DEBOUNCE_EVENT_SUFFIX = ":ev:"
# Lists (RPUSH, first mark decides): named anew so that no key of the INCR version is reused.
DEBOUNCE_CLAIM_SUFFIX = ":claims:"
DEBOUNCE_AFTER_SUFFIX = ":after:"
DEBOUNCE_WATCH_SUFFIX = ":watch"
DEBOUNCE_TAKE_SUFFIX = ":take:"
DEBOUNCE_CUT_SUFFIX = ":cuts:"
DEBOUNCE_RAN_SUFFIX = ":ran:"
# A runner looks back this many bursts at most for one whose runners all died before the body.
DEBOUNCE_WALK_MAX = 20
DEBOUNCE_BURST_SUFFIX = ":burst:"
DEBOUNCE_TTL_SECONDS = 86400
# A waiter writes its watch at every look (every POLL_MS at most); one not written for this long
# is taken to be dead, and the next event of the key takes its burst over.
DEBOUNCE_STALE_MS = 6000


# What `release.js` gives `:hold_ms` on every release: its remaining TTL tells when that was.
HOLD_TTL_SECONDS = 7 * 86400
# The numbers of the layout that scripts and Python share (`<< fast_scale >>` in a script).
CONSTANTS: dict[str, int] = {
    "format": FORMAT,
    "fast_scale": FAST_SCALE,
    "held_mark": HELD_MARK,
    "held_wrap_ms": HELD_WRAP_MS,
    "skip_grace_ms": SKIP_GRACE_SECONDS * 1000,
    "safe_entry_ms": SAFE_ENTRY_MS,
    "gone_min_ttl": GONE_MIN_TTL_SECONDS,
    "beacon_after_ms": BEACON_AFTER_MS,
    "alive_fresh_ms": ALIVE_FRESH_MS,
    "alive_ttl": ALIVE_TTL_SECONDS,
    "run_grace_ms": RUN_GRACE_MS,
    "released_ttl": RELEASED_META_TTL_SECONDS,
    "release_margin_ms": RELEASE_MARGIN_SECONDS * 1000,
    "stats_ttl": STATS_TTL_SECONDS,
    "hold_ttl": HOLD_TTL_SECONDS,
    "debounce_ttl": DEBOUNCE_TTL_SECONDS,
    "debounce_stale_ms": DEBOUNCE_STALE_MS,
    "debounce_walk_max": DEBOUNCE_WALK_MAX,
}
# A key namespace per environment (`keyPrefix:` in envs/<env>.yml, default empty, checked by
# envconfig.check_key_prefix) goes in front of every key n8nlock writes, so that staging and
# production can share one Redis. The generated nodes and primitives name it by this
# placeholder, which `n8nlock push` resolves per env.
NAMESPACE_PLACEHOLDER = "{{@:env:keyPrefix}}"


def lane_of(ticket: int, slots: int) -> int:
    return ticket % slots


def head_of(served: int | None, lane: int, slots: int) -> int:
    """The ticket that holds (or is next to hold) lane `lane`, given its `served` value."""
    first = lane if lane else slots
    return (first - slots if served is None else served) + slots


_LANE_KINDS = {
    SERVED_SUFFIX: "served",
    LANE_META_SUFFIX: "meta",
    HOLDER_SUFFIX: "holder",
    GONE_SUFFIX: "gone",
    ALIVE_SUFFIX: "alive",
    PARK_SUFFIX: "park",
}
_SCALAR_KINDS = {TICKET_SUFFIX: "ticket", HOLD_SUFFIX: "hold", FAST_SUFFIX: "fast"}


@dataclass(frozen=True)
class KeySchema:
    """Every key n8nlock writes, in one namespace (`keyPrefix`, empty by default).

    The templates write keys as `<< keys.lock >>${scope}<< keys.ticket >>` from the schema
    whose namespace is the push placeholder (`TEMPLATE_SCHEMA`); the operator commands build
    and parse them with the schema of their env.

    Example:
        >>> KeySchema("staging:").holder_key("orders", 7)
        'staging:n8n-lock-orders:holder:7'
    """

    namespace: str = ""
    # Suffixes of a scope's keys (after `lock`+scope): not namespaced.
    ticket: ClassVar[str] = TICKET_SUFFIX
    served: ClassVar[str] = SERVED_SUFFIX
    holder: ClassVar[str] = HOLDER_SUFFIX
    gone: ClassVar[str] = GONE_SUFFIX
    alive: ClassVar[str] = ALIVE_SUFFIX
    park: ClassVar[str] = PARK_SUFFIX
    meta: ClassVar[str] = LANE_META_SUFFIX
    hold: ClassVar[str] = HOLD_SUFFIX
    fast: ClassVar[str] = FAST_SUFFIX
    slots: ClassVar[str] = SLOTS_SUFFIX
    claim: ClassVar[str] = CLAIM_SUFFIX
    window: ClassVar[str] = WINDOW_SEPARATOR
    seq: ClassVar[str] = DEBOUNCE_SEQ_SUFFIX
    event: ClassVar[str] = DEBOUNCE_EVENT_SUFFIX
    event_claim: ClassVar[str] = DEBOUNCE_CLAIM_SUFFIX
    after: ClassVar[str] = DEBOUNCE_AFTER_SUFFIX
    watch: ClassVar[str] = DEBOUNCE_WATCH_SUFFIX
    take: ClassVar[str] = DEBOUNCE_TAKE_SUFFIX
    cut_of: ClassVar[str] = DEBOUNCE_CUT_SUFFIX
    ran: ClassVar[str] = DEBOUNCE_RAN_SUFFIX
    burst: ClassVar[str] = DEBOUNCE_BURST_SUFFIX

    @property
    def lock(self) -> str:
        return self.namespace + LOCK_PREFIX

    @property
    def index(self) -> str:
        return self.namespace + INDEX_PREFIX

    @property
    def stats(self) -> str:
        return self.namespace + STATS_PREFIX

    @property
    def done(self) -> str:
        return self.namespace + DONE_PREFIX

    @property
    def answer(self) -> str:
        return self.namespace + ANSWER_PREFIX

    @property
    def rate(self) -> str:
        return self.namespace + RATE_PREFIX

    @property
    def debounce(self) -> str:
        return self.namespace + DEBOUNCE_PREFIX

    def debounce_base(self, workflow_key: str, key: str) -> str:
        """The keys of one debounce key value start so (then `:seq`, `:ev:<n>`, …)."""
        return f"{self.debounce}{workflow_key}:{key}"

    @property
    def prefixes(self) -> tuple[str, ...]:
        """Every prefix of the namespace's keys (for ACL key patterns and SCAN)."""
        return (self.lock, self.rate, self.namespace + "n8nlock:")

    def lock_key(self, scope: str) -> str:
        return f"{self.lock}{scope}"

    def ticket_key(self, scope: str) -> str:
        return f"{self.lock}{scope}{TICKET_SUFFIX}"

    def served_key(self, scope: str, lane: int) -> str:
        return f"{self.lock}{scope}{SERVED_SUFFIX}{lane}"

    def lane_meta_key(self, scope: str, lane: int) -> str:
        return f"{self.lock}{scope}{LANE_META_SUFFIX}{lane}"

    def holder_key(self, scope: str, ticket: int) -> str:
        return f"{self.lock}{scope}{HOLDER_SUFFIX}{ticket}"

    def gone_key(self, scope: str, ticket: int) -> str:
        return f"{self.lock}{scope}{GONE_SUFFIX}{ticket}"

    def hold_key(self, scope: str) -> str:
        return f"{self.lock}{scope}{HOLD_SUFFIX}"

    def fast_key(self, scope: str) -> str:
        return f"{self.lock}{scope}{FAST_SUFFIX}"

    def stats_key(self, hour: str, metric: str, scope: str) -> str:
        return f"{self.stats}{hour}:{metric}:{scope}"

    def index_key(self, workflow_id: str, execution_id: str) -> str:
        return f"{self.index}{workflow_id}:{execution_id}"

    def done_key(self, scope: str) -> str:
        """A duplicate guard's mark of a success of the key whose scope this is."""
        return f"{self.done}{scope}"

    def answer_key(self, scope: str) -> str:
        """A replaying guard's stored answer of the success of the key whose scope this is."""
        return f"{self.answer}{scope}"

    def parse_key(self, key: str) -> tuple[str, str, int | None] | None:
        """(scope, kind, number) of a key under `lock`, or None for another prefix.

        Kinds: ticket, hold, fast, served/meta (number = lane), holder/gone/alive/park (number =
        ticket); any other name is `v1_counter` (scope = the whole name: format 1's counter was
        the bare scope; ops/compat.py tells its other keys apart). A scope may hold colons, so
        the kind is read from the end."""
        if not key.startswith(self.lock):
            return None
        name = key[len(self.lock) :]
        for suffix, kind in _SCALAR_KINDS.items():
            if name.endswith(suffix) and len(name) > len(suffix):
                return name[: -len(suffix)], kind, None
        head, colon, number = name.rpartition(":")
        if colon and number.isdigit() and number.isascii():
            for suffix, kind in _LANE_KINDS.items():
                scope = (head + colon).removesuffix(suffix)
                if len(scope) < len(head + colon) and scope:
                    return scope, kind, int(number)
        return (name, "v1_counter", None) if name else None

    def scan_pattern(self, scope: str) -> str:
        """A SCAN MATCH pattern for exactly `scope`'s keys: its glob characters escaped."""
        return f"{self.lock}{glob_escape(scope)}*"


def glob_escape(text: str) -> str:
    """`text` as a Redis glob that matches only itself."""
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


SCHEMA = KeySchema()  # no namespace: the keys of an env without keyPrefix
# The keys as generated nodes write them: the namespace is resolved per env at push time.
TEMPLATE_SCHEMA = KeySchema(NAMESPACE_PLACEHOLDER)


def dedupe_scope(workflow_key: str, key: str) -> str:
    """The scope of a duplicate guard's lock for one key value (of its key expression)."""
    return f"{DEDUPE_SCOPE_PREFIX}{workflow_key}-{key}"
