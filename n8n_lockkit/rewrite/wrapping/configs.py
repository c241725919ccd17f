"""What a wrapped workflow was wrapped with: the lock's and the rate limits' settings.

`wrap` writes them into the nodes it adds and `unwrap.read_configs` reads them back, so a
re-run with the same flags changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from n8n_lockkit.errors import LockkitError
from n8n_lockkit.primitives import rate

LOCK_SHIFT = 440  # the sub-workflow form: Lock Acquire, Lock Restore Items
INLINE_LOCK_SHIFT = 220  # the inline form: Lock Restore (its acquire chain sits above)
RATE_SHIFT = 660  # the form before the inline rate limit: Rate Limit (a sub-workflow call) …
INLINE_RATE_SHIFT = 220  # the inline form: Rate Limit Restore (its chain sits above)
CONFIG_MARK = "\nconfig: "  # on Lock Context: the flags the inline lock was made with
ON_DENIED = rate.ON_DENIED
ALGORITHMS = ("sliding", "fixed")


@dataclass(frozen=True)
class LockConfig:
    scope: str
    ttl_seconds: int | None = 86400  # None: add-lock-to-workflow picks it from the workflow
    max_wait_seconds: int = 86400
    # wait | error (--fail-fast) | skip | buffer-one (engine.ON_BUSY); a guard's may be replay
    on_busy: str = "wait"
    lock_on_error: bool = False
    renew_before: tuple[str, ...] = ()  # body nodes that renew the lock before they run
    max_concurrent: int = 1  # N > 1: a semaphore of N slots
    via_subworkflow: bool = False  # call the lock_acquisition / lock_release primitives
    # add-dedupe: a duplicate guard is this lock on the key's scope, with on_busy skip (or
    # error) and a mark of each success that turns the key away for the window.
    dedupe_window_seconds: int | None = None
    dedupe_key: str | None = None  # the key expression as the user gave it
    # Waiters far back in line park (engine.acquire(parks=True)): they hold no n8n capacity.
    park: bool = False
    # add-dedupe --on-duplicate replay: a larger answer is not stored (replay.py).
    max_answer_bytes: int = 65536

    @property
    def dedupe(self) -> bool:
        return self.dedupe_window_seconds is not None

    @property
    def shift(self) -> int:
        return LOCK_SHIFT if self.via_subworkflow else INLINE_LOCK_SHIFT


@dataclass(frozen=True)
class RateLimitConfig:
    scope: str
    limit: int
    window_seconds: int
    on_denied: str = "passthrough"
    algorithm: str = "sliding"  # a workflow wrapped before sliding existed reads back as fixed
    cost: str = "1"  # units one execution spends: a number or an n8n expression
    max_wait_seconds: int = 300  # on_denied wait: how long a call may wait for its place


# One rate limit, or several composed (each its own scope), as read_configs gives them back.
Rates = RateLimitConfig | tuple[RateLimitConfig, ...] | None


class WrapError(LockkitError):
    """The workflow cannot be wrapped as asked."""
