"""Which n8nlock format made a workflow file, and whether a primitive is as n8nlock wrote it.

Every node n8nlock puts into a workflow says `n8nlock:<role> — managed by n8nlock (format N)`
in its notes; a primitive's trigger node also carries `primitive: <key>, format N, digest D`,
where D is the digest of the whole primitive without that line. A node with the role mark but
no format was written before format stamps (format 1, the lock before engine v2), and so was a
primitive without a stamp; such a primitive is known by its digest in `shipped_renders.json`.

Example:
    >>> from n8n_lockkit.primitives.formats import workflow_format
    >>> workflow_format({"nodes": [{"name": "Set", "notes": ""}]}) is None
    True
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from n8n_lockkit.primitives import keys

FORMAT = keys.FORMAT
LEGACY_FORMAT = 1  # n8nlock's nodes before format stamps
# From this format on, n8nlock's own lock nodes retry a failed run (an expression n8n timed
# out across a stall): a retried write writes the same values, and a retried ticket INCR leaves
# a ticket that the caller behind skips like a dead waiter's.
RETRYING_FORMAT = 3
# The oldest format whose callers the current engine sees as they are, waiting ones included
# (format 1 is the lock before engine v2, format 2 the first v2). A push that replaces on n8n
# a workflow of an older format first checks that no caller of that format still holds or
# waits (ops/drain.py).
NATIVE_CALLERS_FORMAT = 3


# The first format whose keys carry the env's namespace (keyPrefix); older ones write none.
NAMESPACED_FORMAT = 4
# `<namespace>n8n-lock-${…}`: how every lock script starts a key (templates/js, keys.py).
_LOCK_KEY = re.compile(r"([A-Za-z0-9:_-]*)n8n-lock-\$\{")


def lock_namespace(workflow: Workflow) -> str | None:
    """The key namespace a workflow's lock writes in, as n8n holds it (its placeholders
    resolved): None when it has no lock; "" for a format before namespaces."""
    found = workflow_format(workflow)
    if found is None:
        return None
    if found < NAMESPACED_FORMAT:
        return ""
    match = _LOCK_KEY.search(json.dumps(workflow, ensure_ascii=False))
    return match.group(1) if match else None


def needs_drain(replaced_format: int | None) -> bool:
    """Whether replacing, on n8n, a workflow of this format needs the drain check first."""
    return replaced_format is not None and replaced_format < NATIVE_CALLERS_FORMAT


MARK = "n8nlock:"
_NODE_FORMAT = re.compile(r"managed by n8nlock \(format (\d+)\)")
_PRIMITIVE_STAMP = re.compile(r"\n?primitive: ([a-z_]+), format (\d+), digest ([0-9a-f]+)$")
_TRIGGERS = ("n8n-nodes-base.executeWorkflowTrigger", "n8n-nodes-base.errorTrigger")
PRIMITIVE_NAME_PREFIX = "n8nlock: "
_ROLE = re.compile(rf"{MARK}([a-z-]+)")
DIGEST_LENGTH = 16

Workflow = dict[str, Any]


def managed_notes(role: str) -> str:
    """The notes of a node n8nlock adds: how later runs find it, and which format made it."""
    return f"{MARK}{role} — managed by n8nlock (format {FORMAT}); re-run its command to change it"


def role_of(node: Mapping[str, Any]) -> str | None:
    """The role n8nlock gave a node it added (`lock-hold`, `frame-lock`, …), else None."""
    match = _ROLE.match(str(node.get("notes", "")))
    return match.group(1) if match else None


def _nodes(workflow: Workflow) -> list[dict[str, Any]]:
    nodes = workflow.get("nodes")
    return [n for n in nodes if isinstance(n, dict)] if isinstance(nodes, list) else []


def _trigger(workflow: Workflow) -> dict[str, Any] | None:
    nodes = _nodes(workflow)
    return next((n for n in nodes if n.get("type") in _TRIGGERS), nodes[0] if nodes else None)


def digest(workflow: Workflow) -> str:
    """A primitive's digest: its canonical JSON without the stamp line (so the stamp can
    carry it), and so independent of indentation and key order."""
    bare = copy.deepcopy(workflow)
    trigger = _trigger(bare)
    if trigger is not None and isinstance(trigger.get("notes"), str):
        trigger["notes"] = _PRIMITIVE_STAMP.sub("", trigger["notes"])
        if not trigger["notes"]:
            del trigger["notes"]
    text = json.dumps(bare, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_LENGTH]


def stamp_primitive(workflow: Workflow, key: str) -> Workflow:
    """The primitive with its format and digest on the trigger node's notes (a new dict)."""
    stamped = copy.deepcopy(workflow)
    trigger = _trigger(stamped)
    if trigger is None:
        return stamped
    line = f"primitive: {key}, format {FORMAT}, digest {digest(workflow)}"
    notes = _PRIMITIVE_STAMP.sub("", str(trigger.get("notes") or ""))
    trigger["notes"] = f"{notes}\n{line}" if notes else line
    return stamped


