"""Waiting until an n8n answers /healthz/readiness."""

from __future__ import annotations

from collections.abc import Callable

import requests

from .errors import SetupFailed
from .polling import WaitTimeout, wait_for


def is_ready(base_url: str) -> bool:
    # /healthz turns 200 before the DB migrations run; /healthz/readiness waits for them. n8n
    # 1.x mounts the /rest routes only after that, so ask one of them too (no auth needed).
    return _answers_200(f"{base_url}/healthz/readiness") and _answers_200(
        f"{base_url}/rest/settings"
    )


def worker_is_ready(base_url: str) -> bool:
    """An `n8n worker`'s server (QUEUE_HEALTH_CHECK_ACTIVE): DB migrated, Redis connected, and
    the queue consumer set up."""
    return _answers_200(f"{base_url}/healthz/readiness")


def _answers_200(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def wait_until_ready(
    base_url: str,
    *,
    timeout: float,
    alive: Callable[[], bool],
    check: Callable[[str], bool] = is_ready,
) -> float:
    """Seconds until `check` passes; SetupFailed when the process dies or the deadline passes."""

    def ready() -> bool:
        if not alive():
            raise SetupFailed("the n8n process exited during startup")
        return check(base_url)

    try:
        return wait_for(ready, timeout=timeout, interval=0.25, what=f"{base_url}/healthz/readiness")
    except WaitTimeout as exc:
        raise SetupFailed(str(exc)) from exc
