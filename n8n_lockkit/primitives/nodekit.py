"""The node kit: how n8nlock builds the built-in n8n nodes its engines are made of.

Every node has a deterministic id and the note `n8nlock:<role>` that finds it again; a `Group`
is a block of nodes with its connections, entry and exits; scripts (`templates/js/...`) become
n8n expressions. The engines (`engine.py`, `rate.py`) and the sub-workflow primitives use it.
"""

from __future__ import annotations

import itertools
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from n8n_lockkit.errors import TemplateError
from n8n_lockkit.primitives import templating
from n8n_lockkit.primitives.formats import managed_notes, role_of

Node = dict[str, Any]
Connections = dict[str, Any]
_NODE_IDS = uuid.UUID("a4b1d3c2-8e6f-4a0b-9c7d-2e5f1a3b4c6d")


# n8n 2.x stops an expression that runs longer than N8N_EXPRESSION_ENGINE_TIMEOUT (5 s) of
# wall time, so a stall of the process that lands inside one fails its node. The lock's nodes
# run again instead (formats.RETRYING_FORMAT): reads and decisions are pure, SETs write the same
# values, and a ticket drawn twice leaves one that the caller behind skips.
# A node built for a block: `Group.place` puts it at its cell.
CELL: list[int] = [0, 0]
RETRY = {"retryOnFail": True, "maxTries": 3, "waitBetweenTries": 0}
REDIS_CREDENTIALS = {
    "redis": {
        "id": "{{@:env:credentials.redis.id}}",
        "name": "{{@:env:credentials.redis.name}}",
    }
}


@dataclass
class Group:
    """Nodes and their connections; `entry` takes the input, `exits` name the outputs."""

    nodes: list[Node] = field(default_factory=list)
    connections: Connections = field(default_factory=dict)
    entry: str = ""
    exits: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    # Where each node sits in the block's grid, (column, row) by name: set by `place`.
    cells: dict[str, tuple[int, int]] = field(default_factory=dict)

    def add(self, node: Node) -> str:
        self.nodes.append(node)
        return str(node["name"])

    def place(
        self, origin: tuple[int, int], cells: dict[str, tuple[int, int]], step: int, row: int
    ) -> None:
        """Put every node at its role's cell: `origin` + (column × `step`, row × `row`)."""
        x, y = origin
        for node in self.nodes:
            role = role_of(node)
            if role not in cells:
                raise TemplateError(
                    f"node {node['name']!r} (role {role}) has no cell in the layout"
                )
            column, line = cells[role]
            node["position"] = [x + column * step, y + line * row]
            self.cells[str(node["name"])] = (column, line)

    def connect(self, source: str, output: int, target: str, index: int = 0) -> None:
        main = self.connections.setdefault(source, {}).setdefault("main", [])
        while len(main) <= output:
            main.append([])
        main[output].append({"node": target, "type": "main", "index": index})

    def chain(self, *names: str) -> None:
        """Each node's first output into the next node."""
        for source, target in itertools.pairwise(names):
            self.connect(source, 0, target)


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
    return f"$({js_literal(name)})"


@dataclass(frozen=True)
class Names:
    """The lock's node names; `label` tells several entries' chains apart, and `kind` what the
    chain is: a duplicate guard's engine is named "Dedupe …" (roles `dedupe-…`), so that it can
    sit beside a lock in one workflow.

    Example:
        >>> Names("Webhook", kind="Dedupe")("Lock Decide")
        'Dedupe Decide (Webhook)'
    """

    label: str = ""
    kind: str = "Lock"

    def __call__(self, base: str) -> str:
        if self.kind != "Lock" and base.startswith("Lock "):
            base = f"{self.kind} {base.removeprefix('Lock ')}"
        return f"{base} ({self.label})" if self.label else base

    def role(self, role: str) -> str:
        """The role of a node of this kind's chain: `lock-hold` is `dedupe-hold` in a guard."""
        return f"{self.kind.lower()}-{role.removeprefix('lock-')}"

    def retag(self, group: Group) -> None:
        """Give the group's `lock-…` nodes this kind's roles (after `Group.place`, which finds
        cells by the engine's roles)."""
        if self.kind == "Lock":
            return
        for node in group.nodes:
            role = role_of(node)
            if role is not None and role.startswith("lock-"):
                node["notes"] = managed_notes(self.role(role))


UNLABELLED = Names()  # one entry: the plain names


def set_raw(key: str, role: str, name: str, position: list[int], script: str) -> Node:
    return node(
        key,
        role,
        name,
        "n8n-nodes-base.set",
        3.4,
        position,
        {"mode": "raw", "jsonOutput": script, "includeOtherFields": False, "options": {}},
        executeOnce=True,
        **RETRY,
    )


def split_out(key: str, role: str, name: str, position: list[int], field_name: str) -> Node:
    return node(
        key,
        role,
        name,
        "n8n-nodes-base.splitOut",
        1,
        position,
        {"fieldToSplitOut": field_name, "include": "noOtherFields", "options": {}},
        **RETRY,
    )


def redis(
    key: str, role: str, name: str, position: list[int], parameters: dict[str, Any], once: bool
) -> Node:
    return node(
        key,
        role,
        name,
        "n8n-nodes-base.redis",
        1,
        position,
        parameters,
        executeOnce=once,
        **RETRY,
        credentials=REDIS_CREDENTIALS,
    )


def if_node(key: str, role: str, name: str, position: list[int], test: str) -> Node:
    return node(
        key, role, name, "n8n-nodes-base.if", 2.2, position, if_parameters(key, test),
        executeOnce=True, **RETRY,
    )  # fmt: skip


def switch_node(
    key: str,
    role: str,
    name: str,
    position: list[int],
    routes: Sequence[Sequence[str]],
    otherwise: int,
) -> Node:
    """A Switch (v3.2, expression mode) that sends its item to output i when `$json.state` is
    one of `routes[i]`, and to `otherwise` for any other state: one expression where a row of
    If nodes evaluates one each. n8n draws it 32 px taller per output beyond two."""
    index = ", ".join(f"{state}: {i}" for i, states in enumerate(routes) for state in states)
    return node(
        key, role, name, "n8n-nodes-base.switch", 3.2, position,
        {"mode": "expression", "numberOutputs": len(routes),
         "output": f"={{{{ ({{ {index} }})[$json.state] ?? {otherwise} }}}}"},
        executeOnce=True, **RETRY,
    )  # fmt: skip


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
SET_EXPIRING_EACH = {
    **SET_EACH,
    "keyType": "automatic",
    "expire": True,
}


# ---------------------------------------------------------------------------------------------
# For the sub-workflow primitives (render.py): the same scripts and node builders.


def _context(tokens: Mapping[str, str]) -> dict[str, str]:
    return {token.strip("_").lower(): value for token, value in tokens.items()}


def script_expression(name: str, tokens: Mapping[str, str]) -> str:
    """`templates/js/<name>.js` as one n8n expression that returns its object."""
    return templating.expression(name, **_context(tokens))


def script_call(name: str, tokens: Mapping[str, str]) -> str:
    """The JavaScript of `script_expression` without the `={{ }}` around it."""
    return templating.call(name, **_context(tokens))
