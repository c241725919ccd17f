"""`n8nlock stats -o prometheus`: the stats in Prometheus's text exposition format.

The figures are sums over a sliding window of hours, which go down as old hours drop out, so
they are gauges, not counters (a counter that decreases reads as a reset to `rate()`). The wait
histogram is a gauge per bucket with an `le` label, cumulative as Prometheus expects, so
`histogram_quantile(0.9, n8nlock_wait_le)` works on it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from prometheus_client import generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from n8n_lockkit.ops.debounce import KeyStats, window_hours
from n8n_lockkit.ops.stats import EVENTS, QUANTILES, ScopeStats


def le_label(bound: float) -> str:
    """An `le` label as Prometheus's own clients write it: `0.5`, `1.0`, `+Inf`."""
    return "+Inf" if math.isinf(bound) else repr(float(bound))


class StatsCollector(Collector):
    def __init__(
        self, stats: Sequence[ScopeStats], hours: int, debounced: Sequence[KeyStats] = ()
    ) -> None:
        self._stats = stats
        self._hours = hours
        self._debounced = debounced

    def collect(self) -> Iterator[Metric]:
        window = GaugeMetricFamily(
            "n8nlock_stats_window_hours", "Hours summed into the other n8nlock_ figures."
        )
        window.add_metric([], self._hours)
        yield window
        events = GaugeMetricFamily(
            "n8nlock_lock_events",
            f"Lock events per scope in the last {self._hours} h ("
            + "; ".join(f"{name}: {meaning}" for name, meaning in EVENTS.items())
            + ").",
            labels=["scope", "event"],
        )
        waits = GaugeMetricFamily(
            "n8nlock_wait_le",
            f"Acquisitions per scope in the last {self._hours} h that waited at most `le` s.",
            labels=["scope", "le"],
        )
        estimates = GaugeMetricFamily(
            "n8nlock_wait_seconds_upper_bound",
            "Upper-bound estimate of a wait quantile: the bound of the bucket it falls in.",
            labels=["scope", "quantile"],
        )
        for entry in self._stats:
            for event, count in entry.counts.items():
                events.add_metric([entry.scope, event], count)
            for bound, count in entry.cumulative():
                waits.add_metric([entry.scope, le_label(bound)], count)
            for q in QUANTILES:
                value = entry.quantile(q)
                if value is not None:
                    estimates.add_metric([entry.scope, str(q)], value)
        yield events
        yield waits
        yield estimates
        if self._debounced:
            yield from self._debounce()

    def _debounce(self) -> Iterator[Metric]:
        """Per workflow key, not per key value: a key is often a chat or a customer, too many
        for labels."""
        hours = window_hours(self._hours)
        events = GaugeMetricFamily(
            "n8nlock_debounce_events",
            f"Events add-debounce stored per workflow key in the last {hours} h (an event "
            "that drew its ticket again counts twice).",
            labels=["workflow_key"],
        )
        bursts = GaugeMetricFamily(
            "n8nlock_debounce_bursts",
            f"Bursts add-debounce cut per workflow key in the last {hours} h.",
            labels=["workflow_key"],
        )
        per_workflow: dict[str, tuple[int, int]] = {}
        for entry in self._debounced:
            seen = per_workflow.get(entry.where.workflow_key, (0, 0))
            per_workflow[entry.where.workflow_key] = (
                seen[0] + entry.events,
                seen[1] + entry.bursts,
            )
        for workflow_key, (event_count, burst_count) in sorted(per_workflow.items()):
            events.add_metric([workflow_key], event_count)
            bursts.add_metric([workflow_key], burst_count)
        yield events
        yield bursts


def exposition(stats: Sequence[ScopeStats], hours: int, debounced: Sequence[KeyStats] = ()) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StatsCollector(stats, hours, debounced))
    return generate_latest(registry).decode("utf-8")
