"""The Redis credential the primitives use: shaped by n8n's own schema, recorded in the env."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from n8n_lockkit.errors import LockkitError, RemoteError
from n8n_lockkit.remote.n8n_client import N8nClient, N8nNotFound
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
class RedisPlan:
    """What redis-credential does: create, link or keep the credential; record where Redis is."""

    action: str  # create | link | identical
    credential_id: str  # "" for a credential still to create
    name: str
    settings: RedisSettings
    # The `redis:` address record: "record" when it changes, "identical" when the env file
    # already says this, "missing" when nothing says where Redis is (a --link without --host).
    address: str = "identical"
    warnings: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return self.action != "identical" or self.address == "record"


def plan_redis(
    env: EnvFile, name: str, settings: RedisSettings, *, link_id: str | None, replace: bool
) -> RedisPlan:
    """Link the given id, keep the recorded one, or create one; sends and writes nothing.

    With a host, the address is recorded under `redis:` too, for the operator commands.
    """
    current = env.credential(REDIS)
    address = _address_action(env, settings)
    if link_id:
        same = current.get("id") == link_id and current.get("name") == name
        return RedisPlan("identical" if same else "link", link_id, name, settings, address)
    if current.get("id") and not replace:
        recorded = str(current.get("name") or name)
        return RedisPlan("identical", str(current["id"]), recorded, settings, address)
    settings.password()  # a missing variable stops us before anything is sent
    return RedisPlan("create", "", name, settings, address)


def check_link(
    env: EnvFile, planned: RedisPlan, *, connect: Callable[[EnvFile], N8nClient]
) -> RedisPlan:
    """A new --link id must name a Redis credential on the env's n8n: one it does not know
    stops here. When n8n cannot say (unreachable, no API key, a 1.x without the endpoint), the
    id is linked as given, with a warning: push then finds out."""
    if planned.action != "link":
        return planned
    given = planned.credential_id
    try:
        client = connect(env)
    except LockkitError as err:
        return _unchecked(planned, err)
    try:
        found = client.get_credential(given)
    except N8nNotFound as err:
        raise LockkitError(
            f"n8n at {client.base_url} has no credential with id {given!r}; nothing was written",
            hint="copy the id from n8n (open the credential: the address ends in its id), or "
            "create one with `n8nlock redis-credential --host H`",
        ) from err
    except RemoteError as err:
        return _unchecked(planned, err)
    finally:
        client.close()
    if found.get("type") != REDIS:
        raise LockkitError(
            f"credential {given!r} on n8n is {found.get('name')!r} of type "
            f"{found.get('type')!r}, not a Redis credential; nothing was written",
            hint="link the id of a Redis credential, or create one with "
            "`n8nlock redis-credential --host H`",
        )
    return planned


def _unchecked(planned: RedisPlan, err: LockkitError) -> RedisPlan:
    warning = (
        f"credential {planned.credential_id!r} is linked as given, not checked on n8n: "
        f"{err.message}"
    )
    return dataclasses.replace(planned, warnings=(*planned.warnings, warning))


def apply_redis(
    env: EnvFile, planned: RedisPlan, *, connect: Callable[[EnvFile], N8nClient]
) -> RedisPlan:
    """Create the credential on n8n when planned, and record it and the address in `env`'s
    document (the caller saves the file). Returns the plan with the id n8n gave."""
    credential_id = planned.credential_id
    if planned.action == "create":
        client = connect(env)
        try:
            credential_id = create_redis(client, planned.name, planned.settings)
        finally:
            client.close()
    if planned.action != "identical":
        env.record_credential(REDIS, credential_id, planned.name)
    if planned.address == "record":
        env.record_redis_address(planned.settings.as_record())
    return dataclasses.replace(planned, credential_id=credential_id)


def _address_action(env: EnvFile, settings: RedisSettings) -> str:
    recorded = env.redis_address()
    if not settings.host:
        return "identical" if recorded else "missing"
    return "identical" if recorded == settings.as_record() else "record"
