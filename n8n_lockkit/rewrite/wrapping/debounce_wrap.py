"""Put a debounce in front of a workflow's body (`add-debounce`), read it back, take it off.

Shape, for the workflow's one entry T:

    T → Debounce Context → … (the chain of `primitives/debounce.py`, stacked above the body)
        … → Debounce Answer → [Debounce Response: a webhook's answer] → Debounce After → …
        … → Debounce Burst → Debounce Body Items → (the body, as before)
                                                └→ Debounce Next → Debounce Again? (below the
                                                   body: under n8n's v1 order it runs after it)

The settings it was made with, and what it changed in the workflow (a `lastNode` webhook
answers through Debounce Response instead; executionOrder v1), are noted on Debounce Context,
so that `unwrap` restores the file exactly. A lock and rate limits (`wrap.py`) may already be
around the body: they stay as they are, after Debounce Body Items (`compose.py` layers them);
`unwrap_debounce` takes off the debounce's own nodes only.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass
from typing import Any

from n8n_lockkit.primitives import debounce, nodekit
from n8n_lockkit.primitives.chain import Row
from n8n_lockkit.rewrite.canvas import placement
from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.graphs.graph import Workflow
from n8n_lockkit.rewrite.wrapping import refusals
from n8n_lockkit.rewrite.wrapping.builder import (
    STEP,
    Block,
    Builder,
    notes_bottom,
    stack_above_notes,
    trigger_entries,
)
from n8n_lockkit.rewrite.wrapping.configs import CONFIG_MARK, WrapError
from n8n_lockkit.rewrite.wrapping.nodes import owned, role_of
from n8n_lockkit.rewrite.wrapping.settings import set_execution_order

WEBHOOK = "n8n-nodes-base.webhook"
NOTE = "n8nlock · Debounce"
NEXT_NOTE = "n8nlock · Debounce: the next burst"
CONTEXT_ROLE = "debounce-context"
BODY_ROLE = "debounce-body-items"
# Where the role `debounce-next` and `debounce-again` go: below the body, so that under n8n's
# v1 order (top branch first) the body runs before this execution waits for the next burst.
BELOW_BODY = 160


@dataclass(frozen=True)
class DebounceConfig:
    key_expression: str
    quiet_seconds: int
    max_wait_seconds: int = 60
    max_items: int = 100


def _text(key: str, config: DebounceConfig) -> str:
    key_text = config.key_expression.removeprefix("=")
    return "\n".join(
        [
            f"## Debounce on `{key_text.replace('`', chr(39))}`",
            f"Events of one key less than {config.quiet_seconds} s apart form a burst; the body "
            f"runs once per burst, with all its events' items in arrival order: when the key was "
            f"quiet {config.quiet_seconds} s, at the latest {config.max_wait_seconds} s after "
            f"the first event, or at once at {config.max_items} events. Every caller is "
            'answered at once with `{"buffered": true, ...}`.',
            f"Change: `n8nlock add-debounce --workflow-key {key} ...`; remove: "
            f"`n8nlock unwrap --workflow-key {key}`.",
        ]
    )


def _refuse_shape(workflow: Workflow) -> None:
    entries = trigger_entries(workflow)
    if len(entries) != 1:
        labels = ", ".join(f"{e.node!r} output {e.output + 1}" for e in entries)
        raise WrapError(
            f"a debounce needs exactly one trigger output leading to the body; this workflow has "
            f"{len(entries)} ({labels})",
            hint="split the workflow, one trigger each (this version debounces one entry)",
        )


def wrap_debounce(body: Workflow, key: str, config: DebounceConfig) -> Workflow:
    """The body behind a debounce (a new dict)."""
    workflow = copy.deepcopy(body)
    graph.normalise(workflow)
    refusals.check_shape(workflow)
    _refuse_shape(workflow)
    entry = trigger_entries(workflow)[0]
    before = set_execution_order(workflow)
    trigger = next(n for n in graph.nodes(workflow) if n["name"] == entry.node)
    parameters = graph.as_dict(trigger.get("parameters"))
    mode = parameters.get("responseMode")
    responds = trigger.get("type") == WEBHOOK and mode in ("lastNode", "responseNode")
    if trigger.get("type") == WEBHOOK and mode == "lastNode":
        parameters["responseMode"] = "responseNode"
    graph.shift_body(workflow, STEP)
    main = workflow["connections"][entry.node]["main"]
    body_links = main[entry.output]
    main[entry.output] = []
    b = Builder(key, workflow, True, 0)
    stack_above_notes(b)
    x, y = b.position(entry.node)
    inputs = debounce.DebounceInputs(
        config.key_expression, config.quiet_seconds, config.max_wait_seconds, config.max_items
    )
    group = debounce.debounce(key, key, inputs, (x + STEP, 0))
    answered = "Debounce Answer"
    if responds:
        respond = nodekit.Kind(
            "n8n-nodes-base.respondToWebhook",
            1.1,
            {"respondWith": "firstIncomingItem", "options": {}},
        )
        group.add(Row("debounce-response", "Debounce Response", respond, (9, 0)))
        group.link([("Debounce Answer", 0, "Debounce Response")])
        answered = "Debounce Response"
    group.link([(answered, 0, debounce.ANSWERED_ON)])
    after = [n for n in group.nodes if role_of(n) in ("debounce-next", "debounce-again")]
    group.nodes = [n for n in group.nodes if n not in after]
    b.stack(Block("frame-debounce", NOTE, _text(key, config), b.add_group(group)))
    for node in after:
        b.add(node, placed=True)
    context = b.node(group.entry)
    note = {**asdict(config), "response_mode": mode if responds else None, "before": before}
    context["notes"] += CONFIG_MARK + json.dumps(note, sort_keys=True)
    items = b.add(
        owned(
            key,
            BODY_ROLE,
            "Debounce Body Items",
            "n8n-nodes-base.splitOut",
            1,
            [x + STEP, y],
            {"fieldToSplitOut": "items", "include": "noOtherFields", "options": {}},
        )
    )
    b.connect(entry.node, entry.output, group.entry)
    b.connect("Debounce Burst", 0, items)
    nodekit.outputs(workflow["connections"], items, 0)[0] = [*body_links]
    b.connect(items, 0, "Debounce Next")
    bottom = placement.user_extent(workflow).bottom + BELOW_BODY
    if (notes := notes_bottom(workflow)) is not None:  # below a lock's notes on the body's row
        bottom = max(bottom, notes + placement.NOTE_GAP + placement.NOTE_HEADER)
    for k, node in enumerate(after):
        node["position"] = [x + (k + 1) * STEP, int(bottom)]
    b.framed.append(Block("frame-debounce-next", NEXT_NOTE, _next_text(), after))
    b.frames()
    return workflow


def _next_text() -> str:
    return (
        "After the body: when the event after the cut came before the cut's runner met it, "
        "this execution waits for the next burst (docs/debounce.md)."
    )


def _note(workflow: Workflow) -> dict[str, Any] | None:
    for node in graph.nodes(workflow):
        if role_of(node) == CONTEXT_ROLE:
            try:
                value: dict[str, Any] = json.loads(str(node["notes"]).split(CONFIG_MARK, 1)[1])
            except (IndexError, ValueError) as err:
                raise WrapError(
                    "n8nlock's debounce nodes in this workflow were changed by hand and cannot "
                    f"be read ({err!r})",
                    hint="change them only through add-debounce; restore the file from version "
                    "control, or delete the nodes whose notes start with 'n8nlock:'",
                ) from err
            return value
    return None


def read_debounce(workflow: Workflow) -> DebounceConfig | None:
    """The debounce a wrapped workflow carries, if any."""
    note = _note(workflow)
    if note is None:
        return None
    return DebounceConfig(
        str(note["key_expression"]),
        int(note["quiet_seconds"]),
        int(note["max_wait_seconds"]),
        int(note["max_items"]),
    )


def is_debounce_role(role: str | None) -> bool:
    """Whether a node with this role is the debounce's (not a lock's or a rate limit's)."""
    return role is not None and role.startswith(("debounce-", "frame-debounce"))


