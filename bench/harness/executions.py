"""Saved executions from n8n's public API, with their data, for the figures."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from pathlib import Path

import requests
from ruamel.yaml import YAML

from bench.harness.runs import Execution, webhook_body
from testbed.client import saved_executions
from testbed.endpoints import N8nInstance

Wanted = Callable[[Execution], bool]


def workflow_ids(root: Path) -> dict[str, str]:
    """Workflow key → n8n id, as push recorded them in the workspace's env `bench`."""
    env = YAML(typ="safe").load((root / "envs" / "bench.yml").read_text())
    return {key: str(entry["id"]) for key, entry in env["workflows"].items()}


def listing(n8n: N8nInstance, workflow_id: str) -> list[Execution]:
    """Every saved execution of a workflow, newest first, with its data."""
    return saved_executions(n8n, workflow_id, page_size=100)


def by_id(n8n: N8nInstance, workflow_id: str) -> dict[str, Execution]:
    return {str(e["id"]): e for e in listing(n8n, workflow_id)}


def in_scope(scopes: Collection[str]) -> Wanted:
    """The calls whose webhook body had one of `scopes`."""
    return lambda execution: webhook_body(execution).get("scope") in scopes


def matching(
    n8n: N8nInstance, workflow_id: str, wanted: Wanted, count: int, patience: float = 30.0
) -> list[Execution]:
    """The `count` finished executions `wanted` picks, waiting for n8n to save the last ones
    (a webhook may answer before its execution is stored)."""
    deadline = time.monotonic() + patience
    while True:
        found = [e for e in listing(n8n, workflow_id) if e.get("finished") and wanted(e)]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(1)


def newest(n8n: N8nInstance, workflow_id: str, wanted: Wanted, count: int) -> list[Execution]:
    """The `count` newest executions of a workflow, with their data, once they are finished
    and `wanted` picks them all (after 30 tries: those that are); only one page is read."""
    found: list[Execution] = []
    for _ in range(30):  # a webhook may answer before n8n has saved its execution
        response = requests.get(
            f"{n8n.base_url}/api/v1/executions",
            params={"workflowId": workflow_id, "limit": str(count), "includeData": "true"},
            headers={"X-N8N-API-KEY": n8n.api_key},
            timeout=120,
        )
        response.raise_for_status()
        found = [e for e in response.json()["data"] if e.get("finished") and wanted(e)]
        if len(found) == count:
            return found
        time.sleep(1)
    return found
