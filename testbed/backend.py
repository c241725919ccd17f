"""Choosing where Redis and n8n come from: external services, Docker, or local processes."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Protocol, runtime_checkable

from .endpoints import N8nInstance, RedisEndpoint
from .errors import ConfigError
from .external import ExternalBackend
from .local import LocalBackend
from .progress import Progress
from .queue import QueueCluster
from .settings import ENV_BACKEND, ENV_TOPOLOGY, external_config, forced_backend, topology


class Backend(Protocol):
    """Provides services; everything it starts is stopped by the ExitStack it is given."""

    name: str

    def redis(self, stack: ExitStack, workdir: Path) -> RedisEndpoint: ...

    def n8n(
        self, stack: ExitStack, version: str, redis: RedisEndpoint, workdir: Path
    ) -> N8nInstance: ...


class RestartableN8n(Protocol):
    """An n8n a test has to itself, which it can crash and start again as the same n8n (its
    SQLite database, workflows, credentials, API key and event log survive; same URL)."""

    instance: N8nInstance

    def crash(self) -> None:
        """Kill it at once (SIGKILL), as a lost machine or an OOM kill would; returns when it
        is gone."""

    def restart(self) -> float:
        """Start it again; the seconds until it is ready (/healthz/readiness and /rest)."""

    def log_tail(self, lines: int = 60) -> str:
        """The end of its log, all its lives."""


@runtime_checkable
class RestartableBackend(Protocol):
    def n8n_restartable(
        self, stack: ExitStack, version: str, redis: RedisEndpoint, workdir: Path
    ) -> RestartableN8n: ...


def choose_backend(stack: ExitStack, progress: Progress) -> Backend:
    """External if configured, else Docker if an engine answers, else local processes.

    N8NLOCK_TEST_BACKEND=external|docker|local skips the guessing.
    """
    forced = forced_backend()
    if topology() == "queue":
        # Queue mode is built from local processes only (main, workers, PostgreSQL); Docker
        # would need one container per n8n process, which is not written yet.
        if forced not in (None, "local") or external_config() is not None:
            raise ConfigError(
                f"{ENV_TOPOLOGY}=queue runs on local processes: unset {ENV_BACKEND} "
                "(or set it to local) and the N8NLOCK_TEST_* service URLs"
            )
        return _announce(LocalBackend(progress), progress)
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


def deploy_n8n(
    backend: Backend, stack: ExitStack, version: str, redis: RedisEndpoint, workdir: Path
) -> tuple[N8nInstance, QueueCluster | None]:
    """n8n `version` in the topology N8NLOCK_TEST_TOPOLOGY names; the cluster in queue mode."""
    if topology() == "queue":
        assert isinstance(backend, LocalBackend)  # choose_backend sees to it
        return backend.n8n_queue(stack, version, redis, workdir)
    return backend.n8n(stack, version, redis, workdir), None


def deploy_restartable_n8n(
    backend: Backend, stack: ExitStack, version: str, redis: RedisEndpoint, workdir: Path
) -> RestartableN8n | None:
    """A single-process n8n `version` of its own, reaching `redis`, that the caller may crash
    and restart; None when the backend cannot start one (external: nothing of ours to kill)."""
    if not isinstance(backend, RestartableBackend):
        return None
    return backend.n8n_restartable(stack, version, redis, workdir)


def _docker_available() -> bool:
    from .containers import docker_available

    return docker_available()


def _announce(backend: Backend, progress: Progress) -> Backend:
    progress(f"test bed backend: {backend.name}")
    return backend
