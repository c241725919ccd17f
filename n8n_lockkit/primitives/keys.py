"""The Redis keys n8nlock's primitives write, as the operator commands read them.

Engine v2 is a ticket lock with N lanes, N = `--max-concurrent` (1: a mutex). Format 3 made
it stall-safe: the holder's record is per ticket, and a caller that entered late checks that
nobody skipped it (docs/lock-engine.md). Format 4, this one, keeps format 3's keys and decides
on them alone: a caller of format 1 or 2 is invisible to it, so `n8nlock push` drains those
before it brings format 4 (ops/drain.py). The scripts in `templates/js/` write every name from
`TEMPLATE_SCHEMA` below; `tests/e2e` proves the scripts and the operator commands agree.

Every kind of key, with its Redis type, TTL, writers, readers and meaning, is a row of
`KEY_KINDS` at the end of this module; docs/reference/keys.md is generated from it (`make
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
    def rate(self) -> str:
        return self.namespace + RATE_PREFIX

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


@dataclass(frozen=True)
class KeyKind:
    """One kind of key n8nlock writes, a row of docs/reference/keys.md.

    `name` is its anchor in the page; `pattern` the key, with `<prefix>` for the env's
    namespace and `<…>` for what varies; the rest is prose for people, naming the generated
    nodes as n8nlock names them.
    """

    name: str
    pattern: str
    redis_type: str
    ttl: str
    written_by: str
    read_by: str
    meaning: str


_NS = "<prefix>"
_SCOPE = f"{_NS}{LOCK_PREFIX}<scope>"
_RATE = f"{_NS}{RATE_PREFIX}<scope>"
_LEASE = f"the lock's TTL (the lease); {RELEASED_META_TTL_SECONDS} s once released"
_FREED_BY = "the cleanup handler, `n8nlock release`, `n8nlock reap`"

# A duplicate guard (add-dedupe) is a lock on the scope `dedupe-<workflow key>-<key>`: its
# `Dedupe …` nodes write the keys the `Lock …` nodes named here write.
KEY_KINDS: tuple[KeyKind, ...] = (
    KeyKind(
        "ticket",
        f"{_SCOPE}{TICKET_SUFFIX}",
        "string (integer)",
        "none",
        "INCR by every arrival (Lock Take Ticket), and again by a caller sent to the back of "
        "the line (after Lock Withdrawn)",
        "the arrival (its INCR's answer); `locks`, `reap --idle`, the drain check",
        "the last ticket drawn; a caller's ticket is also its fence. It must never go back "
        "while a caller is in line, so it has no TTL: `reap --idle` deletes it when nobody "
        "holds or waits, and the fence restarts at 1.",
    ),
    KeyKind(
        "served",
        f"{_SCOPE}{SERVED_SUFFIX}<k>",
        "string (integer)",
        "none",
        f"Lock Release, Lock Skip Head (after the head's `gone` mark), {_FREED_BY}",
        "Lock Read Line; `locks`, `reap`, the drain check",
        "the last ticket that left lane k (k = ticket mod N, N = max concurrent). Ticket t "
        "holds lane k when t = served + N; in a lane never served, its first ticket does.",
    ),
    KeyKind(
        "holder",
        f"{_SCOPE}{HOLDER_SUFFIX}<t>",
        "string (JSON)",
        _LEASE,
        f"Lock Hold (on entering), Lock Release, Lock Withdrawn, lock_renew, {_FREED_BY}",
        "Lock Read Line (the tickets around the lane's head), lock_release and lock_renew "
        "given a ticket, the cleanup handler; `locks`, `release`, `reap`",
        "ticket t's record, the one the engine decides on: `lock_id, scope, ticket, fence, "
        "slots, format, workflow_id, workflow_name, execution_id, locked_at, expires_at, "
        "ttl_seconds` (and `_ms` twins). A release overwrites it with `{released: true, "
        "ticket, lock_id, released_at}` (a withdrawal adds `withdrawn: true`). One key per "
        "ticket, so a write that comes late never overwrites another caller's record.",
    ),
    KeyKind(
        "meta",
        f"{_SCOPE}{LANE_META_SUFFIX}<k>",
        "string (JSON)",
        _LEASE,
        f"Lock Hold (just before the record), Lock Release, lock_renew, {_FREED_BY}",
        "lock_release and lock_renew called without a ticket, the cleanup handler (for the "
        "scopes in `lockScopes`); `locks`, `release`, `reap`, the drain check",
        "a copy of lane k's holder record, for the operator commands and releases without a "
        "ticket; the engine decides nothing on it. Format 2 kept the holder's record here.",
    ),
    KeyKind(
        "gone",
        f"{_SCOPE}{GONE_SUFFIX}<t>",
        "string",
        f"the lock's TTL, at least {GONE_MIN_TTL_SECONDS // 3600} h",
        "Lock Count Give-Up (a caller that times out or fails fast marks its own ticket), "
        "Lock Skip Leave (one turned away by `--on-busy skip` or `buffer-one`, likewise), "
        "Lock Skip Head (the caller behind, before it advances `served`), the cleanup handler "
        "(the ticket of a caller that died waiting)",
        "Lock Read Line (the head's mark), Lock Check Skipped (a caller that entered late "
        "reads its own); `reap --idle` (a mark keeps the scope)",
        "ticket t left the line. The caller behind skips a marked head at once, an unmarked "
        f"head that neither enters nor leaves after {SKIP_GRACE_SECONDS} s of watching. A "
        f"caller that wrote its record {SAFE_ENTRY_MS / 1000:g} s or more after drawing its "
        "ticket reads its own mark, and withdraws when it is there.",
    ),
    KeyKind(
        "alive",
        f"{_SCOPE}{ALIVE_SUFFIX}<t>",
        "string (ms)",
        f"{ALIVE_TTL_SECONDS} s",
        "Lock Enqueue (a waiter that has watched a quiet head for "
        f"{BEACON_AFTER_MS / 1000:g} s, with unmarked tickets between, at every look)",
        "Lock Read Line (the tickets between the head and the reader, during such a watch)",
        "ticket t waits in line and is alive: a caller behind it does not pass it as dead. A "
        f"caller that watched a quiet head {RUN_GRACE_MS / 1000:g} s passes the head and the "
        "unmarked tickets between without a beacon of the last "
        f"{ALIVE_FRESH_MS / 1000:g} s in one skip (their `gone` marks), instead of one "
        "grace each (n8n crashed with callers in line).",
    ),
    KeyKind(
        "park",
        f"{_SCOPE}{PARK_SUFFIX}<t>",
        "string (URL)",
        "the park's backstop and a minute",
        "Lock Enqueue (a waiter that parks lists its execution's resume URL before it parks; "
        "an empty value when it stays awake after all)",
        "Lock Read Line (the next in line reads the one behind it; a waiter reads those of "
        "the tickets it watches)",
        'ticket t parks (`add-lock-to-workflow --park`): its execution waits in a Wait "On '
        'Webhook Call" and holds no n8n concurrency slot. The next in line resumes it once '
        "(Lock Wake), so that it is awake when its turn comes; a waiter that watched a parked "
        "head quiet resumes it too. A head with this key is skipped only after the parked "
        "grace.",
    ),
    KeyKind(
        "hold_ms",
        f"{_SCOPE}{HOLD_SUFFIX}",
        "string (integer)",
        f"{HOLD_TTL_SECONDS // 86400} days from the last release",
        "Lock Release (SET: half the old average, half this hold); INCR by a mutex arrival "
        "that may wait (+1 per arrival until the next release)",
        "the arrival (its INCR's answer), Lock Read Line, lock_release; `reap --idle`",
        "the scope's average hold time in ms, so that waiters sleep until their expected "
        "turn instead of polling.",
    ),
    KeyKind(
        "fast",
        f"{_SCOPE}{FAST_SUFFIX}",
        "string (integer)",
        "none after a release; the lock's TTL after a holder's write (a holder that dies "
        "leaves no hint behind its lease)",
        f"a mutex's Lock Release (SET to {FAST_SCALE:,} × its ticket, after `served`), a "
        f"mutex's Lock Hold (SET to {FAST_SCALE:,} × (its ticket − 1) + {HELD_MARK:,} + its "
        f"entry time in ms mod {HELD_WRAP_MS:,}); INCR by every mutex arrival",
        "the arrival (its INCR's answer); `reap --idle` deletes it with the ticket",
        f"the fast path of a mutex: value // {FAST_SCALE:,} is a ticket that has left, never "
        "later than `served`, so an arrival whose ticket is the next one enters without "
        "reading the line; the rest tells arrivals when the holder entered. A stale value "
        "only sends callers the long way, as does a new scope (no value yet). Exact while "
        "fewer than 4 × 10⁷ callers arrive during one hold.",
    ),
    KeyKind(
        "exec",
        f"{_NS}{INDEX_PREFIX}<workflow id>:<execution id>",
        "hash: scope → JSON `{lock_id, ticket, slots, format}`",
        "the lock's TTL + 1 h (a waiter's entry: the larger of the TTL and the max wait + 1 h)",
        "Lock Enqueue (a waiter, before its first sleep), Lock Hold (the same node as the "
        "record), lock_renew",
        "error_handler_lock_cleanup (GET Execution Index)",
        "the cleanup index: the locks an execution holds or waits for, dynamic scopes "
        "included. Execution ids repeat across n8n instances sharing a Redis; the workflow id "
        "keeps them apart.",
    ),
    KeyKind(
        "stats",
        f"{_NS}{STATS_PREFIX}<yyyymmddhh>:<metric>:<scope>",
        "string (counter)",
        f"{STATS_TTL_SECONDS // 86400} days",
        "INCR by Lock Take Ticket, Lock Count Give-Up, Lock Count Skip, Lock Count Wait (and "
        "the guard's twins), the cleanup handler (Count Heals), `n8nlock release`, "
        "`n8nlock reap`",
        "`n8nlock stats`",
        "hourly counters per scope: `arrived` (every caller), `busy`, `timeout`, `skipped`, "
        "`duplicate`, `waited` and `wait_le_<bucket>` (buckets "
        f"{', '.join(f'{b:g}' for b in WAIT_BUCKETS)} s, `inf` above), `healed`, "
        "`force_released`, `reaped`, `crashed` (a caller that died in line, counted by the "
        "cleanup handler). Acquired = arrived − busy − timeout − skipped − duplicate − crashed.",
    ),
    KeyKind(
        "done",
        f"{_NS}{DONE_PREFIX}{DEDUPE_SCOPE_PREFIX}<workflow key>-<key>",
        "string (JSON `{execution_id, workflow_id, done_at}`)",
        "the guard's window",
        "a duplicate guard's release after a success (Dedupe Release), before it frees the line",
        "the guard's Dedupe Read Line (last, with the line); `n8nlock forget` (which deletes it)",
        "the key ran successfully: later callers of the key are turned away as duplicates "
        "until the window ends.",
    ),
    KeyKind(
        "slots",
        f"{_RATE}{SLOTS_SUFFIX}<W>",
        'hash: slot → "<generation>:<ms when it is free again>"',
        "W + the caller's max wait + the claim TTL + the margin + 1 s",
        "Rate Limit Commit (the won slots' next generation and time; a call that lost a "
        "claim gives its won slots back)",
        "Rate Limit Read",
        "a sliding limit of L calls per W seconds: L slots, each used at most once per W + "
        "the margin.",
    ),
    KeyKind(
        "claim",
        f"{_RATE}{SLOTS_SUFFIX}<W>{CLAIM_SUFFIX}<slot>:<generation>",
        "string (counter)",
        "the claim TTL",
        "INCR by Rate Limit Claim",
        "the claimer (its INCR's answer)",
        "a claim on one generation of one slot: the INCR that answers 1 wins it. A winner that "
        "died before writing the slot holds it until the claim expires.",
    ),
    KeyKind(
        "window",
        f"{_RATE}{WINDOW_SEPARATOR}<window number>",
        "string (counter)",
        "W",
        "INCR by Rate Limit Claim (a fixed window)",
        "Rate Limit Read",
        "a fixed window's count, window number = floor(now / W): the keys rate_limit_check "
        "counted in before it ran the sliding engine, so `algorithm: fixed` shares a budget "
        "with its old callers.",
    ),
)
