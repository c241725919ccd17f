"""Choosing where Redis and n8n come from: external services, Docker, or local processes."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Protocol

from .endpoints import N8nInstance, RedisEndpoint
from .errors import ConfigError
from .external import ExternalBackend
from .local import LocalBackend
from .progress import Progress
from .settings import external_config, forced_backend


class Backend(Protocol):
    """Provides services; everything it starts is stopped by the ExitStack it is given."""

    name: str

    def redis(self, stack: ExitStack, workdir: Path) -> RedisEndpoint: ...

    def n8n(
        self, stack: ExitStack, version: str, redis: RedisEndpoint, workdir: Path
    ) -> N8nInstance: ...


def choose_backend(stack: ExitStack, progress: Progress) -> Backend:
    """External if configured, else Docker if an engine answers, else local processes.

    N8NLOCK_TEST_BACKEND=external|docker|local skips the guessing.
    """
    forced = forced_backend()
    config = external_config()
    if forced == "external" or (forced is None and config is not None):
        if config is None:
            raise ConfigError("N8NLOCK_TEST_BACKEND=external needs the N8NLOCK_TEST_* URLs")
        return _announce(ExternalBackend(config), progress)
    if forced == "docker" or (forced is None and _docker_available()):
        # Imported late: testcontainers is only needed when Docker is actually used.
        from .containers import DockerBackend

        return _announce(DockerBackend(stack, progress), progress)
    return _announce(LocalBackend(progress), progress)


def _docker_available() -> bool:
    from .containers import docker_available

    return docker_available()


def _announce(backend: Backend, progress: Progress) -> Backend:
    progress(f"test bed backend: {backend.name}")
    return backend
