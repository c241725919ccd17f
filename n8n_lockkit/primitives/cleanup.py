"""The `error_handler_lock_cleanup` primitive: an Error Trigger workflow of Code nodes that
releases every lock a failed execution still held.

Its nodes keep the ids, names, positions and parameters of the Jinja template it was rendered
from up to issue 23 (node ids: uuid5 of primitive key and node ident; no role notes), so that a
workflow file written by an earlier n8nlock is still the pristine primitive. Its Code nodes run
`templates/js/primitive/error_handler_lock_cleanup/*.js` as they are, comments included.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

from n8n_lockkit.primitives import keys, nodekit, templating
from n8n_lockkit.primitives.catalogue import ERROR_HANDLER

Workflow = dict[str, Any]
_NODE_IDS = uuid.UUID("6f1d2c3e-5b7a-4c1e-9a0d-8e2f4b6c7d10")
_SCRIPTS = "primitive/error_handler_lock_cleanup"


def _id(ident: str) -> str:
    return str(uuid.uuid5(_NODE_IDS, f"{ERROR_HANDLER.key}:{ident}"))


def _node(
    ident: str, name: str, kind: str, version: float, x: int, y: int, **fields: Any
) -> nodekit.Node:
    """The node head of the old template, then `fields` in the order given."""
    return {
        "id": _id(ident),
        "name": name,
        "type": kind,
        "typeVersion": version,
        "position": [x, y],
        **fields,
    }


def _code(ident: str, name: str, script: str, x: int, y: int) -> nodekit.Node:
    code = templating.code(f"{_SCRIPTS}/{script}")
    parameters = {"mode": "runOnceForAllItems", "language": "javaScript", "jsCode": code}
    return _node(ident, name, "n8n-nodes-base.code", 2, x, y, parameters=parameters)


def _if(ident: str, name: str, expression: str, x: int, y: int) -> nodekit.Node:
    condition = _id(f"{ident}-condition")
    parameters = nodekit.if_parameters(ERROR_HANDLER.key, expression, condition)
    return _node(ident, name, "n8n-nodes-base.if", 2.2, x, y, parameters=parameters)


def _redis(
    ident: str, name: str, parameters: dict[str, Any], x: int, y: int, once: bool = True
) -> nodekit.Node:
    return _node(
        ident, name, "n8n-nodes-base.redis", 1, x, y,
        executeOnce=once, retryOnFail=False, parameters=parameters,
        credentials=nodekit.REDIS_CREDENTIALS,
    )  # fmt: skip


def _get(key: str, into: str, key_type: str) -> dict[str, Any]:
    return {
        "key": key,
        "keyType": key_type,
        "operation": "get",
        "options": {"dotNotation": False},
        "propertyName": into,
    }


def error_handler_lock_cleanup() -> Workflow:
    """Error Trigger → Prepare Cleanup → the execution's lock index → the locks it lists →
    those still held by the failed execution released → their heals counted → Log Cleanup."""
    release = {
        "expire": "={{ $json.set_ttl > 0 }}",
        "key": "={{ $json.set_key }}",
        "keyType": "string",
        "operation": "set",
        "ttl": "={{ Math.max(1, $json.set_ttl) }}",
        "value": "={{ $json.set_value }}",
    }
    count = {
        "expire": True,
        "key": "={{ $json.healed_key }}",
        "operation": "incr",
        "ttl": keys.STATS_TTL_SECONDS,
    }
    terminal = "$json.cleanup_terminal !== true"
    index = _get("={{ $json.index_key }}", "lock_index", "hash")
    meta = _get("={{ $json.record_key }}", "lock_meta", "string")
    nodes = [
        _node("trigger", "Error Trigger", "n8n-nodes-base.errorTrigger", 1, 0, 0, parameters={}),
        _code("prepare", "Prepare Cleanup", "prepare_cleanup", 220, 0),
        has_execution := _if("if-execution", "Has Execution?", terminal, 440, 0),
        _redis("get-index", "GET Execution Index", index, 660, -100),
        _code("scopes", "Build Scope List", "build_scope_list", 880, -100),
        has_scopes := _if("if-scopes", "Has Scopes?", terminal, 1100, -100),
        _redis("get-meta", "GET Scope Meta", meta, 1320, -200, once=False),
        _code("filter", "Filter Owned Scopes", "filter_owned_scopes", 1540, -200),
        owned := _if("if-owned", "Owned?", "$json.owned === true", 1760, -200),
        _redis("release", "SET Released and Served", release, 1980, -300, once=False),
        _code("healed", "List Healed", "list_healed", 2200, -300),
        _redis("count-heals", "Count Heals", count, 2420, -300, once=False),
        log := _code("log", "Log Cleanup", "log_cleanup", 2640, 0),
    ]
    connections: nodekit.Connections = {}
    for source, target in itertools.pairwise(nodes):
        nodekit.connect(connections, source["name"], 0, target["name"])
    for branch in (has_execution, has_scopes, owned):  # nothing (more) to do: the log
        nodekit.connect(connections, branch["name"], 1, log["name"])
    return {
        "name": ERROR_HANDLER.display_name,
        "nodes": nodes,
        "connections": connections,
        "settings": {"executionOrder": "v1"},
    }
