"""Webhook calls with their timings: one call, a burst of calls at once, rounds of every
workflow (the first rounds warm n8n up: it compiles and caches on first use)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import requests

from testbed.endpoints import N8nInstance

WARM_UP = 5  # rounds before the counted ones
Body = dict[str, Any]
Label = TypeVar("Label", bound=Hashable)
# shuffled: a new random order each round, so that load on the machine hits all alike;
# mirrored: the given order, then reversed (A B, B A, ...); fixed: the given order every round
Order = Literal["shuffled", "mirrored", "fixed"]


@dataclass(frozen=True)
class Answer:
    seconds: float  # until the webhook answered
    response: requests.Response


def call(n8n: N8nInstance, path: str, body: Body) -> Answer:
    """POST `body` to the webhook at `path` (an error status raises)."""
    start = time.monotonic()
    response = requests.post(f"{n8n.base_url}/webhook/{path}", json=body, timeout=600)
    response.raise_for_status()
    return Answer(time.monotonic() - start, response)


def post(n8n: N8nInstance, path: str, body: Body) -> float:
    """Seconds until the webhook at `path` answered (an error status raises)."""
    return call(n8n, path, body).seconds


@dataclass(frozen=True)
class Burst:
    wall_seconds: float  # from the first call made to the last answer
    answers: list[Answer]  # in the order of the bodies


def burst(n8n: N8nInstance, path: str, bodies: Sequence[Body], workers: int | None = None) -> Burst:
    """A call per body to the webhook at `path`, `workers` at a time (default: all at once)."""
    started = time.monotonic()
    with ThreadPoolExecutor(workers or len(bodies)) as pool:
        answers = list(pool.map(lambda body: call(n8n, path, body), bodies))
    return Burst(time.monotonic() - started, answers)


def rounds(
    n8n: N8nInstance,
    calls: Mapping[Label, tuple[str, Callable[[int], Body]]],
    runs: int,
    *,
    warm_up: int = WARM_UP,
    order: Order = "shuffled",
    say: Callable[[str], None] | None = None,
) -> dict[Label, list[float]]:
    """Seconds per call of the `runs` counted rounds, after `warm_up` rounds; a round makes
    every call once: label → (webhook path, the body for round number n). Round i of every
    list is the same round. `say` hears of the progress every ten rounds."""
    listed = list(calls.items())
    timings: dict[Label, list[float]] = {label: [] for label, _ in listed}
    for number in range(warm_up + runs):
        if order == "shuffled":
            random.shuffle(listed)
        this_round = listed[::-1] if order == "mirrored" and number % 2 else listed
        for label, (path, body) in this_round:
            seconds = post(n8n, path, body(number))
            if number >= warm_up:
                timings[label].append(seconds)
        if say and (number + 1 == warm_up or (number + 1 - warm_up) % 10 == 0):
            say(f"round {number + 1} of {warm_up + runs} ({warm_up} to warm up)")
    return timings


def uncontended(
    n8n: N8nInstance, paths: Sequence[str], runs: int, scope: str
) -> dict[str, list[float]]:
    """Seconds per call of each bench workflow at `paths`: shuffled rounds, each path on a
    scope of its own (`<scope>-<path>`), holding 0 ms."""

    def body(path: str) -> Callable[[int], Body]:
        return lambda _: {"scope": f"{scope}-{path}", "hold_ms": 0}

    return rounds(n8n, {path: (path, body(path)) for path in paths}, runs)
