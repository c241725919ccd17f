"""What a user sees after wrapping: every added node framed by a note that says what it is,
nothing overlapping, the body where it was (shifted as a whole), notes off the user's nodes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from n8n_lockkit.primitives.formats import role_of
from n8n_lockkit.rewrite.canvas.geometry import STICKY_NOTE, Box, node_boxes, note_boxes, overlaps
from n8n_lockkit.rewrite.wrapping.unwrap import unwrap
from n8n_lockkit.rewrite.wrapping.wrap import LockConfig, RateLimitConfig, Rates, wrap

CORPUS = Path(__file__).parent.parent / "corpus"
NAMES = sorted(p.name.removesuffix(".template.json") for p in CORPUS.glob("*.template.json"))
LOCK = LockConfig("={{ 'order-' + $json.body.orderId }}", 300, 60)
RATE = RateLimitConfig("=api-{{ $json.body.customer }}", 5, 60)
FORMS: dict[str, tuple[LockConfig | None, Rates]] = {
    "lock": (LOCK, None),
    "lock, parked": (dataclasses.replace(LOCK, park=True), None),
    "lock+rate": (LOCK, RATE),
    "lock+rate, parked": (dataclasses.replace(LOCK, park=True), RATE),
    "lock+waiting rate": (LOCK, dataclasses.replace(RATE, on_denied="wait")),
    "rate": (None, RATE),
    "semaphore, fail fast": (dataclasses.replace(LOCK, max_concurrent=3, on_busy="error"), None),
    "via sub-workflow": (dataclasses.replace(LOCK, via_subworkflow=True), RATE),
}


def load(name: str) -> dict[str, Any]:
    workflow: dict[str, Any] = json.loads((CORPUS / f"{name}.template.json").read_text())
    return workflow


def wrapped(name: str, form: str) -> dict[str, Any]:
    lock, rate = FORMS[form]
    return wrap(load(name), name, lock, rate)


def frames(workflow: dict[str, Any]) -> dict[str, Box]:
    return {k: v for k, v in note_boxes(workflow).items() if _role(workflow, k).startswith("frame")}


def _role(workflow: dict[str, Any], name: str) -> str:
    node = next(n for n in workflow["nodes"] if n["name"] == name)
    return role_of(node) or ""


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", NAMES)
def test_no_two_nodes_overlap_after_wrapping(name: str, form: str) -> None:
    assert overlaps(node_boxes(wrapped(name, form))) == []


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", NAMES)
def test_every_added_node_sits_in_a_note_that_says_what_it_is(name: str, form: str) -> None:
    workflow = wrapped(name, form)
    notes = frames(workflow)
    assert notes, "wrapping added no note"
    boxes = node_boxes(workflow)
    added = [n["name"] for n in workflow["nodes"] if role_of(n) and n["type"] != STICKY_NOTE]
    unframed = [a for a in added if not any(note.contains(boxes[a]) for note in notes.values())]
    assert unframed == []
    for note in (n for n in workflow["nodes"] if n["name"] in notes):
        assert "n8nlock" in note["parameters"]["content"] or note["name"].startswith("n8nlock")


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", NAMES)
def test_no_note_covers_a_node_of_the_users(name: str, form: str) -> None:
    workflow = wrapped(name, form)
    boxes = node_boxes(workflow)
    users = [n["name"] for n in workflow["nodes"] if not role_of(n) and n["type"] != STICKY_NOTE]
    covered = [
        (note, user)
        for note, box in frames(workflow).items()
        for user in users
        if box.intersects(boxes[user])
    ]
    assert covered == []


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", NAMES)
def test_the_body_keeps_its_shape_and_unwrap_gives_the_file_back(name: str, form: str) -> None:
    body = load(name)
    workflow = wrapped(name, form)
    before = {n["name"]: n["position"] for n in body["nodes"] if n["type"] != STICKY_NOTE}
    after = {n["name"]: n["position"] for n in workflow["nodes"] if n["name"] in before}
    moves = {(a[0] - before[k][0], a[1] - before[k][1]) for k, a in after.items()}
    assert len({dy for _, dy in moves}) == 1  # rows stay; triggers stay, the rest shift right
    assert len(moves) <= 2
    assert unwrap(workflow) == json.loads(json.dumps(unwrap(wrap(body, name, None, None))))


def test_a_renewal_sits_in_its_own_note_above_the_node_it_renews_before() -> None:
    body = load("batch_loop")
    lock = dataclasses.replace(LOCK, renew_before=("Handle Batch",))
    workflow = wrap(body, "batch_loop", lock, RATE)
    boxes = node_boxes(workflow)
    notes = frames(workflow)
    renewal = [n["name"] for n in workflow["nodes"] if role_of(n) in ("lock-renew", "lock-renewed")]
    assert len(renewal) == 2
    for name in renewal:
        assert any(box.contains(boxes[name]) for box in notes.values()), name
        # n8n's v1 order runs a node's targets top to bottom: the renewal before the node
        assert boxes[name].y < boxes["Handle Batch"].y
    assert overlaps(boxes) == []
    assert unwrap(workflow) == json.loads(json.dumps(unwrap(wrap(body, "batch_loop", None, None))))
