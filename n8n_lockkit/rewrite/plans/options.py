"""What a wrapping command was given, and the one rule for running it again.

An option that is not given (None) keeps what the workflow has; the word `default` (DEFAULT)
puts it back to its default; any other value replaces it. A flag is True (`--flag`), False
(`--no-flag`) or None (not given: kept). The `merged_*` functions apply that rule to the lock,
the duplicate guard and one rate limit; the `*_settings` functions give each as the mapping
that `-o json` shows and `setting_changes` compares, setting by setting. A value given on the
command line is checked here (its minimum, its expression form); a value kept from the file
is not checked again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from n8n_lockkit.errors import OptionError
from n8n_lockkit.primitives import keys, overlap
from n8n_lockkit.rewrite.wrapping.configs import ALGORITHMS, ON_DENIED, LockConfig, RateLimitConfig
from n8n_lockkit.rewrite.wrapping.scope import refuse_unbraced, unbraced_expression
from n8n_lockkit.workspace.plan import SettingChange

DEFAULT: Literal["default"] = "default"
Number = int | str | None  # "default" included
Word = str | None  # "default" included

# A lock's release and its renewals refuse within RELEASE_MARGIN_SECONDS of its expiry (they
# leave the lock to expire), so the body of a lock with a TTL this short would have about no
# time at all: 5 s leaves it 3 s.
MIN_TTL_SECONDS = 5
_TTL_HINT = (
    f"a lock's release and its renewals refuse within {keys.RELEASE_MARGIN_SECONDS} s of "
    f"its expiry, so a TTL under {MIN_TTL_SECONDS} s leaves the body no time: give the "
    "longest the body runs plus a margin (or `default`)"
)
LOCK_DEFAULTS = LockConfig(scope="")
RATE_DEFAULTS = RateLimitConfig(scope="", limit=1, window_seconds=1)
ON_DUPLICATE = ("skip", "error", "replay")
REPLAY_MAX_WAIT_SECONDS = 60  # how long a replaying guard's duplicate waits for the first run
GUARD_DEFAULTS = LockConfig(scope="", on_busy="skip")

T = TypeVar("T")


def _at_least(option: str, value: int, minimum: int, hint: str) -> int:
    if value < minimum:
        raise OptionError(f"--{option} must be at least {minimum}, not {value}", hint=hint)
    return value


def _one_of(option: str, value: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise OptionError(
            f"--{option} {value!r} is not one of {', '.join(choices)}",
            hint="pass one of them, or `default`",
        )
    return value


def _pick(given: object, current: object, defaults: object, name: str) -> Any:
    """The rule, for setting `name` of a part (`current`; None for a new part): not given
    keeps the current value (the default for a new part), `default` takes the default, and
    anything else is the new value."""
    if given is None:
        return getattr(defaults if current is None else current, name)
    if given == DEFAULT:
        return getattr(defaults, name)
    return given


def _needed(option: str, what: str, example: str) -> OptionError:
    return OptionError(f"--{option} is needed: {what}", hint=f"e.g. --{option} {example}")


@dataclass(frozen=True)
class LockOptions:
    """add-lock-to-workflow's options as given."""

    scope: str | None = None
    ttl_seconds: Number = None
    max_wait_seconds: Number = None
    on_busy: Word = None
    fail_fast: bool | None = None
    lock_on_error: bool | None = None
    renew_before: tuple[str, ...] | None = None  # () from --no-renew-before
    max_concurrent: Number = None
    via_subworkflow: bool | None = None
    park: bool | None = None


@dataclass(frozen=True)
class GuardOptions:
    """add-dedupe's options as given."""

    key_expression: str | None = None
    window_seconds: Number = None
    on_duplicate: Word = None
    ttl_seconds: Number = None
    max_answer_bytes: Number = None
    max_wait_seconds: Number = None


@dataclass(frozen=True)
class RateLimitOptions:
    """add-rate-limit's options as given."""

    scope: str | None = None
    limit: Number = None
    window_seconds: Number = None
    algorithm: Word = None
    on_denied: Word = None
    max_wait_seconds: Number = None
    cost: Word = None


TtlDefault = Callable[[], tuple[int, str]]


def _ttl(
    given: Number, current: LockConfig | None, default_ttl: TtlDefault, what: str
) -> tuple[int, str]:
    """The TTL and, when it came from the workflow's default, a note that says so."""
    if given is not None and given != DEFAULT:
        return _at_least("ttl-seconds", int(given), MIN_TTL_SECONDS, _TTL_HINT), ""
    if given is None and current is not None and current.ttl_seconds is not None:
        return current.ttl_seconds, ""
    ttl, source = default_ttl()
    return ttl, f"{what} TTL {ttl} s, from {source}"


