"""What every benchmark shares: the bench workflow, a workspace on the test bed, HTTP calls."""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import requests
from click.testing import CliRunner

from n8n_lockkit.cli import main as n8nlock
from testbed.endpoints import N8nInstance

NS = uuid.UUID("0d7e2c51-9a3b-4f61-8e2d-5c4b3a291807")
Run = Callable[..., None]


def cli(root: Path, *args: str) -> None:
    """This checkout's n8nlock on workspace `root`."""
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
    return chained(key, nodes)


def chained(key: str, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """A workflow named `key` whose nodes run one after the other, in the order given."""
    connections = {
        a["name"]: {"main": [[{"node": b["name"], "type": "main", "index": 0}]]}
        for a, b in itertools.pairwise(nodes)
    }
    return {
        "name": key,
        "nodes": nodes,
        "connections": connections,
        "settings": {"executionOrder": "v1"},
    }


def write_template(root: Path, workflow: dict[str, Any]) -> None:
    path = root / "workflows" / f"{workflow['name']}.template.json"
    path.write_text(json.dumps(workflow, indent=1))


def prepare(root: Path, n8n: N8nInstance, run: Run = cli) -> None:
    """A workspace `root` with env `bench` on the test bed's n8n and its Redis credential.
    `run` is the n8nlock to use (this checkout's, or another tree's)."""
    run(root.parent, "init", str(root), "--env", "bench", "--url", n8n.base_url)
    run(root, "redis-credential", "--host", n8n.redis_host, "--port", str(n8n.redis_port))


def post(n8n: N8nInstance, path: str, body: dict[str, Any]) -> float:
    """Seconds until the webhook at `path` answered (an error status raises)."""
    start = time.monotonic()
    response = requests.post(f"{n8n.base_url}/webhook/{path}", json=body, timeout=600)
    response.raise_for_status()
    return time.monotonic() - start


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def report_text(command: str, intro: str, sections: Sequence[list[str]]) -> str:
    """A benchmark's markdown result: the command that produced it, what was measured, and
    its tables, each followed by a blank line."""
    lines = [f"`{command}`", "", intro, ""]
    for section in sections:
        lines += [*section, ""]
    return "\n".join(lines)


def print_sections(sections: Sequence[list[str]], result: dict[str, Any]) -> None:
    """The tables of a run on the terminal, then how long it took and how loaded the machine was."""
    print()
    for section in sections:
        print("\n".join(section))
        print()
    before, after = result["load_average_1min"]
    print(
        f"calls {result['calls_seconds']:.0f} s, run {result['seconds'] / 60:.1f} min "
        f"(n8n {result['n8n']}); load average {before:.1f} → {after:.1f}"
    )
