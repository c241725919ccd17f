"""Where the operator commands reach Redis, and the one place redis-py's errors become ours.

The env file's `redis:` record says where Redis is as n8n reaches it; the CLI may reach it under
another name (a tunnel, a container alias), so a URL given on the command line wins.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from n8n_lockkit.errors import ExitCode, LockkitError
from n8n_lockkit.remote.credentials import RedisSettings
from n8n_lockkit.workspace.envconfig import EnvFile

URL_VARIABLE = "N8NLOCK_REDIS_URL"
CONNECT_TIMEOUT_SECONDS = 5.0
COMMAND_TIMEOUT_SECONDS = 30.0
# A key name or value that is not UTF-8 is not n8nlock's; decoding it must not crash a listing.
# The replaced text never equals the stored bytes, so a compare-and-delete never matches it.
_DECODE_ERRORS = "replace"


def _no_retries() -> Retry:
    """redis-py asks again 3 times with a growing backoff (3 s and more for a refused
    connection); each command here is asked once and any failure said at once."""
    return Retry(NoBackoff(), 0)


class NoRedisAddress(LockkitError):
    """Neither --redis-url nor the env file says where Redis is."""


class RedisUnreachable(LockkitError):
    """No connection to Redis (refused, timed out, unknown host)."""

    exit_code = ExitCode.REMOTE


class RedisRefused(LockkitError):
    """Redis answered, and refused: a wrong password, a missing permission, a bad database."""

    exit_code = ExitCode.REMOTE


@dataclass(frozen=True)
class RedisTarget:
    """A Redis to connect to: a URL, or the fields of an env's `redis:` record."""

    url: str | None = None
    settings: RedisSettings | None = None

    @property
    def display(self) -> str:
        """Where, for messages: never the password."""
        if self.url is not None:
            parts = urlsplit(self.url)
            if parts.password is None:
                return self.url
            user = parts.username or ""
            host = parts.netloc.rpartition("@")[2]
            return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
        assert self.settings is not None
        scheme = "rediss" if self.settings.ssl else "redis"
        return f"{scheme}://{self.settings.host}:{self.settings.port}/{self.settings.database}"

    @property
    def password_hint(self) -> str:
        if self.url is not None:
            return f"check the password in --redis-url / {URL_VARIABLE}"
        assert self.settings is not None
        variable = self.settings.password_env
        if variable:
            return f"check the password in ${variable} (redis.passwordEnv in the env file)"
        return "the env file's redis: record names no passwordEnv; add one, or use --redis-url"

    def client(self) -> redis.Redis:
        if self.url is not None:
            try:
                return redis.Redis.from_url(
                    self.url,
                    decode_responses=True,
                    encoding_errors=_DECODE_ERRORS,
                    socket_connect_timeout=CONNECT_TIMEOUT_SECONDS,
                    socket_timeout=COMMAND_TIMEOUT_SECONDS,
                    retry=_no_retries(),
                )
            except ValueError as err:
                raise LockkitError(
                    f"not a Redis URL: {self.display} ({err})",
                    hint="write it as redis://[user:password@]host:port/db (rediss:// for TLS)",
                ) from err
        assert self.settings is not None
        settings = self.settings
        return redis.Redis(
            host=settings.host,
            port=settings.port,
            db=settings.database,
            username=settings.user or None,
            password=settings.password() or None,
            ssl=settings.ssl,
            decode_responses=True,
            encoding_errors=_DECODE_ERRORS,
            socket_connect_timeout=CONNECT_TIMEOUT_SECONDS,
            socket_timeout=COMMAND_TIMEOUT_SECONDS,
            retry=_no_retries(),
        )


def target_for(env: EnvFile, url: str | None) -> RedisTarget:
    """--redis-url (or its variable) when given, else the env file's `redis:` record."""
    if url:
        return RedisTarget(url=url)
    record = env.redis_address()
    if record is None:
        raise NoRedisAddress(
            f"envs/{env.name}.yml does not say where Redis is (no redis: record)",
            hint="record it with `n8nlock redis-credential --link <credential id> --host H "
            f"[--port P] [--database N] [--ssl] [--password-env VAR]`, or pass --redis-url "
            f"redis://host:6379/0 (or set {URL_VARIABLE})",
        )
    return RedisTarget(settings=RedisSettings.from_record(record))


@contextmanager
def open_redis(target: RedisTarget) -> Iterator[redis.Redis]:
    """A connected client; any redis-py error inside the block becomes one of ours."""
    client = target.client()
    try:
        client.ping()
        yield client
    except redis.AuthenticationError as err:
        raise RedisRefused(
            f"Redis at {target.display} refused the credentials ({err})",
            hint=target.password_hint,
        ) from err
    except (redis.ConnectionError, redis.TimeoutError) as err:
        raise RedisUnreachable(
            f"cannot reach Redis at {target.display} ({err})",
            hint="is Redis running and reachable from here? The CLI may need another address "
            f"than n8n uses: pass --redis-url redis://host:port/db or set {URL_VARIABLE}",
        ) from err
    except redis.ResponseError as err:
        raise _refusal(target, err) from err
    except redis.RedisError as err:
        raise RedisRefused(f"Redis at {target.display} failed: {err}") from err
    finally:
        client.close()


def _refusal(target: RedisTarget, err: redis.ResponseError) -> RedisRefused:
    text = str(err)
    if text.startswith(("NOAUTH", "WRONGPASS")):
        return RedisRefused(
            f"Redis at {target.display} refused the credentials ({text})",
            hint=target.password_hint,
        )
    if text.startswith("NOPERM"):
        return RedisRefused(
            f"Redis at {target.display} refused a command ({text})",
            hint="give the Redis user the commands and the key pattern of its env's namespace "
            "that docs/key-namespaces.md#a-redis-user-per-namespace lists",
        )
    return RedisRefused(
        f"Redis at {target.display} refused a command ({text})",
        hint="check the database number and that this is the Redis n8n's credential uses",
    )
