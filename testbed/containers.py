"""Redis and n8n as Docker containers via testcontainers (used when a Docker engine answers).

Not exercised on the machines without Docker where this was written; kept small and isolated.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from .client import bootstrap_api_key
from .endpoints import N8nInstance, RedisEndpoint, instance_for
from .errors import SetupFailed
from .n8n_process import READY_TIMEOUT, n8n_settings
from .polling import wait_for
from .ports import free_port
from .progress import Progress, Stopwatch
from .readiness import wait_until_ready
from .redis_server import wait_until_pingable

REDIS_IMAGE = "redis:7"
N8N_IMAGE = "docker.n8n.io/n8nio/n8n"
REDIS_ALIAS = "redis"  # how n8n reaches Redis on the shared network
N8N_PORT = 5678


def docker_available() -> bool:
    """True when a Docker engine answers quickly; any error at all means no."""
    try:
        import docker  # type: ignore[import-untyped]  # docker-py ships no type information

        client = docker.from_env(timeout=3)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


class DockerBackend:
    name = "docker"

    def __init__(self, stack: ExitStack, progress: Progress) -> None:
        self.progress = progress
        self.network = Network().create()
        stack.callback(self.network.remove)

    def redis(self, stack: ExitStack, workdir: Path) -> RedisEndpoint:
        container = DockerContainer(REDIS_IMAGE).with_exposed_ports(6379)
        container.with_network(self.network).with_network_aliases(REDIS_ALIAS)
        _start(stack, container)
        host, port = container.get_container_host_ip(), container.get_exposed_port(6379)
        url = f"redis://{host}:{port}/0"
        wait_until_pingable(url)
        return RedisEndpoint(url=url, host_for_n8n=REDIS_ALIAS, port_for_n8n=6379)

    def n8n(
        self, stack: ExitStack, version: str, redis: RedisEndpoint, workdir: Path
    ) -> N8nInstance:
        return self._n8n(stack, version, redis)[0]

    def n8n_restartable(
        self, stack: ExitStack, version: str, redis: RedisEndpoint, workdir: Path
    ) -> ContainerN8n:
        """An n8n container of its own that a test may kill and start again. Its host port is
        bound, not left to Docker, which would pick another one at the restart."""
        instance, container = self._n8n(stack, version, redis, host_port=free_port())
        return ContainerN8n(instance, container)

    def _n8n(
        self, stack: ExitStack, version: str, redis: RedisEndpoint, host_port: int | None = None
    ) -> tuple[N8nInstance, DockerContainer]:
        container = DockerContainer(f"{N8N_IMAGE}:{version}").with_exposed_ports(N8N_PORT)
        if host_port is not None:
            container.with_bind_ports(N8N_PORT, host_port)
        container.with_network(self.network).with_envs(**n8n_settings(version))
        watch = Stopwatch()
        _start(stack, container)
        base_url = (
            f"http://{container.get_container_host_ip()}:{container.get_exposed_port(N8N_PORT)}"
        )
        self.progress(f"starting n8n {version} container on {base_url}")
        _wait_until_ready(container, base_url, f"n8n {version} container")
        self.progress(f"n8n {version} container ready after {watch}")
        instance = instance_for(
            base_url=base_url,
            api_key=bootstrap_api_key(base_url),
            version=version,
            redis=redis,
            backend=self.name,
        )
        return instance, container


@dataclass
class ContainerN8n:
    """An n8n container that `docker kill` crashes (SIGKILL to everything in it) and `docker
    start` brings back: the container's filesystem, and so n8n's user folder, stays."""

    instance: N8nInstance
    container: DockerContainer

    def crash(self) -> None:
        self.container.get_wrapped_container().kill()
        wait_for(lambda: not _running(self.container), timeout=30, what="docker kill")

    def restart(self) -> float:
        self.container.get_wrapped_container().start()
        return _wait_until_ready(self.container, self.instance.base_url, "n8n container")

    def log_tail(self, lines: int = 60) -> str:
        return _logs(self.container, lines)


def _wait_until_ready(container: DockerContainer, base_url: str, name: str) -> float:
    try:
        return wait_until_ready(base_url, timeout=READY_TIMEOUT, alive=lambda: _running(container))
    except SetupFailed as exc:
        raise SetupFailed(f"{name}: {exc}\n{_logs(container)}") from exc


def _start(stack: ExitStack, container: DockerContainer) -> None:
    container.start()
    stack.callback(container.stop)


def _running(container: DockerContainer) -> bool:
    try:
        container.reload()  # status is cached from the last inspect otherwise
        return container.status == "running"
    except Exception:  # the engine may already have removed it
        return False


def _logs(container: DockerContainer, lines: int = 60) -> str:
    stdout, stderr = container.get_logs()
    text = (stdout + stderr).decode(errors="replace")
    return "\n".join(text.splitlines()[-lines:])
