"""The statistics of the benchmarks: measured percentiles, medians, bootstrap intervals over
resampled rounds, and the ratio of what a workflow adds to what the floor adds."""

from __future__ import annotations

import functools
import math
import random
import statistics
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

BOOTSTRAP = 2000  # resamples of the rounds for an interval
PLAIN, FLOOR = "plain", "floor"  # the labels of the unwrapped workflow and of the floor
TARGET = 2.0  # added(lock) / added(floor) at most, issue 20
Figures = dict[str, Any]
Picks = Sequence[int]  # the round numbers of one resample (with repeats)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100): a value that was measured, not interpolated."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def median_p90(seconds: Sequence[float]) -> dict[str, float]:
    """Median and p90 of call times, in ms."""
    values = [s * 1000 for s in seconds]
    return {"median_ms": statistics.median(values), "p90_ms": percentile(values, 90)}


def resamples(count: int, times: int = BOOTSTRAP) -> Iterator[list[int]]:
    """`times` resamples of `count` rounds (drawn with repeats), the same on every run."""
    rng = random.Random(20)
    for _ in range(times):
        yield [rng.randrange(count) for _ in range(count)]


def interval(values: Sequence[float]) -> list[float]:
    """The 90 % interval: 5th and 95th percentile."""
    return [percentile(values, 5), percentile(values, 95)]


def bootstrap(statistic: Callable[[Picks], float], count: int) -> list[float]:
    """The 90 % interval of `statistic` over resamples of `count` rounds."""
    return interval([statistic(picks) for picks in resamples(count)])


def ratio(added: float, floor: float) -> float:
    """added / floor; infinite when the floor added nothing (too few rounds to tell)."""
    return added / floor if floor > 0 else math.inf


def added_ratio(ms: Mapping[str, Sequence[float]], label: str, picks: Picks) -> float:
    """added(label) / added(floor) over the rounds `picks`; added: median minus plain's."""

    def median(of: str) -> float:
        return statistics.median(ms[of][i] for i in picks)

    plain = median(PLAIN)
    return ratio(median(label) - plain, median(FLOOR) - plain)


def floor_latency(ms: Mapping[str, Sequence[float]], rated: Collection[str]) -> Figures:
    """Per workflow (label → ms per counted round, plain and floor among them): median, p90 and
    ms added over plain; for the `rated` labels also added / added(floor) with its 90 %
    interval from resampling the rounds (paired: one round's calls stay together)."""
    plain = statistics.median(ms[PLAIN])
    floor = statistics.median(ms[FLOOR]) - plain
    result: Figures = {}
    for label, values in ms.items():
        median = statistics.median(values)
        result[label] = {
            "median_ms": median,
            "p90_ms": percentile(values, 90),
            "added_ms": median - plain,
        }
        if label in rated:
            result[label]["floor_ratio"] = ratio(median - plain, floor)
            resampled = functools.partial(added_ratio, ms, label)
            result[label]["floor_ratio_90"] = bootstrap(resampled, len(ms[PLAIN]))
    return result
