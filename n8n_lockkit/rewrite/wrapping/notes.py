"""What the sticky notes around n8nlock's nodes say: what the block is, how to change or
remove it. Markdown, as n8n's sticky notes render it.

Example:
    >>> print(restore((), LockConfig("orders")))
    **n8nlock**: waits for the lock, then hands the body the trigger's items.
"""

from __future__ import annotations

from n8n_lockkit.rewrite.wrapping.configs import LockConfig, RateLimitConfig

LOCK_NOTE = "n8nlock · Lock"
DEDUPE_NOTE = "n8nlock · Duplicate Guard"
RATE_NOTE = "n8nlock · Rate Limit"
RELEASE_NOTE = "n8nlock · Lock Release"
RESTORE_NOTE = "n8nlock · Waits Here"
RENEW_NOTE = "n8nlock · Lock Renewal ({target})"
HAND_EDITS = "n8nlock rewrites these nodes: change them with its commands, not by hand."


def code(text: object) -> str:
    """`text` as inline code (a backtick inside would end it early)."""
    return "`" + str(text).replace("`", "'") + "`"


def _scope(scope: str) -> str:
    return code(scope[1:] if scope.startswith("=") else scope)


def dedupe(key: str, config: LockConfig) -> str:
    duplicates = (
        "fail with a message that names the key"
        if config.on_busy == "error"
        else 'end at once with a skipped answer (`"reason": "duplicate"`)'
    )
    return "\n".join(
        [
            f"## Duplicate guard on {_scope(config.dedupe_key or config.scope)}",
            f"The first execution with a key runs the body; the others with that key that start "
            f"while it runs, or within {config.dedupe_window_seconds} s after it succeeded, "
            f"{duplicates}. A failed execution frees its key at once (the cleanup handler).",
            f"**Change**: `n8nlock add-dedupe --workflow-key {key}` with other flags. "
            f"**Remove**: `n8nlock unwrap --workflow-key {key} --only dedupe`. {HAND_EDITS}",
        ]
    )


def lock(key: str, config: LockConfig) -> str:
    if config.dedupe:
        return dedupe(key, config)
    at_once = (
        "one at a time" if config.max_concurrent == 1 else f"{config.max_concurrent} at a time"
    )
    waits = {
        "error": "the others fail at once",
        "skip": "the others end at once with a skipped answer",
        "buffer-one": "one more waits here for its turn, the others end at once with a "
        "skipped answer",
    }.get(
        config.on_busy,
        f"the others wait here in arrival order, up to {config.max_wait_seconds} s",
    )
    return "\n".join(
        [
            f"## Lock on {_scope(config.scope)}",
            f"Executions with the same scope run the body {at_once}; {waits}. A lock whose "
            f"execution never releases it frees itself after {config.ttl_seconds} s.",
            f"**Change**: `n8nlock add-lock-to-workflow --workflow-key {key}` with other flags. "
            f"**Remove**: `n8nlock unwrap --workflow-key {key} --only lock`. {HAND_EDITS}",
        ]
    )


def rate(key: str, rates: tuple[RateLimitConfig, ...]) -> str:
    limits = "; ".join(
        f"{r.limit} per {r.window_seconds} s on {_scope(r.scope)} ({r.algorithm}, "
        f"{'waits for its turn' if r.on_denied == 'wait' else 'denied: ' + r.on_denied})"
        for r in rates
    )
    return "\n".join(
        [
            f"## Rate limit: {limits}",
            "A call over the limit does not reach the body or the lock.",
            f"**Change**: `n8nlock add-rate-limit --workflow-key {key}` with other numbers. "
            f"**Remove**: `n8nlock unwrap --workflow-key {key} --only rate-limit`. {HAND_EDITS}",
        ]
    )


def release(key: str, lock: bool = True, guard: LockConfig | None = None) -> str:
    if guard is None:
        return "\n".join(
            [
                "## Lock release",
                "Runs once every branch of the body has ended, and frees the lock for the next "
                "execution. An execution that fails before it leaves the lock to "
                "`--lock-on-error` or its TTL.",
                f"**Remove** the lock: `n8nlock unwrap --workflow-key {key} --only lock`",
            ]
        )
    freed = "the lock, then the duplicate guard's key" if lock else "the duplicate guard's key"
    return "\n".join(
        [
            "## Lock and duplicate guard release" if lock else "## Duplicate guard release",
            f"Runs once the execution ends without failing, and frees {freed}. When the body "
            f"ran, the key stays used for {guard.dedupe_window_seconds} s; when it did not "
            "(the rate limit denied it, the lock skipped it), the key is free again at once. A "
            "failed execution's locks are freed by the cleanup handler.",
            f"**Remove** the guard: `n8nlock unwrap --workflow-key {key} --only dedupe`",
        ]
    )


def restore(
    rates: tuple[RateLimitConfig, ...], lock: LockConfig | None, guard: LockConfig | None = None
) -> str:
    steps = (("the duplicate guard", guard), ("the rate limit", rates), ("the lock", lock))
    waits = " and ".join(what for what, present in steps if present)
    return f"**n8nlock**: waits for {waits}, then hands the body the trigger's items."


def renew(key: str, target: str, config: LockConfig) -> str:
    return "\n".join(
        [
            f"## Lock renewal before {code(target)}",
            f"Each time {code(target)} is about to run, this renews the lock to a full "
            f"{config.ttl_seconds} s first, or stops the execution when the lock is no longer its "
            "own (it expired, or an operator freed it).",
            f"**Change**: `n8nlock add-lock-to-workflow --workflow-key {key}` with other "
            f"`--renew-before` nodes. {HAND_EDITS}",
        ]
    )
