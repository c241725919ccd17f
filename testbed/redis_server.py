"""A throwaway redis-server on a free loopback port."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import redis

from .apt import apt_install
from .endpoints import RedisEndpoint
from .errors import SetupFailed
from .polling import WaitTimeout, wait_for
from .ports import free_port
from .process import ManagedProcess, start_process
from .progress import Progress

START_TIMEOUT = 15.0


def redis_server_binary(progress: Progress) -> str:
    """Path of redis-server, installing Debian's package when it is missing."""
    found = shutil.which("redis-server")
    if found:
        return found
    progress("redis-server not on PATH: installing the Debian package redis-server")
    apt_install(
        "redis-server",
        hint="or point N8NLOCK_TEST_REDIS_URL and the other N8NLOCK_TEST_* variables at "
        "running services",
    )
    found = shutil.which("redis-server")
    if not found:
        raise SetupFailed("apt-get installed redis-server but it is still not on PATH")
    return found


def start_redis_server(
    stack: ExitStack, workdir: Path, progress: Progress
) -> tuple[ManagedProcess, RedisEndpoint]:
    binary = redis_server_binary(progress)
    port = free_port()
    # No persistence and no daemonizing: the data is throwaway and we keep the Popen to stop it.
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    argv += ["--dir", str(workdir)]
    log_path = workdir / "redis.log"
    process = start_process("redis-server", argv, cwd=workdir, env=os.environ, log_path=log_path)
    stack.callback(process.stop)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        wait_until_pingable(url, alive=process.is_alive)
    except (WaitTimeout, SetupFailed) as exc:
        raise SetupFailed(f"redis-server did not start: {exc}\n{process.log_tail()}") from exc
    return process, RedisEndpoint(url=url, host_for_n8n="127.0.0.1", port_for_n8n=port)


def wait_until_pingable(url: str, *, alive: Callable[[], bool] = lambda: True) -> None:
    client = redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)

    def answers() -> bool:
        if not alive():
            raise SetupFailed("the process exited")
        try:
            return bool(client.ping())
        except redis.exceptions.ConnectionError:
            return False

    try:
        wait_for(answers, timeout=START_TIMEOUT, interval=0.05, what=f"PING {url}")
    finally:
        client.close()
