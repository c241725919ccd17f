"""Every kind of key n8nlock writes, with its Redis type, TTL, writers, readers and meaning:
the rows of docs/reference/keys.md (`make docs-reference`, scripts/gen_key_reference.py). The
names and numbers themselves are `keys.py`'s."""

from __future__ import annotations

from dataclasses import dataclass

from n8n_lockkit.primitives.keys import (
    ALIVE_FRESH_MS,
    ALIVE_SUFFIX,
    ALIVE_TTL_SECONDS,
    ANSWER_PREFIX,
    BEACON_AFTER_MS,
    CLAIM_SUFFIX,
    DEBOUNCE_AFTER_SUFFIX,
    DEBOUNCE_BURST_SUFFIX,
    DEBOUNCE_CLAIM_SUFFIX,
    DEBOUNCE_CUT_SUFFIX,
    DEBOUNCE_EVENT_SUFFIX,
    DEBOUNCE_PREFIX,
    DEBOUNCE_RAN_SUFFIX,
    DEBOUNCE_SEQ_SUFFIX,
    DEBOUNCE_STALE_MS,
    DEBOUNCE_TAKE_SUFFIX,
    DEBOUNCE_TTL_SECONDS,
    DEBOUNCE_WATCH_SUFFIX,
    DEDUPE_SCOPE_PREFIX,
    DONE_PREFIX,
    FAST_SCALE,
    FAST_SUFFIX,
    GONE_MIN_TTL_SECONDS,
    GONE_SUFFIX,
    HELD_MARK,
    HELD_WRAP_MS,
    HOLD_SUFFIX,
    HOLD_TTL_SECONDS,
    HOLDER_SUFFIX,
    INDEX_PREFIX,
    LANE_META_SUFFIX,
    LOCK_PREFIX,
    PARK_SUFFIX,
    RATE_PREFIX,
    RELEASED_META_TTL_SECONDS,
    RUN_GRACE_MS,
    SAFE_ENTRY_MS,
    SERVED_SUFFIX,
    SKIP_GRACE_SECONDS,
    SLOTS_SUFFIX,
    STATS_PREFIX,
    STATS_TTL_SECONDS,
    TICKET_SUFFIX,
    WAIT_BUCKETS,
    WINDOW_SEPARATOR,
)


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
_DEBOUNCE = f"{_NS}{DEBOUNCE_PREFIX}<workflow key>:<key>"
_DEBOUNCE_TTL = f"{DEBOUNCE_TTL_SECONDS} s from its last write"
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
        "Lock Wake Read (a release reads the one two behind it), Lock Read Line (a waiter "
        "reads the one behind it and those of the tickets it watches)",
        "ticket t parks (`add-lock-to-workflow`'s default): its execution waits in a Wait "
        '"On Webhook Call" and holds no n8n concurrency slot. The release of ticket t - 2 (in '
        "its lane) resumes it (Lock Wake Next), so that it is awake when its turn comes; a "
        "waiter that skipped the head before it resumes the one behind it as it enters, and a "
        "waiter that watched a parked head quiet resumes it too. A head with this key is "
        "skipped only after the parked grace.",
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
        "answer",
        f"{_NS}{ANSWER_PREFIX}{DEDUPE_SCOPE_PREFIX}<workflow key>-<key>",
        "string (JSON `{status, content_type, body, execution_id}`, or `{too_large, bytes, "
        "cap, execution_id}`)",
        "the guard's window",
        "a replaying guard (`--on-duplicate replay`): Dedupe Store Answer, when the first "
        "run's webhook is answered",
        "the guard's Dedupe Replay Read (a duplicate's answer); `n8nlock forget` (which "
        "deletes it)",
        "what the first run of the key answered its webhook: its duplicates get the same "
        "status, content type and body until the window ends.",
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
    KeyKind(
        "debounce-seq",
        f"{_DEBOUNCE}{DEBOUNCE_SEQ_SUFFIX}",
        "string (integer)",
        _DEBOUNCE_TTL,
        "INCR by every event (Debounce Take Ticket) and each burst's cut (Debounce Cut)",
        "those INCRs' answers; the waiter (Debounce Read Seq)",
        "the key's sequence: every event is before a cut (in its burst) or after (the next).",
    ),
    KeyKind(
        "debounce-event",
        f"{_DEBOUNCE}{DEBOUNCE_EVENT_SUFFIX}<n>",
        "string (JSON `{at, items}`)",
        _DEBOUNCE_TTL,
        "event n (Debounce Store Event)",
        "the waiter (Debounce Read Last), the runner (Debounce Read Events)",
        "one event's trigger items and when it was stored; nobody else writes it.",
    ),
    KeyKind(
        "debounce-claims",
        f"{_DEBOUNCE}{DEBOUNCE_CLAIM_SUFFIX}<n>",
        "list (of marks)",
        _DEBOUNCE_TTL,
        "RPUSH of `e` by event n after it stored (Debounce Claim) and of `r` by every runner "
        "whose burst holds n (Debounce Claim Events); EXPIRE after each (Debounce Claim Expire, "
        "Debounce Claims Expire)",
        "the same parties (Debounce Read Claim, Debounce Read Claims)",
        "the first mark decides for everyone: `e`, the burst's runners take the event; `r`, "
        "a runner passed the ticket first and the event draws again.",
    ),
    KeyKind(
        "debounce-after",
        f"{_DEBOUNCE}{DEBOUNCE_AFTER_SUFFIX}<t>",
        "string (counter)",
        _DEBOUNCE_TTL,
        "INCR by event t + 1 (Debounce After) and every runner of the cut t, right before "
        "its body (Debounce Ran)",
        "those INCRs' answers",
        "who waits for the next burst: the one whose INCR answers 2.",
    ),
    KeyKind(
        "debounce-watch",
        f"{_DEBOUNCE}{DEBOUNCE_WATCH_SUFFIX}",
        "string (JSON `{s, at, first_at}`)",
        _DEBOUNCE_TTL,
        "the waiter of burst s at every look (Debounce Beacon); the runner of the burst before "
        "whose own draw is its cut, or that took it over (Debounce Pass)",
        "every event that does not wait (Debounce Read Watch)",
        f"which burst is open and when its waiter last looked: older than {DEBOUNCE_STALE_MS} "
        "ms, the next event takes the burst over.",
    ),
    KeyKind(
        "debounce-take",
        f"{_DEBOUNCE}{DEBOUNCE_TAKE_SUFFIX}<s>:<slot>",
        "string (counter)",
        _DEBOUNCE_TTL,
        "INCR by each event that found burst s's watch stale (or no watch: s = 1) in the same "
        f"{DEBOUNCE_STALE_MS} ms slot of its clock (Debounce Take Over)",
        "those INCRs' answers",
        "of the events that found burst s's waiter silent (or the key's first burst without a "
        "watch) in one slot, the one whose INCR answers 1 waits for it; a taker that died "
        "before its first look is taken over in a later slot.",
    ),
    KeyKind(
        "debounce-cuts",
        f"{_DEBOUNCE}{DEBOUNCE_CUT_SUFFIX}<s>",
        "list (of tickets)",
        _DEBOUNCE_TTL,
        "RPUSH by each waiter of burst s of the ticket its cut drew (Debounce Cut Log), and "
        "of the cut again by each runner (Debounce Claim Events); EXPIRE after",
        "the same waiters (Debounce Read Cuts)",
        "the burst's cut is the list's first entry, for every waiter that cut it, one back "
        "from a stall, or one finishing the cut of a runner that died.",
    ),
    KeyKind(
        "debounce-burst",
        f"{_DEBOUNCE}{DEBOUNCE_BURST_SUFFIX}<c>",
        "string (JSON `{s, tickets}`)",
        _DEBOUNCE_TTL,
        "every runner of the cut c, before it meets the next burst (Debounce Pass)",
        "later runners (Debounce Read Walk)",
        "the tickets the burst cut at c runs, for a later runner to run should every runner of "
        "this one die before its body.",
    ),
    KeyKind(
        "debounce-ran",
        f"{_DEBOUNCE}{DEBOUNCE_RAN_SUFFIX}<c>",
        "string (counter)",
        _DEBOUNCE_TTL,
        "INCR right before the body (Debounce Ran) by every runner of the cut c, and by "
        "every later runner whose walk (Debounce Read Walk) found it unset",
        "those INCRs' answers; later runners (Debounce Read Walk)",
        "who runs the burst cut at c: of all that INCR it, the one answered 1 (a later runner "
        "runs it ahead of its own when the burst's runners died, failed or stalled before "
        "their body).",
    ),
)