def _on_busy(current: LockConfig | None, given: LockOptions) -> str:
    on_busy = given.on_busy
    if on_busy is not None and on_busy != DEFAULT:
        _one_of("on-busy", on_busy, overlap.ON_BUSY)
    if given.fail_fast and on_busy not in (None, "error"):
        raise OptionError(
            f"--fail-fast (--on-busy error) contradicts --on-busy {on_busy}",
            hint="give only one of them",
        )
    if given.fail_fast:
        on_busy = "error"
    elif given.fail_fast is False:
        if on_busy == "error":
            raise OptionError(
                "--no-fail-fast contradicts --on-busy error", hint="give only one of them"
            )
        if on_busy is None and current is not None and current.on_busy == "error":
            on_busy = DEFAULT
    return str(_pick(on_busy, current, LOCK_DEFAULTS, "on_busy"))


def merged_lock(
    current: LockConfig | None, given: LockOptions, default_ttl: TtlDefault, workflow: str
) -> tuple[LockConfig, str]:
    """The lock a run of add-lock-to-workflow leaves, and a note on where its TTL came from."""
    scope = given.scope
    if scope is not None:
        refuse_unbraced("--scope-expression", scope, "every execution would wait for one lock")
    elif current is None:
        raise _needed(
            "scope-expression",
            f"workflow {workflow!r} has no lock yet",
            "\"={{ 'order-' + $json.body.orderId }}\"",
        )
    ttl, note = _ttl(given.ttl_seconds, current, default_ttl, "lock")
    max_wait, max_concurrent = given.max_wait_seconds, given.max_concurrent
    if isinstance(max_wait, int):
        _at_least("max-wait-seconds", max_wait, 1, "for no wait at all use --on-busy error")
    if isinstance(max_concurrent, int):
        _at_least("max-concurrent", max_concurrent, 1, "1 is a plain lock: one at a time")
    kept = {
        name: _pick(getattr(given, name), current, LOCK_DEFAULTS, name)
        for name in (
            "max_wait_seconds",
            "lock_on_error",
            "renew_before",
            "max_concurrent",
            "park",
        )
    }
    config = LockConfig(
        scope=scope or (current.scope if current else ""),
        ttl_seconds=ttl,
        on_busy=_on_busy(current, given),
        via_subworkflow=_pick(given.via_subworkflow, current, LOCK_DEFAULTS, "via_subworkflow"),
        **kept,
    )
    return config, note


KEY_EFFECT = (
    "every execution after the first success would be turned away as a duplicate for the window"
)


def merged_guard(
    current: LockConfig | None,
    given: GuardOptions,
    default_ttl: TtlDefault,
    workflow: str,
    scope_of: Callable[[str], str],
) -> tuple[LockConfig, str]:
    """The duplicate guard a run of add-dedupe leaves (a lock on `scope_of(key)`), and a note
    on where its TTL came from."""
    key = given.key_expression
    if key is not None:
        refuse_unbraced("--key-expression", key, KEY_EFFECT)
    elif current is None or current.dedupe_key is None:
        raise _needed(
            "key-expression",
            f"workflow {workflow!r} has no duplicate guard yet",
            "'={{ $json.body.id }}'",
        )
    else:
        key = current.dedupe_key
    window = given.window_seconds
    if window == DEFAULT or (window is None and current is None):
        raise _needed(
            "window-seconds",
            "a duplicate guard's window has no default",
            "86400 (a day: how long a success turns its key's duplicates away)",
        )
    if isinstance(window, int):
        _at_least("window-seconds", window, 1, "how long a success turns duplicates away")
    on_duplicate = given.on_duplicate
    if on_duplicate is not None and on_duplicate != DEFAULT:
        _one_of("on-duplicate", on_duplicate, ON_DUPLICATE)
    max_bytes, max_wait = given.max_answer_bytes, given.max_wait_seconds
    if isinstance(max_bytes, int):
        _at_least("max-answer-bytes", max_bytes, 1, "how large an answer replay stores")
    if isinstance(max_wait, int):
        _at_least("max-wait-seconds", max_wait, 1, "how long a duplicate waits for the first run")
    ttl, note = _ttl(given.ttl_seconds, current, default_ttl, "duplicate guard")
    on_busy = _pick(on_duplicate, current, GUARD_DEFAULTS, "on_busy")
    for option, value, what in (
        ("max-answer-bytes", max_bytes, "caps the answers --on-duplicate replay stores"),
        ("max-wait-seconds", max_wait, "is how long a duplicate of --on-duplicate replay waits"),
    ):
        if value not in (None, DEFAULT) and on_busy != "replay":
            raise OptionError(
                f"--{option} {what}",
                hint=f"add --on-duplicate replay, or leave --{option} out",
            )
    guard = LockConfig(
        scope=scope_of(key),
        ttl_seconds=ttl,
        max_wait_seconds=_guard_max_wait(current, on_busy, max_wait),
        on_busy=on_busy,
        lock_on_error=True,
        dedupe_window_seconds=_pick(window, current, GUARD_DEFAULTS, "dedupe_window_seconds"),
        dedupe_key=key,
        max_answer_bytes=_pick(max_bytes, current, GUARD_DEFAULTS, "max_answer_bytes"),
    )
    return guard, note


