"""The catalogue of primitives n8nlock ships."""

from __future__ import annotations

from dataclasses import dataclass

from n8n_lockkit.errors import PrimitiveNotFound


@dataclass(frozen=True)
class Primitive:
    key: str
    display_name: str
    summary: str


LOCK_ACQUISITION = Primitive(
    "lock_acquisition",
    "n8nlock: Lock Acquisition",
    "ticket lock (FIFO, N slots): waits for its turn (or fails fast), max-wait deadline, fence",
)
LOCK_RELEASE = Primitive(
    "lock_release",
    "n8nlock: Lock Release",
    "verifies ownership from the lane's record and advances the line only on a match",
)
LOCK_RENEW = Primitive(
    "lock_renew",
    "n8nlock: Lock Renew",
    "extends a held lock's TTL while the caller still owns it; renewed: false with the reason",
)
ERROR_HANDLER = Primitive(
    "error_handler_lock_cleanup",
    "n8nlock: Error Handler Lock Cleanup",
    "Error Trigger workflow that releases every lock a failed execution held",
)
RATE_LIMIT = Primitive(
    "rate_limit_check",
    "n8nlock: Rate Limit Check",
    "the rate limit of add-rate-limit for direct callers: sliding (or fixed) window, cost, wait",
)

PRIMITIVES: dict[str, Primitive] = {
    p.key: p for p in (LOCK_ACQUISITION, LOCK_RELEASE, LOCK_RENEW, ERROR_HANDLER, RATE_LIMIT)
}


def get_primitive(name: str) -> Primitive:
    try:
        return PRIMITIVES[name]
    except KeyError:
        raise PrimitiveNotFound(
            f"unknown primitive {name!r}",
            hint="available primitives: " + ", ".join(PRIMITIVES),
        ) from None
