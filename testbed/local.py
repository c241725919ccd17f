"""Local processes: redis-server from the OS, n8n from the npm registry (the CI path)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from .client import bootstrap_api_key
from .endpoints import N8nInstance, RedisEndpoint, instance_for
from .install import ensure_n8n
from .n8n_process import start_n8n
from .postgres import start_postgres
from .progress import Progress
from .queue import QueueCluster, start_queue_cluster
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

    def n8n_queue(
        self, stack: ExitStack, version: str, redis: RedisEndpoint, workdir: Path
    ) -> tuple[N8nInstance, QueueCluster]:
        """n8n `version` in queue mode; the queue (Bull) shares `redis` with the locks."""
        install = ensure_n8n(version, self.progress)
        postgres = start_postgres(stack, workdir / "postgres", self.progress)
        cluster = start_queue_cluster(
            stack, install, bull=redis, postgres=postgres, workdir=workdir, progress=self.progress
        )
        api_key = bootstrap_api_key(cluster.base_url)
        instance = instance_for(
            base_url=cluster.base_url,
            api_key=api_key,
            version=version,
            redis=redis,
            backend=self.name,
        )
        return instance, cluster