def primitive_stamp(workflow: Workflow) -> tuple[str, int, str] | None:
    """(key, format, digest) as the primitive's stamp says, if it has one."""
    trigger = _trigger(workflow)
    match = _PRIMITIVE_STAMP.search(str(trigger.get("notes") or "")) if trigger else None
    return (match.group(1), int(match.group(2)), match.group(3)) if match else None


@cache
def _shipped() -> dict[str, dict[str, int]]:
    data: dict[str, dict[str, int]] = json.loads(
        Path(__file__).with_name("shipped_renders.json").read_text(encoding="utf-8")
    )
    return data


def shipped_format(key: str, workflow: Workflow) -> int | None:
    """The format of an unstamped primitive that is exactly as an n8nlock release wrote it."""
    return _shipped().get(key, {}).get(digest(workflow))


def primitive_format(key: str, workflow: Workflow) -> int | None:
    """A primitive's format: its stamp, else the shipped render it equals, else its nodes."""
    stamp = primitive_stamp(workflow)
    if stamp is not None:
        return stamp[1]
    return shipped_format(key, workflow) or workflow_format(workflow)


def is_pristine_primitive(key: str, workflow: Workflow) -> bool:
    """True when nobody edited the primitive since n8nlock wrote it."""
    stamp = primitive_stamp(workflow)
    if stamp is not None:
        return stamp[0] == key and stamp[2] == digest(workflow)
    return shipped_format(key, workflow) is not None


def _unstamped_format(node: dict[str, Any], notes: str) -> int:
    """Engine v2 came a few commits before the stamps: its inline nodes (Lock Context) and
    its calls of the primitives (which pass max_concurrent) tell it from format 1."""
    if notes.startswith(f"{MARK}lock-context"):
        return 2
    parameters = node.get("parameters")
    inputs = parameters.get("workflowInputs") if isinstance(parameters, dict) else None
    values = inputs.get("value") if isinstance(inputs, dict) else None
    return 2 if isinstance(values, dict) and "max_concurrent" in values else LEGACY_FORMAT


def node_format(node: dict[str, Any]) -> int | None:
    """The format stamped on one node n8nlock added; None for any other node."""
    match = _NODE_FORMAT.search(str(node.get("notes") or ""))
    return int(match.group(1)) if match else None


def workflow_format(workflow: Workflow) -> int | None:
    """The format of n8nlock's nodes in a workflow file; None when n8nlock made none of them.

    A workflow whose stamped nodes disagree answers the oldest format among them."""
    stamp = primitive_stamp(workflow)
    if stamp is not None:
        return stamp[1]
    stamped: list[int] = []
    unstamped: list[int] = []
    for node in _nodes(workflow):
        notes = str(node.get("notes") or "")
        if notes.startswith(MARK):
            match = _NODE_FORMAT.search(notes)
            if match:
                stamped.append(int(match.group(1)))
            else:
                unstamped.append(_unstamped_format(node, notes))
    if stamped or unstamped:
        # Stamped nodes that disagree: the oldest. Unstamped ones: the newest any of them shows.
        return min(stamped) if stamped else max(unstamped)
    name = str(workflow.get("name") or "")
    return LEGACY_FORMAT if name.startswith(PRIMITIVE_NAME_PREFIX) else None
