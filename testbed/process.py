"""Child processes (redis-server, postgres, n8n) that the test bed starts and must always stop."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

STOP_GRACE_SECONDS = 10.0

# Every process started here until it is stopped; the e2e conftest checks at session end that
# this is empty, which is how a missing finalizer would show up.
_LIVE: dict[int, ManagedProcess] = {}


@dataclass
class ManagedProcess:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    _log_file: IO[bytes] = field(repr=False)
    # PostgreSQL takes SIGTERM as "wait until every client has gone"; it is stopped with SIGINT.
    stop_signal: signal.Signals = signal.SIGTERM

    @property
    def pid(self) -> int:
        return self.popen.pid

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as exc:
            return f"(no log: {exc})"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """SIGTERM the whole process group, SIGKILL it after a grace period.

        The group matters for n8n: it spawns a task-runner child that must not outlive it.
        """
        try:
            if self.is_alive():
                _signal_group(self.pid, self.stop_signal)
                try:
                    self.popen.wait(timeout=STOP_GRACE_SECONDS)
                except subprocess.TimeoutExpired:
                    _signal_group(self.pid, signal.SIGKILL)
                    self.popen.wait(timeout=STOP_GRACE_SECONDS)
            # Children that ignored SIGTERM or were orphaned by the leader's exit.
            _signal_group(self.pid, signal.SIGKILL)
        finally:
            self._log_file.close()
            _LIVE.pop(self.pid, None)

    def kill(self) -> None:
        """SIGKILL the whole group at once, as a crash would; the log stays readable."""
        _signal_group(self.pid, signal.SIGKILL)
        self.popen.wait(timeout=STOP_GRACE_SECONDS)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group is already gone
        os.killpg(pgid, sig)


def _stop_all() -> None:
    for process in live_processes():
        with contextlib.suppress(Exception):
            process.stop()


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


_guarded = threading.Lock()
_GUARD: list[bool] = []


def _guard() -> None:
    """A run that is killed (`timeout`'s SIGTERM) unwinds like Ctrl-C and stops what it
    started, instead of leaving n8n and Redis running (and busy) after it."""
    with _guarded:
        if _GUARD:
            return
        _GUARD.append(True)
    atexit.register(_stop_all)
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _exit_on_sigterm)


def start_process(
    name: str,
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    log_path: Path,
    user: str | None = None,
) -> ManagedProcess:
    """Start `argv` in its own process group, output to `log_path`; as `user` when given (root
    only: PostgreSQL refuses to run as root)."""
    _guard()
    log_file = log_path.open("ab")
    # start_new_session: own process group (killed as a unit) and no SIGINT from the terminal,
    # so Ctrl-C reaches pytest only and teardown stops the children in order.
    popen = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        user=user,
    )
    process = ManagedProcess(name=name, popen=popen, log_path=log_path, _log_file=log_file)
    _LIVE[process.pid] = process
    return process


def live_processes() -> list[ManagedProcess]:
    return list(_LIVE.values())
