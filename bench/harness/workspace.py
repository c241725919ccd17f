"""The bench workflow, an n8nlock workspace on the test bed, wrapping and pushing.

A bench's workflows are written as templates into a workspace whose env `bench` points at the
test bed's n8n, wrapped by this checkout's n8nlock (`cli`) or another tree's (`tree_cli`), and
pushed; a `Target` is one of them in n8n.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from n8n_lockkit.cli import main as n8nlock
from testbed.endpoints import N8nInstance

REPO = Path(__file__).parents[2]
NS = uuid.UUID("0d7e2c51-9a3b-4f61-8e2d-5c4b3a291807")
Run = Callable[..., None]  # an n8nlock: run(workspace root, *arguments)
Workflow = dict[str, Any]


@dataclass(frozen=True)
class Target:
    """A workflow in n8n: its label in the figures, its webhook path (= workflow key) and the
    workspace that pushed it."""

    label: str
    key: str
    root: Path


def cli(root: Path, *args: str) -> None:
    """This checkout's n8nlock on workspace `root`."""
    result = CliRunner().invoke(n8nlock, ["--workspace", str(root), *args])
    if result.exit_code != 0:
        raise SystemExit(f"n8nlock {' '.join(args)} failed:\n{result.output}")


def checkout(ref: str, into: Path) -> Path:
    """The package and templates of git ref `ref`, unpacked into `into` (read-only git)."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "n8n_lockkit", "templates"],
        capture_output=True,
        check=True,
    )
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def tree_cli(tree: Path) -> Run:
    """The n8nlock of another tree: its own package (cwd first on sys.path), this venv's
    dependencies."""

    def run(root: Path, *args: str) -> None:
        command = [sys.executable, "-m", "n8n_lockkit", "--workspace", str(root), *args]
        result = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise SystemExit(f"n8nlock ({tree}) {' '.join(args)} failed:\n{result.stderr}")

    return run


def prepare(root: Path, n8n: N8nInstance, run: Run = cli) -> None:
    """A workspace `root` with env `bench` on the test bed's n8n and its Redis credential.
    `run` is the n8nlock to use (this checkout's, or another tree's)."""
    run(root.parent, "init", str(root), "--env", "bench", "--url", n8n.base_url)
    run(root, "redis-credential", "--host", n8n.redis_host, "--port", str(n8n.redis_port))


def push(root: Path, run: Run = cli, *, activate: bool = True, keys: Sequence[str] = ()) -> None:
    """Every workflow of the workspace to env `bench` (only `keys`, when given), published
    with `activate`."""
    run(root, "push", "--env", "bench", *(["--activate"] if activate else []), *keys)


def wrap_args(key: str) -> list[str]:
    """The lock every bench wraps a workflow in: on the body's scope, TTL 60 s, max wait 600 s."""
    return [
        "add-lock-to-workflow",
        "--workflow-key",
        key,
        "--scope-expression",
        "={{ $json.body.scope }}",
        "--ttl-seconds",
        "60",
        "--max-wait-seconds",
        "600",
    ]


def node(
    key: str, name: str, kind: str, version: float, x: int, params: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """A node of workflow `key` at (x, 0), its id derived from the key and its name."""
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


def webhook(key: str) -> dict[str, Any]:
    """The trigger of every bench workflow: POST /webhook/`key`, answering with the last node."""
    parameters = {"httpMethod": "POST", "path": key, "responseMode": "lastNode", "options": {}}
    return node(
        key, "Webhook", "n8n-nodes-base.webhook", 2, 0, parameters,
        webhookId=str(uuid.uuid5(NS, key)),
    )  # fmt: skip


def bench_workflow(key: str) -> Workflow:
    """Webhook → Hold (Wait hold_ms) → Work (Code); the locked copy is wrapped by the CLI."""
    hold = "={{ Math.max(0.01, $('Webhook').first().json.body.hold_ms / 1000) }}"
    nodes = [
        webhook(key),
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


def chained(key: str, nodes: list[dict[str, Any]]) -> Workflow:
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


def write_template(root: Path, workflow: Workflow) -> None:
    path = root / "workflows" / f"{workflow['name']}.template.json"
    path.write_text(json.dumps(workflow, indent=1))
