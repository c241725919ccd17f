"""The Redis credential the primitives use: shaped by n8n's own schema, recorded in the env."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from n8n_lockkit.errors import LockkitError
from n8n_lockkit.remote.n8n_client import N8nClient
from n8n_lockkit.workspace.envconfig import EnvFile

# The name the primitives' placeholders give the Redis credential (`credentials.redis.id`);
# any other credential a workflow uses is recorded under a name of its own.
REDIS = "redis"


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

    def as_record(self) -> dict[str, Any]:
        """The env file's `redis:` record: where Redis is, and never the password itself."""
        record: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "database": self.database,
            "ssl": self.ssl,
        }
        if self.user:
            record["user"] = self.user
        if self.password_env:
            record["passwordEnv"] = self.password_env
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RedisSettings:
        return cls(
            host=str(record["host"]),
            port=int(record.get("port", 6379)),
            database=int(record.get("database", 0)),
            user=str(record.get("user", "")),
            password_env=record.get("passwordEnv") or None,
            ssl=bool(record.get("ssl", False)),
        )


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
    schema = client.credential_schema(REDIS)
    created = client.create_credential(
        {"name": name, "type": REDIS, "data": redis_data(schema, settings)}
    )
    return str(created["id"])


@dataclass(frozen=True)
class Outcome:
    action: str  # create | link | identical
    credential_id: str
    # The `redis:` address record: "record" when written now, "identical" when it already
    # said this, "missing" when nothing says where Redis is (a --link without --host).
    address: str = "identical"

    @property
    def changed(self) -> bool:
        return self.action != "identical" or self.address == "record"


def ensure_redis(
    env: EnvFile,
    name: str,
    settings: RedisSettings,
    *,
    link_id: str | None,
    replace: bool,
    connect: Callable[[EnvFile], N8nClient],
) -> Outcome:
    """Record a linked id, keep a recorded one, or create the credential on n8n.

    With a host, the address is recorded under `redis:` too, for the operator commands.
    """
    current = env.credential(REDIS).get("id")
    address = _record_address(env, settings)
    if link_id:
        action, credential_id = "link", link_id
    elif current and not replace:
        return Outcome("identical", str(current), address)
    else:
        settings.password()  # a missing variable stops us before anything is sent
        client = connect(env)
        try:
            action, credential_id = "create", create_redis(client, name, settings)
        finally:
            client.close()
    env.record_credential(REDIS, credential_id, name)
    return Outcome(action, credential_id, address)


def _record_address(env: EnvFile, settings: RedisSettings) -> str:
    if not settings.host:
        return "identical" if env.redis_address() else "missing"
    return "record" if env.record_redis_address(settings.as_record()) else "identical"
