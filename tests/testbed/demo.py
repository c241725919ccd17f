"""`make demo`: the main job on the bundled example workspace, against a real n8n and Redis.

Usage: python -m tests.testbed.demo WORKSPACE   (a copy of the repository's envs/)

Starts a local Redis and n8n (installed and cached on first use), points the `dev` env at
them, then runs n8nlock as a user would: redis-credential, create-lock, validate, push. It
then fires concurrent calls at one lock scope and shows that they ran one at a time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from n8n_lockkit.envconfig import load_env
from n8n_lockkit.plan import Plan, apply
from n8n_lockkit.workspace import Workspace

from .session import running_testbed

CALLERS = Path(__file__).parent.parent / "e2e" / "workflows"


def n8nlock(workspace: Path, *args: str) -> None:
    print(f"\n$ n8nlock {' '.join(args)}", flush=True)
    command = [sys.executable, "-m", "n8n_lockkit", *args]
    subprocess.run(command, cwd=workspace, check=True)


def point_env_at(workspace: Path, url: str) -> None:
    env = load_env(Workspace(workspace), "dev")
    env.document.set(("n8n", "url"), url)
    apply(Plan((env.change(),)), workspace)


def show_serialised_calls(base_url: str, calls: int = 5) -> None:
    print(f"\n{calls} concurrent calls, each holding lock 'demo-orders' for 300 ms:")
    body = {"scope": "demo-orders", "ttl": 60, "max_wait": 60, "hold_ms": 300}
    start = time.monotonic()

    def call(_: int) -> dict[str, object]:
        response = requests.post(f"{base_url}/webhook/e2e-lock", json=body, timeout=120)
        response.raise_for_status()
        acquire: dict[str, object] = response.json()["acquire"]
        return acquire

    with ThreadPoolExecutor(calls) as pool:
        results = sorted(pool.map(call, range(calls)), key=lambda a: str(a["locked_at"]))
    for acquire in results:
        print(f"  fence {acquire['fence']}: acquired at {acquire['locked_at']}")
    print(f"all {calls} done in {time.monotonic() - start:.1f} s, one holder at a time")


def main(workspace: Path) -> None:
    with running_testbed() as (n8n, _):
        point_env_at(workspace, n8n.base_url)
        os.environ["N8N_API_KEY"] = n8n.api_key
        n8nlock(
            workspace, "redis-credential", "--host", n8n.redis_host, "--port", str(n8n.redis_port)
        )
        n8nlock(workspace, "create-lock", "--include-error-handler", "--include-rate-limit")
        for caller in CALLERS.glob("*.template.json"):
            shutil.copy(caller, workspace / "workflows" / caller.name)
        n8nlock(workspace, "validate", "--env", "dev")
        n8nlock(workspace, "push", "--env", "dev")
        n8nlock(workspace, "push", "--env", "dev")  # the second push sends no write
        show_serialised_calls(n8n.base_url)


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
