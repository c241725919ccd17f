"""The test bed a benchmark runs on, and how long and how loaded a part of its run was."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import testbed.n8n_process as n8n_process
from testbed.endpoints import N8nInstance, RedisEndpoint
from testbed.session import DEFAULT_VERSION, running_testbed
from testbed.settings import ENV_TOPOLOGY

API_KEY_VARIABLE = "N8N_API_KEY"  # the variable the workspaces' env `bench` reads the key from


@dataclass(frozen=True)
class Bed:
    """A running test bed: n8n, its Redis, and a temporary folder for the run's workspaces."""

    n8n: N8nInstance
    redis: RedisEndpoint
    tmp: Path


@contextlib.contextmanager
def running_bed(
    version: str = DEFAULT_VERSION,
    *,
    topology: str | None = None,
    n8n_settings: Mapping[str, str] | None = None,
    api_key_variable: str = API_KEY_VARIABLE,
) -> Iterator[Bed]:
    """A test bed of n8n `version` (installed and cached on first use), its API key in
    `api_key_variable` for the workspaces' push; everything goes on exit.

    `topology`: `single` or `queue` (default: as N8NLOCK_TEST_TOPOLOGY says); `n8n_settings`:
    more settings for n8n (N8N_LOG_LEVEL, ...).
    """
    if topology is not None:
        os.environ[ENV_TOPOLOGY] = topology
    with (
        n8n_settings_added(n8n_settings or {}),
        running_testbed(version) as (n8n, redis),
        tempfile.TemporaryDirectory(prefix="n8nlock-bench-") as tmp,
    ):
        os.environ[api_key_variable] = n8n.api_key
        yield Bed(n8n, redis, Path(tmp))


@contextlib.contextmanager
def n8n_settings_added(extra: Mapping[str, str]) -> Iterator[None]:
    """Start the test bed's n8n with `extra` settings: the test bed drops inherited N8N_*
    variables, so they go in through the settings it adds (testbed is not changed; the
    wrapper is undone on exit)."""
    original = n8n_process.n8n_settings

    def settings(version: str) -> dict[str, str]:
        return {**original(version), **extra}

    n8n_process.n8n_settings = settings
    try:
        yield
    finally:
        n8n_process.n8n_settings = original


@dataclass(frozen=True)
class Span:
    """A part of a run from its start: how long it has taken, and the machine's 1-minute load
    average at its start and now (other work on the machine slows every workflow alike, but
    widens the spread)."""

    started: float = field(default_factory=time.monotonic)
    load_before: float = field(default_factory=lambda: os.getloadavg()[0])

    def seconds(self) -> float:
        return time.monotonic() - self.started

    def load(self) -> list[float]:
        return [self.load_before, os.getloadavg()[0]]
