"""The Redis credential the primitives use: shaped by n8n's own schema, recorded in the env."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from n8n_lockkit.errors import LockkitError
from n8n_lockkit.remote.n8n_client import N8nClient
from n8n_lockkit.workspace.envconfig import EnvFile


@dataclass(frozen=True)
class RedisSettings:
    host: str
    port: int = 6379
    database: int = 0
    user: str = ""
    password_env: str | None = None
    ssl: bool = False

    def password(self) -> str:
        if self.password_env is None:
            return ""
        if self.password_env not in os.environ:
            raise LockkitError(
                f"the environment variable {self.password_env} is not set",
                hint=f"export {self.password_env}=… (the password never goes in a file)",
            )
        return os.environ[self.password_env]


_DEFAULTS = {"string": "", "number": 0, "integer": 0, "boolean": False}


def _coerce(value: Any, schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if kind in ("number", "integer"):
        return int(value)
    if kind == "boolean":
        return bool(value)
    return str(value)


def redis_data(schema: dict[str, Any], settings: RedisSettings) -> dict[str, Any]:
    """The credential's `data`, with exactly the fields and types n8n's schema asks for."""
    wanted: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "database": settings.database,
        "user": settings.user,
        "password": settings.password(),
        "ssl": settings.ssl,
    }
    if settings.ssl:
        wanted["disableTlsVerification"] = False
    properties: dict[str, Any] = schema.get("properties", {})
    data = {k: _coerce(v, properties[k]) for k, v in wanted.items() if k in properties}
    for required in schema.get("required", []):
        if required not in data and required in properties:
            data[required] = _DEFAULTS.get(properties[required].get("type", "string"), "")
    return data


def create_redis(client: N8nClient, name: str, settings: RedisSettings) -> str:
    schema = client.credential_schema("redis")
    created = client.create_credential(
        {"name": name, "type": "redis", "data": redis_data(schema, settings)}
    )
    return str(created["id"])


@dataclass(frozen=True)
class Outcome:
    action: str  # create | link | identical
    credential_id: str

    @property
    def changed(self) -> bool:
        return self.action != "identical"


def ensure_redis(
    env: EnvFile,
    name: str,
    settings: RedisSettings,
    *,
    link_id: str | None,
    replace: bool,
    connect: Callable[[EnvFile], N8nClient],
) -> Outcome:
    """Record a linked id, keep a recorded one, or create the credential on n8n."""
    current = ((env.data.get("credentials") or {}).get("redis") or {}).get("id")
    if link_id:
        outcome = Outcome("link", link_id)
    elif current and not replace:
        return Outcome("identical", str(current))
    else:
        settings.password()  # a missing variable stops us before anything is sent
        client = connect(env)
        try:
            outcome = Outcome("create", create_redis(client, name, settings))
        finally:
            client.close()
    env.record_credential("redis", outcome.credential_id, name)
    return outcome
