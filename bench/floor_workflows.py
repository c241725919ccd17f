"""The workflows of floor_bench (and of lean_budget and lean_variants, which measure beside them):
plain, the floor of three bare Redis nodes, and plain wrapped by n8nlock.

- plain: Webhook → Wait (10 ms) → Set, answering with the last node;
- floor: Webhook → Redis INCR → Redis GET → Redis SET → Wait → Set: three single-item Redis
  node executions on one key derived from the body's scope (no TTL: "bare");
- lock: plain wrapped by this checkout's `add-lock-to-workflow` on `={{ $json.body.scope }}`
  (form `rate-limit`: by `add-rate-limit` on that scope, a sliding limit too high to refuse);
- baseline: plain wrapped by another git ref's own n8nlock, in a workspace of its own.

Each is called with a scope in the webhook body, in one of two MODES, and the round number.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.harness.calls import WARM_UP, Body
from bench.harness.executions import Wanted
from bench.harness.runs import REDIS, Execution, webhook_body
from bench.harness.stats import FLOOR, PLAIN
from bench.harness.workspace import (
    NS,
    Run,
    Target,
    Workflow,
    chained,
    checkout,
    cli,
    node,
    prepare,
    push,
    tree_cli,
    webhook,
    wrap_args,
    write_template,
)
from n8n_lockkit.primitives.nodekit import REDIS_CREDENTIALS
from testbed.endpoints import N8nInstance

LOCK, BASELINE = "lock", "baseline"
KEYS = {PLAIN: "floor_plain", FLOOR: "floor_redis", LOCK: "floor_lock", BASELINE: "floor_base"}
STICKY = "n8n-nodes-base.stickyNote"
# How floor_bench calls every workflow: "repeated", one scope per workflow for every call;
# "new", a fresh uuid scope per call.
MODES = ("repeated", "new")


def plain_body(key: str, x: int) -> list[dict[str, Any]]:
    """Wait (10 ms) → Set, from `x` on."""
    wait = node(
        key, "Wait", "n8n-nodes-base.wait", 1.1, x,
        {"resume": "timeInterval", "amount": 0.01, "unit": "seconds"},
        webhookId=str(uuid.uuid5(NS, key + "-wait")),
    )  # fmt: skip
    done = node(
        key, "Set", "n8n-nodes-base.set", 3.4, x + 220,
        {"mode": "raw", "jsonOutput": '{ "done": true }', "includeOtherFields": False,
         "options": {}},
    )  # fmt: skip
    return [wait, done]


def plain_workflow(key: str) -> Workflow:
    """Webhook → Wait (10 ms) → Set ("lastNode" response)."""
    return chained(key, [webhook(key), *plain_body(key, 220)])


def floor_workflow(key: str) -> Workflow:
    """Webhook → Redis INCR → Redis GET → Redis SET → Wait → Set: three single-item Redis node
    executions on one key from the body's scope, with the workspace's Redis credential."""
    redis_key = "=n8nlock-floor:{{ $('Webhook').first().json.body.scope }}"
    operations: dict[str, dict[str, Any]] = {
        "Redis INCR": {"operation": "incr", "key": redis_key, "expire": False},
        "Redis GET": {"operation": "get", "propertyName": "value", "key": redis_key,
                      "keyType": "string", "options": {"dotNotation": False}},
        "Redis SET": {"operation": "set", "key": redis_key, "value": "={{ $json.value }}",
                      "keyType": "string", "expire": False},
    }  # fmt: skip
    redis_nodes = [
        node(key, name, REDIS, 1, 220 * (index + 1), parameters, credentials=REDIS_CREDENTIALS)
        for index, (name, parameters) in enumerate(operations.items())
    ]
    return chained(key, [webhook(key), *redis_nodes, *plain_body(key, 220 * 4)])


# What --form wraps the plain workflow with (harness.workspace.wrap_args: the lock).
FORMS: dict[str, Callable[[str], list[str]]] = {
    "lock": wrap_args,
    "rate-limit": lambda key: [
        "add-rate-limit", "--workflow-key", key, "--scope-expression", "={{ $json.body.scope }}",
        "--limit", "1000000", "--window-seconds", "60",
    ],
}  # fmt: skip


def wrapped(root: Path, key: str, run: Run, form: str = "lock") -> None:
    """The plain workflow as `key`, wrapped by `run`'s n8nlock (the lock, or another
    `FORMS` entry); pushed with the rest of the workspace."""
    write_template(root, plain_workflow(key))
    run(root, *FORMS[form](key))


def deploy(n8n: N8nInstance, tmp: Path, baseline: str | None, form: str = "lock") -> list[Target]:
    """plain, floor and lock in this checkout's workspace; baseline in REF's own."""
    root = tmp / "main"
    prepare(root, n8n, cli)
    write_template(root, plain_workflow(KEYS[PLAIN]))
    write_template(root, floor_workflow(KEYS[FLOOR]))
    wrapped(root, KEYS[LOCK], cli, form)
    push(root)
    targets = [Target(label, KEYS[label], root) for label in (PLAIN, FLOOR, LOCK)]
    if baseline:
        run = tree_cli(checkout(baseline, tmp / "baseline-tree"))
        other = tmp / "baseline"
        prepare(other, n8n, run)
        wrapped(other, KEYS[BASELINE], run, form)
        push(other, run)
        targets.append(Target(BASELINE, KEYS[BASELINE], other))
    return targets


def generated(target: Target) -> dict[str, int]:
    """Node counts of the pushed template against the plain workflow's."""
    path = target.root / "workflows" / f"{target.key}.template.json"
    nodes = json.loads(path.read_text())["nodes"]
    own = {n["name"] for n in plain_workflow(target.key)["nodes"]}
    added = [n for n in nodes if n["name"] not in own]
    return {
        "nodes": sum(1 for n in nodes if n["type"] != STICKY),
        "generated_nodes": sum(1 for n in added if n["type"] != STICKY),
        "generated_redis_nodes": sum(1 for n in added if n["type"] == REDIS),
        "sticky_notes": sum(1 for n in nodes if n["type"] == STICKY),
    }


def call_body(token: str, mode: str, key: str) -> Callable[[int], Body]:
    """The body of round n's call of workflow `key` in scope mode `mode` of run `token`."""

    def body(number: int) -> Body:
        base = f"{mode}-{token}-{key}"
        return {
            "scope": base if mode == "repeated" else f"{base}-{uuid.uuid4().hex}",
            "round": number,
        }

    return body


def counted(mode: str, token: str, key: str) -> Wanted:
    """The counted (not warm-up) calls of one workflow in one scope mode."""
    prefix = f"{mode}-{token}-{key}"

    def wanted(execution: Execution) -> bool:
        body = webhook_body(execution)
        scope = str(body.get("scope", ""))
        ours = scope == prefix or scope.startswith(prefix + "-")
        return ours and int(body.get("round", -1)) >= WARM_UP

    return wanted
