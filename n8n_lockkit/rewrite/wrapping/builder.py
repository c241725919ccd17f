"""How wrap adds nodes: one builder per wrap that places them, stacks the blocks above the body,
frames each block in a note, and makes the joins every release needs."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from n8n_lockkit.primitives import engine, nodekit
from n8n_lockkit.primitives.chain import Chain
from n8n_lockkit.rewrite.canvas import placement
from n8n_lockkit.rewrite.canvas.geometry import NODE_SIZE, STICKY_NOTE, note_boxes
from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.graphs.graph import Entry, Node, Workflow
from n8n_lockkit.rewrite.wrapping import notes
from n8n_lockkit.rewrite.wrapping.configs import WrapError
from n8n_lockkit.rewrite.wrapping.nodes import if_parameters, js_literal, owned, role_of

# A Merge node that passes its input 1 through untouched (binary data too) once every input
# has arrived: how the inline form waits for the lock, and for the release, without a Code node.
INPUT_1_ONCE_ALL_ARRIVED = {
    "mode": "chooseBranch",
    "chooseBranchMode": "waitForAll",
    "output": "specifiedInput",
    "useDataOfInput": 1,
}
STEP = 220
MAX_MERGE_INPUTS = 10


@dataclass
class Block:
    """Nodes n8nlock added that one note frames: what they are, and how to change them."""

    role: str
    name: str
    text: str
    nodes: list[Node]


@dataclass
class Builder:
    key: str
    workflow: Workflow
    single_entry: bool
    join_y: int = 0
    framed: list[Block] = dataclasses.field(default_factory=list)
    bottom: float | None = None  # where the next block stacked above the body ends

    def name(self, base: str, label: str) -> str:
        return base if self.single_entry else f"{base} ({label})"

    def position(self, name: str) -> list[int]:
        node = self.node(name)
        return [int(node["position"][0]), int(node["position"][1])]

    def node(self, name: str) -> Node:
        return next(n for n in graph.nodes(self.workflow) if n["name"] == name)

    def add(self, node: Node, *, placed: bool = False) -> str:
        if any(n["name"] == node["name"] for n in self.workflow["nodes"]):
            raise WrapError(
                f"the workflow already has a node named {node['name']!r}",
                hint="rename that node; n8nlock reserves the name",
            )
        if not placed:
            node["position"] = placement.free_spot(self.workflow, node["position"])
        self.workflow["nodes"].append(node)
        return str(node["name"])

    def add_group(self, group: Chain) -> list[Node]:
        for node in group.nodes:
            self.add(node, placed=True)
        self.workflow["connections"].update(group.connections)
        return group.nodes

    def stack(self, block: Block) -> None:
        """Put a block above the body (and the blocks stacked before it), in its note."""
        if self.bottom is None:
            body = placement.user_extent(self.workflow)
            self.bottom = body.y - placement.NOTE_HEADER - placement.NOTE_GAP
        placement.stack_above(block.nodes, self.bottom)
        self.bottom = placement.note_top(block.nodes) - placement.NOTE_GAP
        self.framed.append(block)

    def frames(self) -> None:
        """Frame every block in its note."""
        for block in self.framed:
            box = placement.extent(block.nodes)
            self.add(placement.note(self.key, block.role, block.name, block.text, box), placed=True)

    def connect(self, source: str, output: int, target: str, index: int = 0) -> None:
        nodekit.connect(self.workflow["connections"], source, output, target, index)


def _owned_notes(workflow: Workflow) -> list[Node]:
    return [
        n
        for n in graph.nodes(workflow)
        if n.get("type") == STICKY_NOTE and role_of(n) and "position" in n
    ]


def notes_bottom(workflow: Workflow) -> float | None:
    """Where the lowest sticky note n8nlock put in the workflow ends (None: it has none)."""
    owned = {str(n["name"]) for n in _owned_notes(workflow)}
    boxes = [box for name, box in note_boxes(workflow).items() if name in owned]
    return max((box.bottom for box in boxes), default=None)


def stack_above_notes(b: Builder) -> None:
    """Stack the next block above the notes n8nlock already put in the workflow (a debounce
    or guard composed around a lock's blocks), not over them. Nothing changes without such
    notes."""
    tops = [float(n["position"][1]) for n in _owned_notes(b.workflow)]
    if tops:
        body = placement.user_extent(b.workflow)
        b.bottom = min([*tops, body.y - placement.NOTE_HEADER]) - placement.NOTE_GAP


def joins(b: Builder) -> list[str]:
    return [str(n["name"]) for n in graph.nodes(b.workflow) if role_of(n) == "lock-join"]


def frame_release(b: Builder, names: list[str], text: str | None = None) -> None:
    nodes = [b.node(name) for name in names]
    text = notes.release(b.key) if text is None else text
    b.framed.append(Block("frame-release", notes.RELEASE_NOTE, text, nodes))


def release_spot(b: Builder) -> tuple[int, int]:
    """Right of the body's nodes, on the first entry's row: where Lock Join goes (the blocks
    n8nlock stacks above the body do not push it further right)."""
    return int(placement.user_extent(b.workflow).right - NODE_SIZE) + STEP, b.join_y


def join_once(
    b: Builder, restores: list[str], terminals: list[tuple[str, int]], release: str
) -> tuple[str, str]:
    """Lock Join (every end of the body, and each Restore) → Lock Release Once?, which lets
    the release run once per execution (`release`: the release's first node)."""
    x, y = release_spot(b)
    join = join_inputs(b, [(r, 0) for r in restores] + terminals, [x, y])
    x = b.position(join)[0]
    once = b.add(
        owned(
            b.key,
            "lock-release-once",
            "Lock Release Once?",
            "n8n-nodes-base.if",
            2.2,
            [x + engine.STEP, y],
            if_parameters(b.key, f"!$({js_literal(release)}).isExecuted"),
            **nodekit.RETRY,  # a stall that times out its expression fails the node (safety.md)
        ),
        placed=True,
    )
    return join, once


def merge(b: Builder, name: str, inputs: list[tuple[str, int]], position: list[int]) -> str:
    join = b.add(
        owned(
            b.key,
            "lock-join",
            name,
            "n8n-nodes-base.merge",
            3,
            position,
            {"numberInputs": max(2, len(inputs))},
        ),
        placed=True,
    )
    for index, (source, output) in enumerate(inputs):
        b.connect(source, output, join, index)
    return join


def join_inputs(b: Builder, inputs: list[tuple[str, int]], position: list[int]) -> str:
    """One Merge node, or one per ten inputs feeding a last one (Merge takes ten at most)."""
    chunks = [inputs[i : i + MAX_MERGE_INPUTS] for i in range(0, len(inputs), MAX_MERGE_INPUTS)]
    if len(chunks) > 1:
        x, y = position
        inputs = [
            (merge(b, f"Lock Join {i + 1}", chunk, [x, y + 200 * (i + 1)]), 0)
            for i, chunk in enumerate(chunks)
        ]
        position = [x + STEP, y]
    return merge(b, "Lock Join", inputs, position)


def entry_label(workflow: Workflow, entry: Entry) -> str:
    """How the nodes of one entry's chain are told apart: by trigger, then by output."""
    if entry.output_count == 1:
        return entry.node
    node = next(n for n in graph.nodes(workflow) if n["name"] == entry.node)
    methods = (node.get("parameters") or {}).get("httpMethod")
    if isinstance(methods, list) and entry.output < len(methods):
        return f"{entry.node} {methods[entry.output]}"  # a multipleMethods webhook
    return f"{entry.node} output {entry.output + 1}"


def trigger_entries(workflow: Workflow) -> list[Entry]:
    found = graph.entries(workflow)
    if not found:
        raise WrapError(
            "the workflow has no trigger connected to other nodes",
            hint="a lock protects what runs after a trigger; add one first",
        )
    return found
