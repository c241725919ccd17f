"""Where wrap puts what it adds, and the sticky notes that say what it is.

Each block n8nlock adds (a lock's acquire chain, a rate limit, the release, the Restore merges)
sits inside a sticky note of its own that names it and says how to change or remove it. The
acquire and rate-limit blocks stack above the body, the lowest first; the release block sits
right of the body's ends, on the first trigger's row. A block's own shape comes from its cells
(its chain's rows, `primitives/chain.py`); here it is only moved as a whole and framed.

Example:
    >>> nodes = [{"name": "A", "position": [0, 0]}, {"name": "B", "position": [180, 150]}]
    >>> extent(nodes)
    Box(x=0.0, y=0.0, width=280.0, height=250.0)
    >>> frame_box(extent(nodes))
    Box(x=-30.0, y=-110.0, width=340.0, height=430.0)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from n8n_lockkit.primitives.formats import managed_notes, role_of
from n8n_lockkit.rewrite.canvas.geometry import NODE_SIZE, STICKY_NOTE, Box, node_height, union
from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.graphs.graph import Node, Workflow

NOTE_SIDE = 30  # a note's margin left and right of its nodes
NOTE_HEADER = 110  # a note's title and text above its nodes
NOTE_FOOT = 70  # below the last row: its labels (two lines)
NOTE_GAP = 40  # between two notes
NODE_WIDTH = 180  # closer than this (or NODE_HEIGHT) and two nodes overlap on the canvas
NODE_HEIGHT = 100
# n8n's sticky note colours (1 yellow … 7 purple): one per kind of block.
COLORS = {
    "frame-lock": 5,
    "frame-dedupe": 3,
    "frame-rate": 6,
    "frame-release": 4,
    "frame-restore": 7,
    "frame-renew": 5,
}
_NOTE_IDS = uuid.UUID("5c3a91e2-0b7d-4f4e-a1c6-8d2e7b9f0a13")


def extent(nodes: Iterable[Node]) -> Box:
    """The rectangle the nodes' boxes cover (a node with many inputs or outputs is taller)."""
    found = union(
        Box(float(n["position"][0]), float(n["position"][1]), NODE_SIZE, node_height(n))
        for n in nodes
    )
    if found is None:
        raise ValueError("no nodes")
    return found


def frame_box(around: Box) -> Box:
    """The note around a block whose nodes cover `around`: room for its text on top."""
    return Box(
        around.x - NOTE_SIDE,
        around.y - NOTE_HEADER,
        around.width + 2 * NOTE_SIDE,
        around.height + NOTE_HEADER + NOTE_FOOT,
    )


def move(nodes: Iterable[Node], dx: int, dy: int) -> None:
    for node in nodes:
        node["position"] = [int(node["position"][0]) + dx, int(node["position"][1]) + dy]


def note(key: str, role: str, name: str, content: str, around: Box) -> Node:
    """A sticky note n8nlock owns (the note `n8nlock:<role>` finds it) around `around`."""
    box = frame_box(around)
    return {
        "id": str(uuid.uuid5(_NOTE_IDS, f"{key}:{role}:{name}")),
        "name": name,
        "type": STICKY_NOTE,
        "typeVersion": 1,
        "position": [int(box.x), int(box.y)],
        "parameters": {
            "content": content,
            "width": int(box.width),
            "height": int(box.height),
            "color": COLORS.get(role, 1),
        },
        "notes": managed_notes(role),
    }


def is_free(workflow: Workflow, spot: list[int]) -> bool:
    """No node (sticky notes aside) sits where a node at `spot` would overlap it."""
    return all(
        abs(n["position"][0] - spot[0]) >= NODE_WIDTH
        or abs(n["position"][1] - spot[1]) >= NODE_HEIGHT
        for n in graph.nodes(workflow)
        if n.get("type") != STICKY_NOTE and "position" in n
    )


def free_spot(workflow: Workflow, wanted: list[int]) -> list[int]:
    """`wanted`, or the nearest spot below or above it where no node sits."""
    x, y = wanted
    for dy in (0, *(d * sign for d in range(160, 1600, 160) for sign in (1, -1))):
        if is_free(workflow, [x, y + dy]):
            return [x, y + dy]
    return [x, y]


def user_extent(workflow: Workflow) -> Box:
    """The rectangle the workflow's own nodes cover (what n8nlock added left out)."""
    return extent(
        n
        for n in graph.nodes(workflow)
        if "position" in n and n.get("type") != STICKY_NOTE and role_of(n) is None
    )


def stack_above(nodes: list[Node], bottom: float) -> None:
    """Move a block up or down so that its note ends at `bottom`."""
    box = extent(nodes)
    move(nodes, 0, int(bottom - NOTE_FOOT - box.bottom))


def note_top(nodes: list[Node]) -> float:
    return frame_box(extent(nodes)).y
