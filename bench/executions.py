"""Saved executions from n8n's public API, with their data, for the figures."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from testbed.client import saved_executions
from testbed.endpoints import N8nInstance

Execution = dict[str, Any]


def workflow_ids(root: Path) -> dict[str, str]:
    """Workflow key → n8n id, as push recorded them in the workspace's env `bench`."""
    env = YAML(typ="safe").load((root / "envs" / "bench.yml").read_text())
    return {key: str(entry["id"]) for key, entry in env["workflows"].items()}


def listing(n8n: N8nInstance, workflow_id: str) -> list[Execution]:
    """Every saved execution of a workflow, newest first, with its data."""
    return saved_executions(n8n, workflow_id, page_size=100)


def matching(
    n8n: N8nInstance,
    workflow_id: str,
    wanted: Callable[[Execution], bool],
    count: int,
    patience: float = 30.0,
) -> list[Execution]:
    """The `count` finished executions `wanted` picks, waiting for n8n to save the last ones
    (a webhook may answer before its execution is stored)."""
    deadline = time.monotonic() + patience
    while True:
        found = [e for e in listing(n8n, workflow_id) if e.get("finished") and wanted(e)]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(1)


def by_id(n8n: N8nInstance, workflow_id: str) -> dict[str, Execution]:
    return {str(e["id"]): e for e in listing(n8n, workflow_id)}