def _guard_max_wait(current: LockConfig | None, on_busy: str, given: Number) -> int:
    """How long a duplicate waits for the first run: only a replaying guard's waits (`given`,
    else what it had, else 60 s); another guard's turns it away at once (the lock's default
    stands, unused)."""
    if on_busy == "replay" and isinstance(given, int):
        return given
    kept = current is not None and (current.on_busy == "replay") == (on_busy == "replay")
    if given != DEFAULT and current is not None and kept:
        return current.max_wait_seconds
    return REPLAY_MAX_WAIT_SECONDS if on_busy == "replay" else LOCK_DEFAULTS.max_wait_seconds


def _rate_index(limits: Sequence[RateLimitConfig], scope: str | None, workflow: str) -> int | None:
    """Which limit the run changes: the one of its scope (or the one whose scope is `scope`
    typed without ={{ }}: a re-run with the fixed form repairs it), the only one when no scope
    is given; None for a new limit."""
    if scope is None:
        if len(limits) == 1:
            return 0
        if not limits:
            raise _needed("scope-expression", f"workflow {workflow!r} has no rate limit yet", "api")
        raise OptionError(
            f"workflow {workflow!r} has {len(limits)} rate limits; say which one to change",
            hint="pass --scope-expression with one of: " + ", ".join(repr(r.scope) for r in limits),
        )
    for index, limit in enumerate(limits):
        if limit.scope == scope:
            return index
    for index, limit in enumerate(limits):
        if unbraced_expression(limit.scope) == scope:
            return index
    return None


def merged_rate(
    limits: Sequence[RateLimitConfig], given: RateLimitOptions, workflow: str
) -> tuple[int | None, RateLimitConfig]:
    """The limit a run of add-rate-limit leaves, and the index of the one it replaces (None:
    it adds a limit)."""
    if given.scope is not None:
        refuse_unbraced(
            "--scope-expression", given.scope, "every execution would count in one budget"
        )
    if given.cost is not None and given.cost != DEFAULT:
        refuse_unbraced(
            "--cost-expression",
            given.cost,
            "a cost is a number or an expression",
            text_allowed=False,
        )
    index = _rate_index(limits, given.scope, workflow)
    current = limits[index] if index is not None else None
    for option, value, example, meaning in (
        ("limit", given.limit, "10", "how many calls (units of cost) one window allows"),
        ("window-seconds", given.window_seconds, "60", "how long one window is, in seconds"),
    ):
        if current is None and value is None:
            raise _needed(option, "a new rate limit has no default for it", example)
        if value == DEFAULT:
            raise OptionError(f"--{option} has no default", hint=f"e.g. --{option} {example}")
        if isinstance(value, int):
            _at_least(option, value, 1, f"give {meaning}, e.g. --{option} {example}")
    if isinstance(given.max_wait_seconds, int):
        _at_least(
            "max-wait-seconds", given.max_wait_seconds, 1, "for no wait use --on-denied error"
        )
    for option, word, choices in (
        ("algorithm", given.algorithm, ALGORITHMS),
        ("on-denied", given.on_denied, ON_DENIED),
    ):
        if word is not None and word != DEFAULT:
            _one_of(option, word, choices)
    names = ("limit", "window_seconds", "on_denied", "algorithm", "cost", "max_wait_seconds")
    kept = {name: _pick(getattr(given, name), current, RATE_DEFAULTS, name) for name in names}
    scope = given.scope or (current.scope if current else "")
    return index, RateLimitConfig(scope=scope, **kept)


def lock_settings(lock: LockConfig | None) -> dict[str, Any] | None:
    if lock is None:
        return None
    return {
        "scope": lock.scope,
        "ttl_seconds": lock.ttl_seconds,
        "max_wait_seconds": lock.max_wait_seconds,
        "on_busy": lock.on_busy,
        "max_concurrent": lock.max_concurrent,
        "lock_on_error": lock.lock_on_error,
        "renew_before": list(lock.renew_before),
        "via_subworkflow": lock.via_subworkflow,
        "park": lock.park,
    }


def guard_settings(guard: LockConfig | None) -> dict[str, Any] | None:
    if guard is None:
        return None
    return {
        "key_expression": guard.dedupe_key,
        "window_seconds": guard.dedupe_window_seconds,
        "on_duplicate": guard.on_busy,
        "ttl_seconds": guard.ttl_seconds,
        **(
            {"max_wait_seconds": guard.max_wait_seconds, "max_answer_bytes": guard.max_answer_bytes}
            if guard.on_busy == "replay"
            else {}
        ),
    }


def rate_settings(rate: RateLimitConfig) -> dict[str, Any]:
    return {
        "scope": rate.scope,
        "limit": rate.limit,
        "window_seconds": rate.window_seconds,
        "algorithm": rate.algorithm,
        "on_denied": rate.on_denied,
        "max_wait_seconds": rate.max_wait_seconds,
        "cost_expression": rate.cost,
    }


def setting_changes(
    subject: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> list[SettingChange]:
    """What changed between two settings of one part: the whole part when it is new or goes,
    else one change per setting."""
    if before == after:
        return []
    if before is None or after is None:
        return [SettingChange(subject, "", before, after)]
    return [
        SettingChange(subject, name, before.get(name), value)
        for name, value in after.items()
        if before.get(name) != value
    ]