def unwrap_debounce(workflow: Workflow) -> Workflow:
    """The workflow as it was before add-debounce (a new dict): a lock or rate limit
    around the body stays."""
    from n8n_lockkit.rewrite.wrapping.unwrap import restore_settings

    note = _note(workflow)
    result = copy.deepcopy(workflow)
    if note is None:
        return result
    roles = {str(n["name"]): r for n in graph.nodes(result) if is_debounce_role(r := role_of(n))}
    by_role = {r: name for name, r in roles.items()}
    graph.normalise(result)
    connections = result["connections"]
    body = [x for x in graph.outputs(result, by_role[BODY_ROLE])[0] if str(x["node"]) not in roles]
    for source in list(connections):
        if source in roles:
            continue
        for output, links in enumerate(graph.outputs(result, source)):
            if any(str(x["node"]) == by_role[CONTEXT_ROLE] for x in links):
                connections[source]["main"][output] = body
                trigger = next(n for n in graph.nodes(result) if n["name"] == source)
                if note.get("response_mode") == "lastNode":
                    trigger["parameters"]["responseMode"] = "lastNode"
    result["nodes"] = [n for n in result["nodes"] if n.get("name") not in roles]
    for name in list(connections):
        if name in roles:
            del connections[name]
    graph.normalise(result)
    graph.shift_body(result, -STEP)
    restore_settings(result, list(note.get("before") or []), handler=False)
    return result
