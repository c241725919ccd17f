"""Environment variables that steer the test bed."""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from .errors import ConfigError

# The newest 2.x whose dependencies all resolve (notes: n8n-testbed.md). 2.41.3, the registry's
# `latest`, still fails to install (re-checked 2026-11-26): `npm install` stops at
# @n8n/agents@0.26.2, and n8n-core 2.41.2 is missing from the registry too.
DEFAULT_N8N_VERSION = "2.41.1"

ENV_REDIS_URL = "N8NLOCK_TEST_REDIS_URL"
ENV_REDIS_HOST_FOR_N8N = "N8NLOCK_TEST_REDIS_HOST_FOR_N8N"
ENV_N8N_URL = "N8NLOCK_TEST_N8N_URL"
ENV_N8N_API_KEY = "N8NLOCK_TEST_N8N_API_KEY"
ENV_VERSIONS = "N8NLOCK_TEST_N8N_VERSIONS"
ENV_BACKEND = "N8NLOCK_TEST_BACKEND"
ENV_TOPOLOGY = "N8NLOCK_TEST_TOPOLOGY"

EXTERNAL_VARS = (ENV_REDIS_URL, ENV_N8N_URL, ENV_N8N_API_KEY)
BACKENDS = ("external", "docker", "local")
# single: one n8n process runs everything; queue: main, 2 workers, PostgreSQL (testbed/queue.py)
TOPOLOGIES = ("single", "queue")


@dataclass(frozen=True)
class ExternalConfig:
    redis_url: str
    redis_host_for_n8n: str
    redis_port_for_n8n: int
    n8n_url: str
    n8n_api_key: str


def external_config() -> ExternalConfig | None:
    """The already-running Redis + n8n to use, or None when none is configured."""
    present = [name for name in EXTERNAL_VARS if os.environ.get(name)]
    if not present:
        return None
    if len(present) < len(EXTERNAL_VARS):
        missing = ", ".join(name for name in EXTERNAL_VARS if name not in present)
        raise ConfigError(f"external test bed is half configured: also set {missing}")
    redis_url = os.environ[ENV_REDIS_URL]
    host, port = _redis_host_for_n8n(redis_url, os.environ.get(ENV_REDIS_HOST_FOR_N8N, ""))
    return ExternalConfig(
        redis_url=redis_url,
        redis_host_for_n8n=host,
        redis_port_for_n8n=port,
        n8n_url=os.environ[ENV_N8N_URL].rstrip("/"),
        n8n_api_key=os.environ[ENV_N8N_API_KEY],
    )


def _redis_host_for_n8n(redis_url: str, override: str) -> tuple[str, int]:
    """`host` or `host:port` from the override, else what the tests' URL says."""
    parts = urlsplit(redis_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 6379
    if override:
        name, _, maybe_port = override.partition(":")
        host, port = name, int(maybe_port) if maybe_port else port
    return host, port


def forced_backend() -> str | None:
    value = os.environ.get(ENV_BACKEND, "").strip().lower()
    if value and value not in BACKENDS:
        raise ConfigError(f"{ENV_BACKEND}={value!r}: expected one of {', '.join(BACKENDS)}")
    return value or None


def topology() -> str:
    value = os.environ.get(ENV_TOPOLOGY, "").strip().lower() or "single"
    if value not in TOPOLOGIES:
        raise ConfigError(f"{ENV_TOPOLOGY}={value!r}: expected one of {', '.join(TOPOLOGIES)}")
    return value


def n8n_versions() -> list[str]:
    raw = os.environ.get(ENV_VERSIONS, "")
    versions = [item.strip() for item in raw.split(",") if item.strip()]
    return versions or [DEFAULT_N8N_VERSION]


def n8n_version_params() -> list[str]:
    """Fixture params: one per version, or a single one for an external n8n (it has one)."""
    if forced_backend() == "external" or (forced_backend() is None and _external_vars_set()):
        return ["external"]
    return n8n_versions()


def _external_vars_set() -> bool:
    return any(os.environ.get(name) for name in EXTERNAL_VARS)
