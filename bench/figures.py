"""lock_bench's figures from n8n's saved executions (bench.harness.runs reads them): each lock
design reduces an execution to a `Holder` (when it lined up, when its body started, when it gave
the lock back, and what its acquire cost), and the holders to handoff gaps, overtakes, the
clients' spread and the Redis load of waiting.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bench.harness.runs import (
    BODY,
    Execution,
    end,
    named,
    redis_runs,
    run_data,
    start,
    sub_execution_id,
)
from bench.harness.stats import percentile


@dataclass(frozen=True)
class Holder:
    """One execution that held the lock.

    `order` is its place in line as the design defines it (v2: the ticket it drew; seed: the
    time it started to acquire), `lined_up_ms` when it started to acquire, `entered_ms` when
    its body's first node started, `released_ms` when the lock was free again, `waited` whether
    it slept before entering, `acquire_redis_runs` the Redis node executions of its acquire.
    """

    execution_id: str
    order: float
    lined_up_ms: float
    entered_ms: float
    released_ms: float
    waited: bool
    acquire_redis_runs: int


def v2_holder(execution: Execution, body: str = BODY) -> Holder:
    """Engine v2 inline: the ticket is the output of Lock Take Ticket (key `…:ticket`), the
    lock is free once the Lock Release SET node has run."""
    # One item per INCR of its first run; which one is the ticket depends on the format.
    items = run_data(execution)[named(execution, "Lock Take Ticket")][0]["data"]["main"][0]
    ticket = next(v for i in items for k, v in i["json"].items() if k.endswith(":ticket"))
    entered = start(execution, body)
    return Holder(
        execution_id=str(execution["id"]),
        order=float(ticket),
        lined_up_ms=start(execution, named(execution, "Lock Context")),
        entered_ms=entered,
        released_ms=end(execution, named(execution, "Lock Release")),
        waited=bool(named(execution, "Lock Sleep")),
        acquire_redis_runs=len(redis_runs(execution, entered)),
    )


def seed_holder(execution: Execution, subs: Mapping[str, Execution], body: str = BODY) -> Holder:
    """The seed's sub-workflow form: Lock Acquire and Lock Release call the primitives; the
    wait loop and its Redis nodes run in the acquisition's execution, and the lock is free
    once the release's DEL Lock Counter has run."""
    acquisition = subs[sub_execution_id(execution, "Lock Acquire")]
    release = subs[sub_execution_id(execution, "Lock Release")]
    lined_up = start(execution, "Lock Acquire")
    return Holder(
        execution_id=str(execution["id"]),
        order=lined_up,
        lined_up_ms=lined_up,
        entered_ms=start(execution, body),
        released_ms=end(release, "DEL Lock Counter"),
        waited="Wait Before Poll" in run_data(acquisition),
        acquire_redis_runs=len(redis_runs(acquisition)),
    )


def holder(execution: Execution, subs: Mapping[str, Execution], body: str = BODY) -> Holder:
    """Either form: the engine's nodes inline, or Execute Workflow calls of the primitives."""
    if named(execution, "Lock Take Ticket"):
        return v2_holder(execution, body)
    return seed_holder(execution, subs, body)


@dataclass(frozen=True)
class Handoff:
    gaps_ms: list[float]  # release of holder i → body start of holder i+1, in entering order
    overlaps: int  # a body that started before its predecessor released

    @property
    def median_ms(self) -> float:
        return statistics.median(self.gaps_ms) if self.gaps_ms else math.nan

    @property
    def p99_ms(self) -> float:
        return percentile(self.gaps_ms, 99) if self.gaps_ms else math.nan


def handoff(holders: Iterable[Holder]) -> Handoff:
    line = sorted(holders, key=lambda h: h.entered_ms)
    gaps = [b.entered_ms - a.released_ms for a, b in itertools.pairwise(line)]
    return Handoff(gaps, sum(1 for gap in gaps if gap < 0))


@dataclass(frozen=True)
class Order:
    inverted: int  # pairs served against their order in line
    comparable: int  # pairs that were in line together (either could have gone first)

    @property
    def fraction(self) -> float:
        return self.inverted / self.comparable if self.comparable else 0.0


def service_order(holders: Sequence[Holder]) -> Order:
    """Overtakes among executions that waited together: a pair counts when each lined up
    before the other entered; it is inverted when the later in line entered first."""
    inverted = comparable = 0
    for i, a in enumerate(holders):
        for b in holders[i + 1 :]:
            if max(a.lined_up_ms, b.lined_up_ms) >= min(a.entered_ms, b.entered_ms):
                continue
            comparable += 1
            if (a.order < b.order) != (a.entered_ms < b.entered_ms):
                inverted += 1
    return Order(inverted, comparable)


def spread(counts: Sequence[int]) -> float:
    """max/min of the clients' completions (inf when a client finished nothing)."""
    return max(counts) / min(counts) if min(counts) > 0 else math.inf


def redis_per_wait_second(holders: Iterable[Holder], uncontended_runs: float) -> float:
    """Redis node executions that waiting added (beyond an uncontended acquire's), per second
    waited, over the executions that waited."""
    waiters = [h for h in holders if h.waited]
    seconds = sum(h.entered_ms - h.lined_up_ms for h in waiters) / 1000
    extra = sum(h.acquire_redis_runs - uncontended_runs for h in waiters)
    return extra / seconds if seconds > 0 else math.nan
