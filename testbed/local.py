"""Local processes: redis-server from the OS, n8n from the npm registry (the CI path)."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from .client import bootstrap_api_key
from .endpoints import N8nInstance, RedisEndpoint, instance_for
from .install import ensure_n8n
from .n8n_process import N8nServer, n8n_server, start_n8n
from .postgres import start_postgres
from .progress import Progress, format_duration
from .queue import WORKER_CONCURRENCY, QueueCluster, start_queue_cluster
from .redis_server import start_redis_server


class LocalBackend:
    name = "local"

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def redis(self, stack: ExitStack, workdir: Path) -> RedisEndpoint:
        _, endpoint = start_redis_server(stack, workdir, self.progress)
        self.progress(f"redis-server ready at {endpoint.url}")
        return endpoint

    def n8n(
        self, stack: ExitStack, version: str, redis: RedisEndpoint, workdir: Path
    ) -> N8nInstance:
        install = ensure_n8n(version, self.progress)
        _, base_url = start_n8n(stack, install, workdir, self.progress)
        api_key = bootstrap_api_key(base_url)
        return instance_for(
            base_url=base_url, api_key=api_key, version=version, redis=redis, backend=self.name
        )

    def n8n_restartable(
        self, stack: ExitStack, version: str, redis: RedisEndpoint, workdir: Path
    ) -> LocalN8n:
        """An n8n of its own (never the session's) that a test may crash and start again."""
        install = ensure_n8n(version, self.progress)
        server = n8n_server(stack, install, workdir)
        self.progress(f"starting n8n {version} to crash on {server.base_url} ({server.log_path})")
        self.progress(f"n8n {version} ready after {format_duration(server.start())}")
        instance = instance_for(
            base_url=server.base_url,
            api_key=bootstrap_api_key(server.base_url),
            version=version,
            redis=redis,
            backend=self.name,
        )
        return LocalN8n(instance, server)

    def n8n_queue(
        self,
        stack: ExitStack,
        version: str,
        redis: RedisEndpoint,
        workdir: Path,
        *,
        concurrency: int = WORKER_CONCURRENCY,
        bull_db: int | None = None,
    ) -> tuple[N8nInstance, QueueCluster]:
        """n8n `version` in queue mode, with a PostgreSQL of its own; the queue (Bull) shares
        `redis` with the locks, in its database `bull_db` if given (a second cluster on the
        same Redis must not take the first one's jobs)."""
        install = ensure_n8n(version, self.progress)
        postgres = start_postgres(stack, workdir / "postgres", self.progress)
        bull = redis
        if bull_db is not None:
            url = f"{redis.url.rsplit('/', 1)[0]}/{bull_db}"
            bull = replace(redis, url=url, db=bull_db)
        cluster = start_queue_cluster(
            stack, install, bull=bull, postgres=postgres, workdir=workdir,
            progress=self.progress, concurrency=concurrency,
        )  # fmt: skip
        api_key = bootstrap_api_key(cluster.base_url)
        instance = instance_for(
            base_url=cluster.base_url,
            api_key=api_key,
            version=version,
            redis=redis,
            backend=self.name,
        )
        return instance, cluster


@dataclass
class LocalN8n:
    """A local `n8n start` that crashes as a killed machine would (SIGKILL to n8n and its task
    runner at once) and comes back as the same n8n: user folder, port, API key."""

    instance: N8nInstance
    server: N8nServer

    def crash(self) -> None:
        self.server.crash()

    def restart(self) -> float:
        return self.server.start()

    def log_tail(self, lines: int = 60) -> str:
        assert self.server.process is not None  # started by n8n_restartable
        return self.server.process.log_tail(lines)
