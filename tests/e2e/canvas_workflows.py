"""Small user workflows whose canvas the editor tests look at (tests/e2e/test_canvas.py and
bench/canvas_shots.py): laid out the way people draw them, one 220 px step per node."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

NS = uuid.UUID("6f1d3c2a-55b0-4a8e-9d61-2c7e0f4b9a13")
STEP = 220

Workflow = dict[str, Any]


def _node(key: str, name: str, kind: str, version: float, x: int, y: int, **extra: Any) -> Any:
    return {
        "id": str(uuid.uuid5(NS, f"{key}:{name}")),
        "name": name,
        "type": kind,
        "typeVersion": version,
        "position": [x, y],
        "parameters": extra.pop("parameters", {}),
        **extra,
    }


def _webhook(key: str, path: str) -> Any:
    parameters = {"httpMethod": "POST", "path": path, "responseMode": "lastNode", "options": {}}
    webhook_id = str(uuid.uuid5(NS, f"{key}:webhook"))
    return _node(
        key,
        "Webhook",
        "n8n-nodes-base.webhook",
        2,
        0,
        0,
        parameters=parameters,
        webhookId=webhook_id,
    )


def _set(key: str, name: str, x: int, y: int, field: str, value: str) -> Any:
    assignment = {
        "id": str(uuid.uuid5(NS, f"{key}:{name}:{field}")),
        "name": field,
        "value": value,
        "type": "string",
    }
    parameters = {"assignments": {"assignments": [assignment]}, "options": {}}
    return _node(key, name, "n8n-nodes-base.set", 3.4, x, y, parameters=parameters)


def _code(key: str, name: str, x: int, y: int, source: str) -> Any:
    return _node(key, name, "n8n-nodes-base.code", 2, x, y, parameters={"jsCode": source})


def _links(*pairs: tuple[str, int, str]) -> dict[str, Any]:
    """connections from (source, output, target) triples."""
    connections: dict[str, Any] = {}
    for source, output, target in pairs:
        outputs = connections.setdefault(source, {"main": []})["main"]
        while len(outputs) <= output:
            outputs.append([])
        outputs[output].append({"node": target, "type": "main", "index": 0})
    return connections


def _workflow(key: str, nodes: list[Any], connections: dict[str, Any]) -> Workflow:
    return {
        "name": key,
        "nodes": nodes,
        "connections": connections,
        "settings": {"executionOrder": "v1"},
    }


def webhook_five(key: str, path: str) -> Workflow:
    """Webhook → Prepare (Set) → Big Order? (If) → Flag / Pass (two Sets)."""
    condition = {
        "id": str(uuid.uuid5(NS, f"{key}:condition")),
        "leftValue": "={{ $json.body.amount }}",
        "rightValue": 100,
        "operator": {"type": "number", "operation": "gt"},
    }
    options = {"caseSensitive": True, "leftValue": "", "typeValidation": "loose", "version": 2}
    check = {"conditions": {"options": options, "conditions": [condition], "combinator": "and"}}
    nodes = [
        _webhook(key, path),
        _set(key, "Prepare", STEP, 0, "stage", "prepared"),
        _node(key, "Big Order?", "n8n-nodes-base.if", 2.2, 2 * STEP, 0, parameters=check),
        _set(key, "Flag", 3 * STEP, -100, "flag", "big"),
        _set(key, "Pass", 3 * STEP, 100, "flag", "small"),
    ]
    links = _links(
        ("Webhook", 0, "Prepare"),
        ("Prepare", 0, "Big Order?"),
        ("Big Order?", 0, "Flag"),
        ("Big Order?", 1, "Pass"),
    )
    return _workflow(key, nodes, links)


def webhook_two(key: str, path: str) -> Workflow:
    """Webhook → Answer (Set)."""
    nodes = [_webhook(key, path), _set(key, "Answer", STEP, 0, "answer", "ok")]
    return _workflow(key, nodes, _links(("Webhook", 0, "Answer")))


def scheduled_loop(key: str, path: str) -> Workflow:
    """Schedule Trigger → Items → Loop Over Items ⇄ Handle Batch, then Report (`path` unused)."""
    rule = {"interval": [{"field": "hours", "hoursInterval": 1}]}
    nodes = [
        _node(
            key,
            "Schedule Trigger",
            "n8n-nodes-base.scheduleTrigger",
            1.2,
            0,
            0,
            parameters={"rule": rule},
        ),
        _code(key, "Items", STEP, 0, "return [1, 2, 3, 4, 5].map((id) => ({ json: { id } }));"),
        _node(
            key,
            "Loop Over Items",
            "n8n-nodes-base.splitInBatches",
            3,
            2 * STEP,
            0,
            parameters={"batchSize": 2, "options": {}},
        ),
        _set(key, "Handle Batch", 3 * STEP, 100, "done", "yes"),
        _code(key, "Report", 3 * STEP, -100, "return [{ json: { n: $input.all().length } }];"),
    ]
    links = _links(
        ("Schedule Trigger", 0, "Items"),
        ("Items", 0, "Loop Over Items"),
        ("Loop Over Items", 0, "Report"),
        ("Loop Over Items", 1, "Handle Batch"),
        ("Handle Batch", 0, "Loop Over Items"),
    )
    return _workflow(key, nodes, links)


WORKFLOWS: dict[str, Callable[[str, str], Workflow]] = {
    "webhook_five": webhook_five,
    "webhook_two": webhook_two,
    "scheduled_loop": scheduled_loop,
}
