"""Put corpus workflows into the lock bed: a plain copy and a copy wrapped by the CLI.

Both run side by side in the same n8n (`<key>_plain` on `/webhook/<path>-plain`, `<key>` on
`/webhook/<path>`), so a test can call both with the same payload and compare what every
node produced.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import requests

from tests.e2e.lockbed import LockBed, run_cli, wait_until

CORPUS = Path(__file__).parent.parent / "corpus"
_VOLATILE = frozenset({"webhookUrl", "headers", "executionMode"})


def install(bed: LockBed, name: str, *wrap_args: str, suffix: str = "") -> tuple[str, str]:
    """Write `<name><suffix>_plain` and `<name><suffix>`, wrap the second, push both.

    Returns the two keys (plain, wrapped).
    """
    source = json.loads((CORPUS / f"{name}.template.json").read_text())
    plain_key, wrapped_key = f"{name}{suffix}_plain", f"{name}{suffix}"
    for key, tail in ((plain_key, f"{suffix}-plain"), (wrapped_key, suffix)):
        workflow = json.loads(json.dumps(source))
        workflow["name"] = f"{source['name']} ({key})"
        for node in workflow["nodes"]:
            if node["type"] == "n8n-nodes-base.webhook":
                node["parameters"]["path"] += tail
                node["webhookId"] = str(uuid.uuid5(uuid.NAMESPACE_URL, key))
        path = bed.root / "workflows" / f"{key}.template.json"
        path.write_text(json.dumps(workflow, indent=2))
    for args in wrap_args_list(wrap_args):
        run_cli(bed.root, *args[:1], "--workflow-key", wrapped_key, *args[1:])
    run_cli(bed.root, "validate", "--env", "e2e")
    keys = ("error_handler_lock_cleanup", plain_key, wrapped_key)
    run_cli(bed.root, "push", "--env", "e2e", "--activate", *keys)
    return plain_key, wrapped_key


def wrap_args_list(wrap_args: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Split `("add-lock-to-workflow", …, "add-rate-limit", …)` into one tuple per command."""
    commands: list[list[str]] = []
    for arg in wrap_args:
        if arg in ("add-lock-to-workflow", "add-rate-limit"):
            commands.append([arg])
        else:
            commands[-1].append(arg)
    return [tuple(c) for c in commands]


def webhook_path(name: str) -> str:
    source = json.loads((CORPUS / f"{name}.template.json").read_text())
    return next(
        str(n["parameters"]["path"])
        for n in source["nodes"]
        if n["type"] == "n8n-nodes-base.webhook"
    )


def normalised(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: normalised(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [normalised(v) for v in value]
    return value


def node_outputs(bed: LockBed, workflow_key: str, runs: int) -> dict[str, Any]:
    """What each node output in execution number `runs` of a workflow: {node: [[json…]…]}.

    A Respond to Webhook node answers before the execution ends, so wait for it to end.
    """
    workflow_id = bed.workflow_id(workflow_key)

    def finished() -> list[dict[str, Any]]:
        done = [e for e in bed.executions(workflow_id) if e.get("stoppedAt")]
        return done if len(done) >= runs else []

    wait_until(lambda: bool(finished()), 30, f"{workflow_key} finished run {runs}")
    newest = max(finished(), key=lambda e: int(e["id"]))
    response = requests.get(
        f"{bed.n8n.base_url}/api/v1/executions/{newest['id']}",
        params={"includeData": "true"},
        headers={"X-N8N-API-KEY": bed.n8n.api_key},
        timeout=30,
    )
    response.raise_for_status()
    run_data = response.json()["data"]["resultData"]["runData"]
    return {
        node: [
            [[normalised(item["json"]) for item in output or []] for output in run["data"]["main"]]
            for run in runs
            if "data" in run
        ]
        for node, runs in run_data.items()
    }
