"""The node kit: the built-in n8n nodes n8nlock's engines are made of, as data.

A `Kind` is what a node is apart from its name and place: n8n's type and version, its
parameters and the node settings n8nlock gives it. The constructors below (`set_raw`,
`split_out`, `redis`, `if_`, `switch`, `stop`, `wait`, …) make the kinds every chain uses; a
chain (`chain.py`) names and places them. `node` makes a node of any kind by hand (the wrap
side adds a few), and `connect` is the one way anything in n8nlock links two nodes.

Every node has a deterministic id and the note `n8nlock:<role>` that finds it again.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from n8n_lockkit.primitives.formats import managed_notes

Node = dict[str, Any]
Connections = dict[str, Any]
_NODE_IDS = uuid.UUID("a4b1d3c2-8e6f-4a0b-9c7d-2e5f1a3b4c6d")

# n8n 2.x stops an expression that runs longer than N8N_EXPRESSION_ENGINE_TIMEOUT (5 s) of
# wall time, so a stall of the process that lands inside one fails its node. The lock's nodes
# run again instead (formats.RETRYING_FORMAT): reads and decisions are pure, SETs write the same
# values, and a ticket drawn twice leaves one that the caller behind skips.
RETRY = {"retryOnFail": True, "maxTries": 3, "waitBetweenTries": 0}
REDIS_CREDENTIALS = {
    "redis": {
        "id": "{{@:env:credentials.redis.id}}",
        "name": "{{@:env:credentials.redis.name}}",
    }
}


@dataclass(frozen=True)
class Kind:
    """A node apart from its name, role and place.

    `settings` follow the node's notes in the order given (executeOnce, the retries,
    credentials); an If node's parameters come from its `condition` and the chain's key (the
    condition's id), a Wait node's webhookId from `webhook_ids` and the node's identity."""

    type: str
    version: float
    parameters: Mapping[str, Any] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    condition: str | None = None
    webhook_ids: uuid.UUID | None = None

    def node(self, key: str, role: str, name: str, position: list[int]) -> Node:
        """The node of this kind that `key`'s chain calls `name` (role `role`)."""
        parameters = (
            if_parameters(key, self.condition)
            if self.condition is not None
            else copy.deepcopy(dict(self.parameters))
        )
        extra: dict[str, Any] = {}
        if self.webhook_ids is not None:
            extra["webhookId"] = str(uuid.uuid5(self.webhook_ids, f"{key}:{role}:{name}"))
        extra.update(copy.deepcopy(dict(self.settings)))
        return node(key, role, name, self.type, self.version, position, parameters, **extra)


def node(
    key: str,
    role: str,
    name: str,
    kind: str,
    version: float,
    position: list[int],
    parameters: dict[str, Any],
    **extra: Any,
) -> Node:
    """A node n8nlock owns: a deterministic id, and the note `n8nlock:<role>` that finds it."""
    return {
        "id": str(uuid.uuid5(_NODE_IDS, f"{key}:{role}:{name}")),
        "name": name,
        "type": kind,
        "typeVersion": version,
        "position": position,
        "parameters": parameters,
        "notes": managed_notes(role),
        **extra,
    }


def connect(
    connections: Connections, source: str, output: int, target: str, index: int = 0
) -> None:
    """Link `source`'s main output `output` to `target`'s input `index` (in place)."""
    link = {"node": target, "type": "main", "index": index}
    outputs(connections, source, output)[output].append(link)


def outputs(connections: Connections, source: str, output: int) -> list[Any]:
    """`source`'s main outputs, padded with empty ones up to `output` (in place)."""
    main: list[Any] = connections.setdefault(source, {}).setdefault("main", [])
    while len(main) <= output:
        main.append([])
    return main


# ---------------------------------------------------------------------------------------------
# The kinds the engines use.


def set_raw(expression: str) -> Kind:
    """A Set node that outputs the object `expression` gives (a decision), once."""
    return Kind(
        "n8n-nodes-base.set",
        3.4,
        {"mode": "raw", "jsonOutput": expression, "includeOtherFields": False, "options": {}},
        {"executeOnce": True, **RETRY},
    )


def split_out(field_name: str) -> Kind:
    """One item per entry of the decision's list `field_name`."""
    parameters = {"fieldToSplitOut": field_name, "include": "noOtherFields", "options": {}}
    return Kind("n8n-nodes-base.splitOut", 1, parameters, RETRY)


def redis(parameters: Mapping[str, Any], once: bool) -> Kind:
    """A Redis node on the env's credential: once, or once per item."""
    settings = {"executeOnce": once, **RETRY, "credentials": REDIS_CREDENTIALS}
    return Kind("n8n-nodes-base.redis", 1, parameters, settings)


def if_(test: str) -> Kind:
    """An If node (v2.2) whose true branch is taken when the JavaScript `test` is true."""
    return Kind("n8n-nodes-base.if", 2.2, settings={"executeOnce": True, **RETRY}, condition=test)


def switch(routes: Sequence[Sequence[str]], otherwise: int) -> Kind:
    """A Switch (v3.2, expression mode) that sends its item to output i when `$json.state` is
    one of `routes[i]`, and to `otherwise` for any other state: one expression where a row of
    If nodes evaluates one each. n8n draws it 32 px taller per output beyond two."""
    index = ", ".join(f"{state}: {i}" for i, states in enumerate(routes) for state in states)
    parameters = {
        "mode": "expression",
        "numberOutputs": len(routes),
        "output": f"={{{{ ({{ {index} }})[$json.state] ?? {otherwise} }}}}",
    }
    return Kind("n8n-nodes-base.switch", 3.2, parameters, {"executeOnce": True, **RETRY})


def stop(message: str) -> Kind:
    """Stop and Error with the message the JavaScript expression `message` gives. It runs once:
    a deliberate failure is not retried."""
    return stop_text(f"={{{{ {message} }}}}")


def stop_text(message: str) -> Kind:
    """Stop and Error with `message` as n8n reads a parameter (a literal, or text with `{{ }}`
    expressions after a leading `=`)."""
    parameters = {"errorType": "errorMessage", "errorMessage": message}
    return Kind("n8n-nodes-base.stopAndError", 1, parameters)


def wait(seconds: str, webhook_ids: uuid.UUID = _NODE_IDS) -> Kind:
    """A Wait of `seconds` (an expression): under 65 s n8n sleeps in memory."""
    parameters = {"resume": "timeInterval", "amount": seconds, "unit": "seconds"}
    return Kind("n8n-nodes-base.wait", 1.1, parameters, RETRY, webhook_ids=webhook_ids)


def park(limit_seconds: str, webhook_ids: uuid.UUID = _NODE_IDS) -> Kind:
    """A Wait "On Webhook Call" (POST), with "Limit Wait Time" (`limit_seconds`, an
    expression) as the backstop: n8n stores the execution as waiting, which frees its
    concurrency slot (or its worker's job), until a request to its `$execution.resumeUrl` or
    the limit resumes it. No retries: a Wait that failed would park twice."""
    parameters = {
        "resume": "webhook",
        "httpMethod": "POST",
        "limitWaitTime": True,
        "limitType": "afterTimeInterval",
        "resumeAmount": limit_seconds,
        "resumeUnit": "seconds",
        "options": {},
    }
    return Kind("n8n-nodes-base.wait", 1.1, parameters, webhook_ids=webhook_ids)


def resume_request(url: str, body: str, timeout_ms: int) -> Kind:
    """An HTTP Request that POSTs `body` to a parked execution's resume URL (expressions) and
    gives n8n's answer as its item ({statusCode, body}), whatever it is: a refusal (409) or a
    timeout never fails the caller's execution. Never retried: a resume sent twice could be
    taken twice."""
    parameters = {
        "method": "POST",
        "url": url,
        "sendBody": True,
        "specifyBody": "json",
        "jsonBody": body,
        "options": {
            "timeout": timeout_ms,
            "response": {"response": {"neverError": True, "fullResponse": True}},
        },
    }
    settings = {"onError": "continueRegularOutput", "alwaysOutputData": True}
    return Kind("n8n-nodes-base.httpRequest", 4.2, parameters, settings)


def no_op() -> Kind:
    return Kind("n8n-nodes-base.noOp", 1)


def trigger(inputs: Sequence[tuple[str, str]]) -> Kind:
    """An Execute Workflow Trigger that names its inputs: how a primitive is called."""
    values = [{"name": name, "type": kind} for name, kind in inputs]
    parameters = {"inputSource": "workflowInputs", "workflowInputs": {"values": values}}
    return Kind("n8n-nodes-base.executeWorkflowTrigger", 1.1, parameters)


# ---------------------------------------------------------------------------------------------
# Parameters and expressions.


def if_parameters(key: str, expression: str, condition_id: str | None = None) -> dict[str, Any]:
    """An If node's parameters: true when `expression` is; `condition_id` defaults to one
    derived from the key and the expression."""
    condition_id = condition_id or str(uuid.uuid5(_NODE_IDS, f"{key}:{expression}"))
    return {
        "conditions": {
            "options": {
                "caseSensitive": True,
                "leftValue": "",
                "typeValidation": "strict",
                "version": 2,
            },
            "conditions": [
                {
                    "id": condition_id,
                    "leftValue": f"={{{{ {expression} }}}}",
                    "rightValue": True,
                    "operator": {"type": "boolean", "operation": "true", "singleValue": True},
                }
            ],
            "combinator": "and",
        },
        "options": {},
    }


def js_literal(value: Any) -> str:
    """A JavaScript literal of `value`, readable as it stands in the n8n editor."""
    return json.dumps(value, ensure_ascii=False)


def value_js(value: Any) -> str:
    """The JavaScript expression for an n8n parameter value: `={{ x }}` is `(x)`, text with
    expressions inside is a concatenation, anything else is a literal."""
    if not (isinstance(value, str) and value.startswith("=")):
        return js_literal(value)
    parts: list[str] = []
    for index, piece in enumerate(re.split(r"\{\{(.*?)\}\}", value[1:], flags=re.S)):
        if index % 2:
            parts.append(f"({piece.strip()})")
        elif piece:
            parts.append(js_literal(piece))
    if len(parts) == 1 and value[1:].strip().startswith("{{") and value.rstrip().endswith("}}"):
        return parts[0]  # one expression alone keeps its type (a number stays a number)
    return " + ".join(f"String({p})" if p.startswith("(") else p for p in parts) or '""'


def ref(name: str) -> str:
    """`$("name")`: the JavaScript that reads node `name`'s output in an expression."""
    return f"$({js_literal(name)})"


# n8n 2.x evaluates every expression of every item in its sandbox, about 0.75 ms each
# (bench/lean_budget.py): the lock's Redis nodes pass as few per item as they can. INCR sets a
# TTL only when `expire` and ttl > 0, so `expire` stays on and an item without one gets ttl 0.
INCR_EACH = {
    "operation": "incr",
    "key": "={{ $json.key }}",
    "expire": True,
    "ttl": "={{ $json.expire ? $json.ttl : 0 }}",
}
GET_EACH = {
    "operation": "get",
    "propertyName": "value",
    "key": "={{ $json.key }}",
    "keyType": "string",
    "options": {"dotNotation": False},
}
# An item with `expires_ms` lives until then, counted when the SET runs (a lease decided
# before a stall keeps its end); any other lives `ttl` seconds (0: no TTL).
SET_EACH = {
    "operation": "set",
    "key": "={{ $json.key }}",
    "value": "={{ $json.value }}",
    "keyType": "={{ $json.type }}",
    "valueIsJSON": True,
    "expire": "={{ $json.ttl > 0 }}",
    "ttl": "={{ Math.max(1, $json.expires_ms"
    " ? Math.ceil(($json.expires_ms - Date.now()) / 1000) : $json.ttl) }}",
}
# Lock Hold: everything it writes expires (the lease, its copy, the index, the fast-path mark),
# and each key's type follows from its value (an object is a hash), so `expire` and `keyType`
# need no expression per item.
SET_EXPIRING_EACH = {**SET_EACH, "keyType": "automatic", "expire": True}
# A string per item, `$json.value` under `$json.key`, for `$json.ttl` seconds (0: no TTL).
SET_STRING_EACH = {
    "operation": "set",
    "key": "={{ $json.key }}",
    "value": "={{ $json.value }}",
    "keyType": "string",
    "expire": "={{ $json.ttl > 0 }}",
    "ttl": "={{ Math.max(1, $json.ttl) }}",
}
