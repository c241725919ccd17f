"""Where nodes and sticky notes sit on the canvas, from the workflow JSON (canvas_geometry)."""

from __future__ import annotations

from typing import Any

from n8n_lockkit.primitives.formats import managed_notes
from n8n_lockkit.rewrite.canvas.geometry import (
    Box,
    bounding_box,
    generated_names,
    node_boxes,
    note_boxes,
    overlaps,
    union,
)


def node(name: str, x: float, y: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": "n8n-nodes-base.set", "position": [x, y], **extra}


def sticky(name: str, x: float, y: float, **parameters: Any) -> dict[str, Any]:
    kind = {"type": "n8n-nodes-base.stickyNote"}
    return {**node(name, x, y), **kind, "parameters": {"content": "", **parameters}}


def test_a_node_is_a_100_px_box_at_its_position_and_a_note_has_its_own_size() -> None:
    workflow = {"nodes": [node("A", 0, 0), sticky("N", -20, -40, width=400, height=300)]}
    assert node_boxes(workflow) == {"A": Box(0, 0, 100, 100)}
    assert note_boxes(workflow) == {"N": Box(-20, -40, 400, 300)}


def test_a_switch_with_five_outputs_reaches_into_the_row_below_it() -> None:
    """n8n 2.41's editor draws a node 32 px taller for each main output (or input) beyond two:
    a Switch with five outputs over a node one 150 px row below overlaps it, which the
    layout check saw only in a browser while every box was 100 px."""
    route = node(
        "Route", 0, 0, type="n8n-nodes-base.switch", typeVersion=3.2,
        parameters={"mode": "expression", "numberOutputs": 5, "output": "={{ 0 }}"},
    )  # fmt: skip
    boxes = node_boxes({"nodes": [route, node("Denied", 0, 150)]})
    assert boxes["Route"] == Box(0, 0, 100, 196)
    assert overlaps(boxes) == [("Denied", "Route")]


def test_a_merge_of_four_inputs_and_an_if_with_an_error_output_are_taller_too() -> None:
    merge = node("Join", 0, 0, type="n8n-nodes-base.merge", parameters={"numberInputs": 4})
    check = node("Check", 200, 0, type="n8n-nodes-base.if", onError="continueErrorOutput")
    boxes = node_boxes({"nodes": [merge, check, node("Set", 400, 0)]})
    assert [boxes[n].height for n in ("Join", "Check", "Set")] == [164, 132, 100]


def test_a_note_without_a_size_takes_n8ns_default() -> None:
    assert note_boxes({"nodes": [sticky("N", 0, 0)]}) == {"N": Box(0, 0, 240, 160)}


def test_boxes_that_only_touch_do_not_overlap_and_sticky_notes_are_not_nodes() -> None:
    workflow = {
        "nodes": [node("A", 0, 0), node("B", 100, 0), node("C", 150, 50), sticky("N", 0, 0)]
    }
    assert overlaps(node_boxes(workflow)) == [("B", "C")]


def test_a_box_contains_another_up_to_a_tolerance() -> None:
    note = Box(0, 0, 300, 200)
    assert note.contains(Box(0, 0, 100, 100))
    assert not note.contains(Box(205, 0, 100, 100))
    assert note.contains(Box(205, 0, 100, 100), tolerance=5)


def test_the_bounding_box_covers_nodes_and_notes() -> None:
    workflow = {"nodes": [node("A", 0, 0), node("B", 660, 100), sticky("N", -40, -200)]}
    assert bounding_box(workflow) == Box(-40, -200, 800, 400)
    assert bounding_box({"nodes": []}) == Box(0, 0, 0, 0)
    assert union([]) is None


def test_generated_nodes_and_notes_are_known_by_the_managed_mark() -> None:
    workflow = {
        "nodes": [
            node("Set", 0, 0, notes="a user's note"),
            node("Lock Acquire", 0, 0, notes=managed_notes("acquire")),
            {**sticky("Frame", 0, 0), "notes": managed_notes("frame")},
        ]
    }
    assert generated_names(workflow) == {"Lock Acquire", "Frame"}
