"""Already-running Redis and n8n named by N8NLOCK_TEST_* variables; nothing to start or stop."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .client import server_version
from .endpoints import N8nInstance, RedisEndpoint, instance_for
from .redis_server import wait_until_pingable
from .settings import ExternalConfig


class ExternalBackend:
    name = "external"

    def __init__(self, config: ExternalConfig) -> None:
        self.config = config

    def redis(self, stack: ExitStack, workdir: Path) -> RedisEndpoint:
        wait_until_pingable(self.config.redis_url)  # fail early with a clear message
        return RedisEndpoint(
            url=self.config.redis_url,
            host_for_n8n=self.config.redis_host_for_n8n,
            port_for_n8n=self.config.redis_port_for_n8n,
            db=_db_of(self.config.redis_url),
            password=_password_of(self.config.redis_url),
        )

    def n8n(
        self, stack: ExitStack, version: str, redis: RedisEndpoint, workdir: Path
    ) -> N8nInstance:
        base_url = self.config.n8n_url
        return instance_for(
            base_url=base_url,
            api_key=self.config.n8n_api_key,
            version=server_version(base_url),
            redis=redis,
            backend=self.name,
        )


def _db_of(url: str) -> int:
    path = urlsplit(url).path.strip("/")
    return int(path) if path.isdigit() else 0


def _password_of(url: str) -> str:
    return unquote(urlsplit(url).password or "")
