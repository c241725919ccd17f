"""A throwaway PostgreSQL for n8n's queue mode: Debian's server binaries, initdb into a temporary
folder, a free loopback port, no system service.

PostgreSQL refuses to run as root, so under root the cluster belongs to the `postgres` system
user that Debian's package creates, in a folder of its own under /tmp (pytest's folders are
private to root).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from .apt import apt_install
from .errors import SetupFailed
from .polling import WaitTimeout, wait_for
from .ports import free_port
from .process import ManagedProcess, start_process
from .progress import Progress

START_TIMEOUT = 30.0
DATABASE = "n8n"
USER = "n8n"
PASSWORD = "n8n"  # trust authentication on loopback; n8n still wants a value to send
SERVER_USER = "postgres"  # owner of the cluster when we run as root
PACKAGE = "postgresql"
# Throwaway data: durability settings off, so migrations and execution writes cost less CPU.
SERVER_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "100",
}


@dataclass(frozen=True)
class PostgresEndpoint:
    host: str
    port: int
    database: str = DATABASE
    user: str = USER
    password: str = PASSWORD

    def n8n_env(self) -> dict[str, str]:
        """n8n's documented DB_POSTGRESDB_* settings for this database."""
        return {
            "DB_TYPE": "postgresdb",
            "DB_POSTGRESDB_HOST": self.host,
            "DB_POSTGRESDB_PORT": str(self.port),
            "DB_POSTGRESDB_DATABASE": self.database,
            "DB_POSTGRESDB_USER": self.user,
            "DB_POSTGRESDB_PASSWORD": self.password,
        }


def server_binaries(progress: Progress) -> Path:
    """The folder with initdb and postgres, installing Debian's package when it is missing."""
    found = _newest_bin_dir()
    if found is not None:
        return found
    progress(f"PostgreSQL server binaries not found: installing the Debian package {PACKAGE}")
    apt_install(PACKAGE)
    found = _newest_bin_dir()
    if found is None:
        raise SetupFailed(f"apt-get installed {PACKAGE} but /usr/lib/postgresql/*/bin is empty")
    return found


def _newest_bin_dir() -> Path | None:
    candidates = [
        p / "bin"
        for p in Path("/usr/lib/postgresql").glob("*")
        if (p / "bin" / "postgres").is_file() and p.name.isdigit()
    ]
    return max(candidates, key=lambda p: int(p.parent.name), default=None)


def start_postgres(stack: ExitStack, workdir: Path, progress: Progress) -> PostgresEndpoint:
    """initdb a fresh cluster, start it on a free port, and create n8n's database."""
    binaries = server_binaries(progress)
    owner = _cluster_owner()
    workdir.mkdir(parents=True, exist_ok=True)
    data = _data_dir(stack, workdir, owner)
    initdb = [str(binaries / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8"]
    result = subprocess.run(
        initdb, capture_output=True, text=True, check=False, user=owner, cwd=data.parent
    )
    if result.returncode != 0:
        raise SetupFailed(f"initdb failed: {result.stderr.strip()[-800:]}")
    port = free_port()
    argv = [str(binaries / "postgres"), "-D", str(data), "-p", str(port)]
    settings = {**SERVER_SETTINGS, "unix_socket_directories": str(data)}
    for name, value in settings.items():
        argv += ["-c", f"{name}={value}"]
    process = _start_as(owner, argv, cwd=data, log_path=workdir / "postgres.log")
    stack.callback(process.stop)
    endpoint = PostgresEndpoint(host="127.0.0.1", port=port)
    try:
        wait_until_connectable(binaries, endpoint, alive=process.is_alive)
    except (WaitTimeout, SetupFailed) as exc:
        raise SetupFailed(f"postgres did not start: {exc}\n{process.log_tail()}") from exc
    _create_database(binaries, endpoint)
    progress(f"postgres {binaries.parent.name} ready on 127.0.0.1:{port}")
    return endpoint


def _cluster_owner() -> str | None:
    """Who runs the server: ourselves, or the `postgres` system user when we are root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError as exc:
        raise SetupFailed(
            f"running as root and no `{SERVER_USER}` user exists to own the test PostgreSQL"
        ) from exc
    return SERVER_USER


def _data_dir(stack: ExitStack, workdir: Path, owner: str | None) -> Path:
    if owner is None:
        data = workdir / "pgdata"
        data.mkdir(parents=True)
        return data
    # /tmp is traversable by everyone; pytest's basetemp is not.
    parent = Path(tempfile.mkdtemp(prefix="n8nlock-pg-"))
    stack.callback(shutil.rmtree, parent, ignore_errors=True)
    data = parent / "data"
    data.mkdir()
    for folder in (parent, data):
        shutil.chown(folder, user=owner)
    return data


def _start_as(owner: str | None, argv: list[str], *, cwd: Path, log_path: Path) -> ManagedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    process = start_process("postgres", argv, cwd=cwd, env=env, log_path=log_path, user=owner)
    process.stop_signal = signal.SIGINT  # "fast" shutdown: do not wait for clients to leave
    return process


def wait_until_connectable(
    binaries: Path, endpoint: PostgresEndpoint, *, alive: Callable[[], bool] = lambda: True
) -> None:
    # pg_isready, not a driver: the test bed needs no Python package for PostgreSQL.
    probe = [str(binaries / "pg_isready"), *_address(endpoint), "-d", "postgres", "-t", "2"]

    def answers() -> bool:
        if not alive():
            raise SetupFailed("the process exited")
        return subprocess.run(probe, capture_output=True, check=False).returncode == 0

    wait_for(answers, timeout=START_TIMEOUT, interval=0.1, what=f"postgres :{endpoint.port}")


def _address(endpoint: PostgresEndpoint) -> list[str]:
    return ["-h", endpoint.host, "-p", str(endpoint.port), "-U", endpoint.user]


def _create_database(binaries: Path, endpoint: PostgresEndpoint) -> None:
    argv = [str(binaries / "createdb"), *_address(endpoint), endpoint.database]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SetupFailed(f"createdb {endpoint.database} failed: {result.stderr.strip()}")
