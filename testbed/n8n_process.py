"""Starting n8n from the cached npm install as a local process."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from .errors import SetupFailed
from .install import N8nInstall
from .ports import free_ports
from .process import ManagedProcess, start_process
from .progress import Progress, format_duration
from .readiness import is_ready, wait_until_ready
from .runtime import needs_node24

READY_TIMEOUT = 180.0

# Settings shared by every way of running n8n here (local process and container).
_COMMON_SETTINGS = {
    # Offline and quiet: no telemetry, no calls home, no onboarding survey.
    "N8N_DIAGNOSTICS_ENABLED": "false",
    "N8N_PERSONALIZATION_ENABLED": "false",
    "N8N_VERSION_NOTIFICATIONS_ENABLED": "false",
    "N8N_TEMPLATES_ENABLED": "false",
    # The login cookie travels over plain http.
    "N8N_SECURE_COOKIE": "false",
    # Failed and successful executions stay inspectable through the API while debugging a test.
    "EXECUTIONS_DATA_SAVE_ON_ERROR": "all",
    "EXECUTIONS_DATA_SAVE_ON_SUCCESS": "all",
}


def n8n_settings(version: str) -> dict[str, str]:
    """Environment settings for n8n `version`, wherever it runs."""
    settings = dict(_COMMON_SETTINGS)
    if needs_node24(version):
        # Its system task fetches api.n8n.io and logs a stack trace when offline. n8n 1.x has
        # no such module and exits on the unknown name.
        settings["N8N_DISABLED_MODULES"] = "mcp-registry"
    return settings


# Inherited variables with these prefixes could change n8n's behaviour behind the tests' back.
_SCRUBBED_PREFIXES = ("N8N_", "EXECUTIONS_", "DB_", "QUEUE_", "GENERIC_", "WEBHOOK_URL")


def n8n_env(
    install: N8nInstall, *, user_folder: Path, port: int, broker_port: int
) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
    env = install.runtime.env(base)
    env.update(n8n_settings(install.version))
    env.update(
        N8N_USER_FOLDER=str(user_folder),
        N8N_PORT=str(port),
        # The broker defaults to 5679 whatever N8N_PORT is; two instances would collide there.
        N8N_RUNNERS_BROKER_PORT=str(broker_port),
        N8N_LISTEN_ADDRESS="127.0.0.1",
        N8N_HOST="127.0.0.1",
    )
    if not needs_node24(install.version):
        # isolated-vm does not compile against Node 20's headers; n8n 1.x then exits at start.
        env["N8N_EXPRESSION_ENGINE"] = "legacy"
    return env


def start_n8n(
    stack: ExitStack,
    install: N8nInstall,
    workdir: Path,
    progress: Progress,
    *,
    extra_env: Mapping[str, str] | None = None,
) -> tuple[ManagedProcess, str]:
    """Start n8n with a fresh user folder under `workdir`; return it and its base URL once ready.

    `extra_env` adds settings (queue mode's). The stop is registered on `stack` before
    waiting, so an interrupted start leaves nothing.
    """
    server = n8n_server(stack, install, workdir, extra_env=extra_env)
    progress(f"starting n8n {install.version} on {server.base_url} (log: {server.log_path})")
    seconds = server.start()
    progress(f"n8n {install.version} ready after {format_duration(seconds)}")
    assert server.process is not None  # start() sets it
    return server.process, server.base_url


def n8n_server(
    stack: ExitStack,
    install: N8nInstall,
    workdir: Path,
    *,
    extra_env: Mapping[str, str] | None = None,
) -> N8nServer:
    """An `n8n start` with a fresh user folder under `workdir` and free ports, not started."""
    port, broker_port = free_ports(2)
    user_folder = workdir / "n8n-home"
    user_folder.mkdir(parents=True, exist_ok=True)
    env = n8n_env(install, user_folder=user_folder, port=port, broker_port=broker_port)
    env.update(extra_env or {})
    return N8nServer(
        name=f"n8n {install.version}",
        argv=[str(install.runtime.node), str(install.n8n_bin), "start"],
        env=env,
        cwd=install.app_dir,
        log_path=workdir / "n8n.log",
        base_url=f"http://127.0.0.1:{port}",
        stack=stack,
    )


@dataclass
class N8nServer:
    """One `n8n start`, which can crash and start again as the same n8n: same user folder
    (SQLite database, workflows, credentials, API key, event log), port and settings. Each
    life appends to the same log."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    log_path: Path
    base_url: str
    stack: ExitStack  # stops every life of it
    process: ManagedProcess | None = None

    def start(self) -> float:
        """Start it and wait until it is ready; the seconds that took. The stop is registered
        on `stack` before waiting, so an interrupted start leaves nothing."""
        process = start_process(
            self.name, self.argv, cwd=self.cwd, env=self.env, log_path=self.log_path
        )
        self.stack.callback(process.stop)
        self.process = process
        return wait_until_started(process, self.base_url, self.name)

    def crash(self) -> None:
        """SIGKILL n8n and its task runner at once, as a lost machine or an OOM kill would."""
        assert self.process is not None, f"{self.name} was never started"
        self.process.kill()
        self.process.stop()  # nothing left to signal: closes its log handle and forgets it


def wait_until_started(
    process: ManagedProcess, base_url: str, name: str, check: Callable[[str], bool] = is_ready
) -> float:
    """Wait for `base_url`/healthz/readiness; the seconds waited. SetupFailed with the log's
    tail otherwise."""
    try:
        return wait_until_ready(
            base_url, timeout=READY_TIMEOUT, alive=process.is_alive, check=check
        )
    except SetupFailed as exc:
        tail = process.log_tail()
        raise SetupFailed(f"{name}: {exc}\n--- log tail ({process.log_path}) ---\n{tail}") from exc
