"""`make demo`: the main job on the bundled example workspace, against a real n8n and Redis.

Usage: python -m testbed.demo WORKSPACE   (a copy of the repository's envs/)

Starts a local Redis and n8n (installed and cached on first use), points the `dev` env at
them, and puts an example workflow in the workspace twice: a webhook that reads an order's
balance, adds one and writes it back. Then it runs n8nlock as a user would (redis-credential,
create-lock, add-lock-to-workflow on one copy, validate, push) and fires 8 concurrent calls at
the same order on each copy: without the lock updates are lost, with it none are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import redis
import requests

from n8n_lockkit.workspace.envconfig import load_env
from n8n_lockkit.workspace.layout import Workspace
from n8n_lockkit.workspace.plan import Plan, apply

from .endpoints import N8nInstance
from .session import running_testbed

EXAMPLE = Path(__file__).parents[1] / "tests" / "corpus" / "order_update.template.json"
CALLS = 8


def n8nlock(workspace: Path, *args: str) -> None:
    print(f"\n$ n8nlock {' '.join(args)}", flush=True)
    subprocess.run([sys.executable, "-m", "n8n_lockkit", *args], cwd=workspace, check=True)


def prepare(workspace: Path, url: str) -> None:
    env = load_env(Workspace(workspace), "dev")
    env.document.set(("n8n", "url"), url)
    apply(Plan((env.change(),)), workspace)
    example = json.loads(EXAMPLE.read_text())
    (workspace / "workflows").mkdir(exist_ok=True)
    for key, path in (("orders", "demo-orders"), ("orders_unlocked", "demo-orders-unlocked")):
        copy = json.loads(json.dumps(example))
        copy["name"] = f"Order update ({key})"
        webhook = next(n for n in copy["nodes"] if n["type"] == "n8n-nodes-base.webhook")
        webhook["parameters"]["path"] = path
        webhook["webhookId"] = str(uuid.uuid5(uuid.NAMESPACE_URL, path))
        text = json.dumps(copy, indent=2) + "\n"
        (workspace / "workflows" / f"{key}.template.json").write_text(text)


def hammer(n8n: N8nInstance, redis_url: str, path: str) -> str:
    order = f"demo-{uuid.uuid4().hex[:6]}"

    def call(_: int) -> None:
        response = requests.post(
            f"{n8n.base_url}/webhook/{path}", json={"orderId": order}, timeout=120
        )
        response.raise_for_status()

    with ThreadPoolExecutor(CALLS) as pool:
        list(pool.map(call, range(CALLS)))
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    return str(client.get(f"corpus-balance-{order}"))


def main(workspace: Path) -> None:
    with running_testbed() as (n8n, redis_endpoint):
        prepare(workspace, n8n.base_url)
        os.environ["N8N_API_KEY"] = n8n.api_key
        n8nlock(
            workspace, "redis-credential", "--host", n8n.redis_host, "--port", str(n8n.redis_port)
        )
        n8nlock(workspace, "create-lock", "--include-error-handler", "--include-rate-limit")
        n8nlock(
            workspace,
            "add-lock-to-workflow",
            "--workflow-key",
            "orders",
            "--scope-expression",
            "={{ 'order-' + $json.body.orderId }}",
            "--ttl-seconds",
            "60",
            "--max-wait-seconds",
            "60",
        )
        n8nlock(workspace, "validate", "--env", "dev")
        n8nlock(workspace, "push", "--env", "dev", "--activate")
        n8nlock(workspace, "push", "--env", "dev", "--activate")  # the second sends no write
        print(f"\n{CALLS} concurrent calls add 1 to the same order's balance (each takes 0.5 s):")
        print(
            f"  without a lock: balance {hammer(n8n, redis_endpoint.url, 'demo-orders-unlocked')}"
            f" (updates were lost)"
        )
        print(f"  with the lock:  balance {hammer(n8n, redis_endpoint.url, 'demo-orders')}")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
