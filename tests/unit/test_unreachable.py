"""Nothing listening is said at once (n8n and Redis), and a server that is slow but alive
still gets its timeout."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
import responses

from n8n_lockkit.errors import RemoteError
from n8n_lockkit.ops.redis_access import RedisTarget, RedisUnreachable, open_redis
from n8n_lockkit.remote.credentials import RedisSettings
from n8n_lockkit.remote.n8n_client import N8nClient


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts connections and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield int(server.getsockname()[1])


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_n8n_refusing_the_connection_is_said_in_well_under_a_second(
    closed_port: int, host: str
) -> None:
    url = f"http://{host}:{closed_port}"
    responses.add_passthru(url)
    start = time.monotonic()
    with pytest.raises(RemoteError) as caught:
        N8nClient(url, "key").get_workflow("1")
    assert time.monotonic() - start < 0.5
    assert caught.value.message == f"cannot reach n8n at {url} (connection refused)"


def test_a_slow_n8n_still_gets_its_timeout(silent_server: int) -> None:
    url = f"http://127.0.0.1:{silent_server}"
    responses.add_passthru(url)
    start = time.monotonic()
    with pytest.raises(RemoteError) as caught:
        N8nClient(url, "key", timeout=0.4, retries=1, sleep=lambda _: None).get_workflow("1")
    assert time.monotonic() - start >= 0.8  # two attempts, each given its whole timeout
    assert caught.value.message == f"cannot reach n8n at {url} (no answer in time)"


@pytest.mark.parametrize("how", ["url", "record"])
def test_redis_refusing_the_connection_is_said_in_well_under_a_second(
    closed_port: int, how: str
) -> None:
    settings = RedisSettings("127.0.0.1", closed_port, 0, "", None, False)
    target = (
        RedisTarget(url=f"redis://127.0.0.1:{closed_port}/0")
        if how == "url"
        else RedisTarget(settings=settings)
    )
    start = time.monotonic()
    with pytest.raises(RedisUnreachable), open_redis(target):
        pass
    assert time.monotonic() - start < 0.5


def test_a_slow_redis_still_gets_its_timeout(
    silent_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from n8n_lockkit.ops import redis_access

    monkeypatch.setattr(redis_access, "COMMAND_TIMEOUT_SECONDS", 0.4)
    start = time.monotonic()
    with (
        pytest.raises(RedisUnreachable) as caught,
        open_redis(RedisTarget(url=f"redis://127.0.0.1:{silent_server}/0")),
    ):
        pass
    assert time.monotonic() - start >= 0.4
    assert "Timeout" in caught.value.message or "timed out" in caught.value.message.lower()
