"""Where a workflow's nodes and sticky notes sit on n8n's canvas, from the workflow JSON alone.

n8n stores a node's top-left corner in `position`; the editor draws a node as a box of about
100 × 100 px there (taller with more than two inputs or outputs), and a sticky note
(`n8n-nodes-base.stickyNote`) as a `width` × `height` rectangle behind the nodes. The same `Box`
also holds rectangles measured in a browser (the canvas test in tests/e2e/test_canvas.py), so
both use the checks below.

Example:
    >>> wf = {"nodes": [
    ...     {"name": "A", "type": "n8n-nodes-base.set", "position": [0, 0]},
    ...     {"name": "B", "type": "n8n-nodes-base.set", "position": [60, 0]},
    ...     {"name": "N", "type": "n8n-nodes-base.stickyNote", "position": [-20, -20],
    ...      "parameters": {"width": 300, "height": 200}}]}
    >>> overlaps(node_boxes(wf))
    [('A', 'B')]
    >>> bounding_box(wf)
    Box(x=-20.0, y=-20.0, width=300.0, height=200.0)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from n8n_lockkit.primitives.formats import role_of
from n8n_lockkit.rewrite.graphs.graph import STICKY_NOTE as STICKY_NOTE
from n8n_lockkit.rewrite.graphs.graph import input_count, output_count

NODE_SIZE = 100.0  # the editor's node box; n8n 2.x draws 96 px inside a 16 px grid
# n8n 2.41 draws a node with more than two main inputs or outputs (an error output counts) taller
# by this much for each one beyond two: a Switch with five outputs is 192 px tall, a Merge of
# three inputs 128 (measured in the editor).
PORT_STEP = 32.0
# n8n's defaults for a sticky note without width/height parameters.
DEFAULT_NOTE_WIDTH = 240.0
DEFAULT_NOTE_HEIGHT = 160.0

Workflow = Mapping[str, Any]


@dataclass(frozen=True)
class Box:
    """An axis-aligned rectangle: top-left corner and size, y growing downwards."""

    x: float
    y: float
    width: float
    height: float

    @property
    def right(self) -> float:
        return self.x + self.width

    @property
    def bottom(self) -> float:
        return self.y + self.height

    def intersects(self, other: Box) -> bool:
        """True when the two share an area (touching edges do not count)."""
        return (
            self.x < other.right
            and other.x < self.right
            and self.y < other.bottom
            and other.y < self.bottom
        )

    def contains(self, other: Box, tolerance: float = 0.0) -> bool:
        """True when `other` lies inside this box (edges may coincide, or stick out by
        `tolerance` px)."""
        return (
            other.x >= self.x - tolerance
            and other.y >= self.y - tolerance
            and other.right <= self.right + tolerance
            and other.bottom <= self.bottom + tolerance
        )


def _nodes(workflow: Workflow) -> list[dict[str, Any]]:
    nodes = workflow.get("nodes")
    return [n for n in nodes if isinstance(n, dict)] if isinstance(nodes, list) else []


def is_sticky(node: Mapping[str, Any]) -> bool:
    return node.get("type") == STICKY_NOTE


def is_generated(node: Mapping[str, Any]) -> bool:
    """True for a node (or sticky note) n8nlock added: its notes start with the managed mark."""
    return role_of(node) is not None


def _position(node: Mapping[str, Any]) -> tuple[float, float] | None:
    position = node.get("position")
    if not isinstance(position, list | tuple) or len(position) != 2:
        return None
    try:
        return float(position[0]), float(position[1])
    except (TypeError, ValueError):
        return None


def _number(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def node_height(node: Mapping[str, Any]) -> float:
    """How tall the editor draws the node: taller with each main input or output beyond two.

    Example:
        >>> node_height({"type": "n8n-nodes-base.switch", "typeVersion": 3.2,
        ...              "parameters": {"mode": "expression", "numberOutputs": 5}})
        196.0
    """
    ports = max(output_count(dict(node)), input_count(dict(node)))
    return NODE_SIZE + PORT_STEP * max(0, ports - 2)


def node_boxes(workflow: Workflow) -> dict[str, Box]:
    """The box of every node that is not a sticky note, by node name."""
    boxes = {}
    for node in _nodes(workflow):
        position = _position(node)
        if position is not None and not is_sticky(node):
            boxes[str(node.get("name"))] = Box(*position, NODE_SIZE, node_height(node))
    return boxes


def note_boxes(workflow: Workflow) -> dict[str, Box]:
    """The rectangle of every sticky note, by node name."""
    boxes = {}
    for node in _nodes(workflow):
        position = _position(node)
        if position is not None and is_sticky(node):
            parameters = node.get("parameters")
            parameters = parameters if isinstance(parameters, dict) else {}
            width = _number(parameters.get("width"), DEFAULT_NOTE_WIDTH)
            height = _number(parameters.get("height"), DEFAULT_NOTE_HEIGHT)
            boxes[str(node.get("name"))] = Box(*position, width, height)
    return boxes


def generated_names(workflow: Workflow) -> set[str]:
    """Names of the nodes and sticky notes n8nlock added."""
    return {str(n.get("name")) for n in _nodes(workflow) if is_generated(n)}


def overlaps(boxes: Mapping[str, Box]) -> list[tuple[str, str]]:
    """Every pair of boxes that share an area, each pair once, in name order."""
    pairs = itertools.combinations(sorted(boxes), 2)
    return [(a, b) for a, b in pairs if boxes[a].intersects(boxes[b])]


def union(boxes: Iterable[Box]) -> Box | None:
    """The smallest box around all of `boxes`; None when there are none."""
    found = list(boxes)
    if not found:
        return None
    left, top = min(b.x for b in found), min(b.y for b in found)
    right, bottom = max(b.right for b in found), max(b.bottom for b in found)
    return Box(left, top, right - left, bottom - top)


def bounding_box(workflow: Workflow) -> Box:
    """The area the canvas needs: every node box and sticky note (an empty canvas: 0 × 0)."""
    found = union([*node_boxes(workflow).values(), *note_boxes(workflow).values()])
    return found if found is not None else Box(0.0, 0.0, 0.0, 0.0)
