"""`n8nlock stats`: the hourly counters the primitives and these commands write, summed.

Keys are `n8nlock:stats:<yyyymmddhh>:<metric>:<scope>` (UTC hours, kept 8 days). Engine v2
counts `arrived` for every caller and `busy`/`timeout`/`skipped`/`duplicate` for those that
gave up or were turned away (--on-busy skip and buffer-one; add-dedupe), and the cleanup
handler `crashed` for each that died in line, so acquired = arrived minus those five. Only
callers that waited count `waited` and a histogram bucket
(`wait_le_<bound>`, or `wait_le_inf` above the last bound); those that did not wait belong to
the first bucket and are added there. A percentile is known only up to its bucket: the figure
shown is the bucket's upper bound, an upper-bound estimate.

The hours of an older format, which counted `acquired` itself (compat.format1_hours), are
summed as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from fnmatch import fnmatchcase
from typing import Any

from n8n_lockkit.ops import compat
from n8n_lockkit.ops.store import LockStore
from n8n_lockkit.primitives import keys

# What each counter counts, in the order they are shown.
EVENTS = {
    "acquired": "acquisitions (callers that arrived, minus those that gave up)",
    "waited": "acquisitions that had to wait",
    "timeout": "acquisitions that gave up at max wait",
    "busy": "fail-fast refusals of a held lock",
    "skipped": "callers skipped because the scope was busy (--on-busy skip, buffer-one)",
    "duplicate": "duplicates turned away by add-dedupe (skipped or failed)",
    "force_released": "locks freed by `n8nlock release --force`",
    "reaped": "locks freed by `n8nlock reap`",
    "healed": "locks freed by the cleanup handler after a failed execution",
    "crashed": "callers that died waiting in line, passed at once by the cleanup handler",
}
BUCKET_PREFIX = "wait_le_"
BOUNDS: tuple[float, ...] = (*keys.WAIT_BUCKETS, math.inf)
QUANTILES = (0.5, 0.9, 0.99)
_HOUR_DIGITS = 10


def bucket_label(bound: float) -> str:
    """The bucket's name in a key, as JavaScript prints the bound (`0.1`, `1`, `inf`)."""
    if math.isinf(bound):
        return "inf"
    return str(int(bound)) if float(bound).is_integer() else str(bound)


_BOUND_BY_LABEL = {bucket_label(bound): bound for bound in BOUNDS}


@dataclass
class ScopeStats:
    scope: str
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(EVENTS, 0))
    waits: dict[float, int] = field(default_factory=lambda: dict.fromkeys(BOUNDS, 0))
    arrived: int = 0  # engine v2's callers, whether they got the lock or gave up

    def quantile(self, q: float) -> float | None:
        """The upper bound of the bucket holding the q-quantile wait (inf above the last
        bound), or None without a measured wait."""
        total = sum(self.waits.values())
        if total == 0:
            return None
        rank = q * total
        seen = 0
        for bound in BOUNDS:
            seen += self.waits[bound]
            if seen >= rank:
                return bound
        return math.inf

    def cumulative(self) -> list[tuple[float, int]]:
        """(bound, acquisitions that waited at most that long), as a Prometheus histogram."""
        running, result = 0, []
        for bound in BOUNDS:
            running += self.waits[bound]
            result.append((bound, running))
        return result

    def as_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "arrived": self.arrived,
            **self.counts,
            "wait_seconds": {
                "buckets": {bucket_label(b): n for b, n in self.waits.items()},
                **{f"p{round(q * 100)}": json_bound(self.quantile(q)) for q in QUANTILES},
            },
        }


def json_bound(bound: float | None) -> float | str | None:
    """A bound as JSON allows it: `+Inf` (Prometheus's spelling) for the open bucket."""
    if bound is not None and math.isinf(bound):
        return "+Inf"
    return bound


def hours_back(now_ms: int, hours: int) -> set[str]:
    """The last `hours` UTC hour buckets, the current one included."""
    now = datetime.fromtimestamp(now_ms / 1000, tz=timezone.utc)
    return {(now - timedelta(hours=back)).strftime("%Y%m%d%H") for back in range(hours)}


def _parse(key: str, prefix: str) -> tuple[str, str, str] | None:
    hour, _, rest = key.removeprefix(prefix).partition(":")
    metric, _, scope = rest.partition(":")
    if len(hour) != _HOUR_DIGITS or not hour.isdigit() or not metric or not scope:
        return None
    return hour, metric, scope


def collect(store: LockStore, glob: str | None, hours: int, now_ms: int) -> list[ScopeStats]:
    """Per scope, the counters of the last `hours` hours, summed."""
    prefix = store.schema.stats
    pattern = f"{prefix}*:*:{glob or '*'}"
    wanted = hours_back(now_ms, hours)
    found: list[tuple[str, str, str, str]] = []
    for key in store.scan_keys(pattern):
        parsed = _parse(key, prefix)
        if parsed and parsed[0] in wanted and fnmatchcase(parsed[2], glob or "*"):
            found.append((key, *parsed))
    hourly: dict[str, dict[str, dict[str, int]]] = {}
    values = store.values([key for key, _, _, _ in found])
    for (_, hour, metric, scope), value in zip(found, values, strict=True):
        if value is None or not value.isdigit():
            continue  # not a counter n8nlock wrote
        counts = hourly.setdefault(scope, {}).setdefault(hour, {})
        counts[metric] = counts.get(metric, 0) + int(value)
    return [summed(scope, hourly[scope]) for scope in sorted(hourly)]


def summed(scope: str, hours: dict[str, dict[str, int]]) -> ScopeStats:
    """One scope's counters (yyyymmddhh -> metric -> count), summed over its hours."""
    entry = ScopeStats(scope)
    older = compat.format1_hours(hours)
    v2 = dict.fromkeys(
        ("arrived", "busy", "timeout", "skipped", "duplicate", "crashed", "waited"), 0
    )
    for hour, counts in hours.items():
        for metric, value in counts.items():
            label = metric.removeprefix(BUCKET_PREFIX)
            if metric in entry.counts:
                entry.counts[metric] += value
            elif metric.startswith(BUCKET_PREFIX) and label in _BOUND_BY_LABEL:
                entry.waits[_BOUND_BY_LABEL[label]] += value
        if hour not in older:
            for metric in v2:
                v2[metric] += counts.get(metric, 0)
    # Summed over the window, not per hour: a give-up may be counted an hour after its arrival.
    gave_up = v2["busy"] + v2["timeout"] + v2["skipped"] + v2["duplicate"] + v2["crashed"]
    acquired = max(0, v2["arrived"] - gave_up)
    entry.arrived = v2["arrived"]
    entry.counts["acquired"] += acquired
    entry.waits[BOUNDS[0]] += max(0, acquired - v2["waited"])
    return entry
