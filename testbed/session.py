"""The test bed outside pytest: for the demo and the benchmarks."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from .backend import choose_backend, deploy_n8n
from .endpoints import N8nInstance, RedisEndpoint
from .settings import DEFAULT_N8N_VERSION

DEFAULT_VERSION = DEFAULT_N8N_VERSION  # the demo's n8n: the version the tests default to


def _progress(message: str) -> None:
    print(f"[n8nlock testbed] {message}", file=sys.stderr, flush=True)


@contextmanager
def running_testbed(version: str = DEFAULT_VERSION) -> Iterator[tuple[N8nInstance, RedisEndpoint]]:
    """A real Redis and a real n8n (installed and cached on first use), stopped on exit.

    With N8NLOCK_TEST_TOPOLOGY=queue the n8n is a queue-mode main with its workers.
    """
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="n8nlock-bed-") as tmp:
        backend = choose_backend(stack, _progress)
        for folder in ("redis", "n8n"):
            (Path(tmp) / folder).mkdir()
        redis = backend.redis(stack, Path(tmp) / "redis")
        yield deploy_n8n(backend, stack, version, redis, Path(tmp) / "n8n")[0], redis
