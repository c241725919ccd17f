"""Benchmark the lock primitives in a real n8n with a real Redis. Not a test: it prints figures.

    .venv/bin/python -m bench.lock_bench [--runs 50] [--callers 10] [--hold-ms 300]

1. Added latency: median wall time of a webhook workflow wrapped by add-lock-to-workflow,
   minus the same workflow without the lock (sequential calls, uncontended).
2. Contended efficiency = (N × hold) / wall time, for N callers holding one scope, with the
   wait loop polling every 1 s and every 0.25 s.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests
from click.testing import CliRunner

from n8n_lockkit.cli import main as n8nlock
from tests.testbed.endpoints import N8nInstance
from tests.testbed.session import running_testbed

NS = uuid.UUID("0d7e2c51-9a3b-4f61-8e2d-5c4b3a291807")


def cli(root: Path, *args: str) -> None:
    result = CliRunner().invoke(n8nlock, ["--workspace", str(root), *args])
    if result.exit_code != 0:
        raise SystemExit(f"n8nlock {' '.join(args)} failed:\n{result.output}")


def node(
    key: str, name: str, kind: str, version: float, x: int, params: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    node_id = str(uuid.uuid5(NS, f"{key}:{name}"))
    return {
        "id": node_id,
        "name": name,
        "type": kind,
        "typeVersion": version,
        "position": [x, 0],
        "parameters": params,
        **extra,
    }


def bench_workflow(key: str) -> dict[str, Any]:
    """Webhook → Hold (Wait hold_ms) → Work (Code); the locked copy is wrapped by the CLI."""
    hold = "={{ Math.max(0.01, $('Webhook').first().json.body.hold_ms / 1000) }}"
    webhook = {"httpMethod": "POST", "path": key, "responseMode": "lastNode", "options": {}}
    nodes = [
        node(
            key,
            "Webhook",
            "n8n-nodes-base.webhook",
            2,
            0,
            webhook,
            webhookId=str(uuid.uuid5(NS, key)),
        ),
        node(
            key,
            "Hold",
            "n8n-nodes-base.wait",
            1.1,
            220,
            {"resume": "timeInterval", "amount": hold, "unit": "seconds"},
            webhookId=str(uuid.uuid5(NS, key + "-hold")),
        ),
        node(
            key,
            "Work",
            "n8n-nodes-base.code",
            2,
            440,
            {"jsCode": "return [{ json: { done: Date.now() } }];"},
        ),
    ]
    chain = ["Webhook", "Hold", "Work"]
    connections = {
        a: {"main": [[{"node": b, "type": "main", "index": 0}]]}
        for a, b in itertools.pairwise(chain)
    }
    return {
        "name": key,
        "nodes": nodes,
        "connections": connections,
        "settings": {"executionOrder": "v1"},
    }


def prepare(root: Path, n8n: N8nInstance) -> None:
    CliRunner().invoke(n8nlock, ["init", str(root), "--env", "bench", "--url", n8n.base_url])
    cli(root, "redis-credential", "--host", n8n.redis_host, "--port", str(n8n.redis_port))
    for key in ("bench_plain", "bench_locked"):
        text = json.dumps(bench_workflow(key), indent=2)
        (root / "workflows" / f"{key}.template.json").write_text(text)


def install_primitives(root: Path, poll: float) -> None:
    cli(root, "create-lock", "--force-overwrite", "--poll-interval-seconds", str(poll))
    cli(
        root,
        "add-lock-to-workflow",
        "--workflow-key",
        "bench_locked",
        "--scope-expression",
        "={{ $json.body.scope }}",
        "--ttl-seconds",
        "60",
        "--max-wait-seconds",
        "600",
    )
    cli(root, "validate", "--env", "bench")
    cli(root, "push", "--env", "bench", "--activate")


def post(n8n: N8nInstance, path: str, body: dict[str, Any]) -> float:
    start = time.monotonic()
    response = requests.post(f"{n8n.base_url}/webhook/{path}", json=body, timeout=600)
    response.raise_for_status()
    return time.monotonic() - start


def latency(n8n: N8nInstance, path: str, runs: int) -> list[float]:
    body = {"scope": f"bench-{uuid.uuid4().hex[:8]}", "hold_ms": 0}
    for _ in range(5):  # warm-up: first executions compile and cache
        post(n8n, path, body)
    return [post(n8n, path, body) for _ in range(runs)]


def contended(n8n: N8nInstance, callers: int, hold_ms: int) -> float:
    body = {"scope": f"bench-{uuid.uuid4().hex[:8]}", "hold_ms": hold_ms}
    start = time.monotonic()
    with ThreadPoolExecutor(callers) as pool:
        list(pool.map(lambda _: post(n8n, "bench_locked", body), range(callers)))
    wall = time.monotonic() - start
    return callers * hold_ms / 1000 / wall


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--callers", type=int, default=10)
    parser.add_argument("--hold-ms", type=int, default=300)
    args = parser.parse_args()
    with running_testbed() as (n8n, _), tempfile.TemporaryDirectory() as tmp:
        os.environ["N8N_API_KEY"] = n8n.api_key
        root = Path(tmp) / "ws"
        prepare(root, n8n)
        install_primitives(root, poll=1.0)
        plain = latency(n8n, "bench_plain", args.runs)
        locked = latency(n8n, "bench_locked", args.runs)
        print(f"\nn8n {n8n.version}, {args.runs} sequential calls each (after 5 warm-up calls):")
        print(f"  without lock: median {ms(statistics.median(plain))}")
        print(f"  with lock:    median {ms(statistics.median(locked))}")
        added = statistics.median(locked) - statistics.median(plain)
        print(f"  added by acquire + release: {ms(added)} (median)")
        print(f"\n{args.callers} callers holding one scope for {args.hold_ms} ms each:")
        for poll in (1.0, 0.25):
            if poll != 1.0:
                install_primitives(root, poll)
            efficiency = contended(n8n, args.callers, args.hold_ms)
            print(
                f"  poll {poll:g} s: efficiency {efficiency:.2f} "
                f"(wall {args.callers * args.hold_ms / 1000 / efficiency:.1f} s)"
            )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
