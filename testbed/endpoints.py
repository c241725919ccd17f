"""What the fixtures hand to tests: where Redis and n8n are, seen from each side."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RedisEndpoint:
    """One Redis, addressed twice: tests and n8n may reach it under different names."""

    url: str  # for redis-py in the tests, redis://host:port/db
    host_for_n8n: str  # goes into the n8n credential (a container alias in the Docker setup)
    port_for_n8n: int
    db: int = 0
    password: str = ""


@dataclass(frozen=True)
class N8nInstance:
    base_url: str  # e.g. http://127.0.0.1:40123, no trailing slash
    api_key: str  # for the X-N8N-API-KEY header of the public API
    version: str
    redis_host: str  # Redis as this n8n reaches it (credential fields)
    redis_port: int
    redis_db: int = 0
    redis_password: str = ""
    backend: str = "local"


def instance_for(
    *, base_url: str, api_key: str, version: str, redis: RedisEndpoint, backend: str
) -> N8nInstance:
    return N8nInstance(
        base_url=base_url.rstrip("/"),
        api_key=api_key,
        version=version,
        redis_host=redis.host_for_n8n,
        redis_port=redis.port_for_n8n,
        redis_db=redis.db,
        redis_password=redis.password,
        backend=backend,
    )
