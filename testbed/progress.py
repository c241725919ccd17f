"""Progress lines for slow steps (installs take minutes; CI logs should show why)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

Progress = Callable[[str], None]


def stderr_progress(message: str) -> None:
    print(f"[n8nlock testbed] {message}", file=sys.stderr, flush=True)


def format_duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} min {rest:02d} s"


class Stopwatch:
    """Seconds since creation, for the timings the progress lines report."""

    def __init__(self) -> None:
        self._start = time.monotonic()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._start

    def __str__(self) -> str:
        return format_duration(self.elapsed)
