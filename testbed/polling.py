"""Waiting for a condition with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable


class WaitTimeout(TimeoutError):
    pass


def wait_for(
    condition: Callable[[], bool],
    *,
    timeout: float,
    interval: float = 0.25,
    what: str,
) -> float:
    """Poll `condition` until it is true; return the seconds waited or raise WaitTimeout."""
    start = time.monotonic()
    while not condition():
        waited = time.monotonic() - start
        if waited > timeout:
            raise WaitTimeout(f"{what}: not reached after {timeout:.0f} s")
        time.sleep(interval)
    return time.monotonic() - start
