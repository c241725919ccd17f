"""Workflow JSON for test-bed checks (shapes verified in notes n8n-testbed.md §5.1)."""

from __future__ import annotations

import uuid
from typing import Any


def counter_workflow(
    *, name: str, path: str, key: str, credential: dict[str, Any], ttl: int = 60
) -> dict[str, Any]:
    """Webhook (GET `path`) -> Redis INCR `key` with EXPIRE `ttl` -> Code returning {count}."""
    webhook = _node(
        "Webhook",
        "n8n-nodes-base.webhook",
        2,
        0,
        {"httpMethod": "GET", "path": path, "responseMode": "lastNode", "options": {}},
    )
    webhook["webhookId"] = str(uuid.uuid4())
    incr = _node(
        "Redis",
        "n8n-nodes-base.redis",
        1,
        220,
        {"operation": "incr", "key": key, "expire": True, "ttl": ttl},
    )
    # One INCR per execution even if an upstream node ever emits several items.
    incr["executeOnce"] = True
    incr["credentials"] = {"redis": {"id": credential["id"], "name": credential["name"]}}
    # The Redis node outputs {<key>: <count>}; reading the only value avoids quoting the key in JS.
    code = "return [{ json: { count: Object.values($input.first().json)[0] } }];"
    return {
        "name": name,
        "nodes": [webhook, incr, _node("Code", "n8n-nodes-base.code", 2, 440, {"jsCode": code})],
        "connections": {"Webhook": _to("Redis"), "Redis": _to("Code")},
        "settings": {"executionOrder": "v1"},
    }


def _node(
    name: str, node_type: str, version: int, x: int, parameters: dict[str, Any]
) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "name": name,
        "type": node_type,
        "typeVersion": version,
        "position": [x, 0],
        "parameters": parameters,
    }


def _to(target: str) -> dict[str, Any]:
    return {"main": [[{"node": target, "type": "main", "index": 0}]]}
