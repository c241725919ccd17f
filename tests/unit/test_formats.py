"""Format stamps: which n8nlock format made a file, and whether a primitive was edited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from n8n_lockkit.primitives import formats
from n8n_lockkit.primitives.catalogue import PRIMITIVES
from n8n_lockkit.primitives.render import dump_workflow, render_primitive
from n8n_lockkit.rewrite.wrapping.wrap import LockConfig, wrap

CORPUS = Path(__file__).parents[1] / "corpus"


@pytest.mark.parametrize("key", sorted(PRIMITIVES))
def test_a_rendered_primitive_carries_this_format_and_its_own_digest(key: str) -> None:
    workflow = render_primitive(PRIMITIVES[key])
    assert formats.primitive_stamp(workflow) == (key, formats.FORMAT, formats.digest(workflow))
    assert formats.workflow_format(workflow) == formats.FORMAT
    assert formats.is_pristine_primitive(key, workflow)
    # The digest ignores layout: a file re-indented by an editor is still pristine.
    assert formats.is_pristine_primitive(key, json.loads(json.dumps(workflow, indent=4)))


def test_a_primitive_with_one_parameter_changed_is_no_longer_pristine() -> None:
    workflow = render_primitive(PRIMITIVES["lock_acquisition"])
    workflow["nodes"][1]["position"] = [1, 1]
    assert not formats.is_pristine_primitive("lock_acquisition", workflow)


def test_a_primitive_stamped_for_another_key_is_not_that_primitive() -> None:
    workflow = render_primitive(PRIMITIVES["lock_release"])
    assert not formats.is_pristine_primitive("lock_acquisition", workflow)


def test_every_wrapped_node_says_its_format() -> None:
    body = json.loads((CORPUS / "order_update.template.json").read_text())
    wrapped = wrap(body, "order_update", LockConfig("orders", 60), None)
    managed = [n for n in wrapped["nodes"] if str(n.get("notes", "")).startswith("n8nlock:")]
    assert managed
    assert all(f"(format {formats.FORMAT})" in n["notes"] for n in managed)
    assert formats.workflow_format(wrapped) == formats.FORMAT


def test_unstamped_engine_v2_nodes_are_format_2_and_older_ones_format_1() -> None:
    body = json.loads((CORPUS / "order_update.template.json").read_text())
    for via_subworkflow in (False, True):
        wrapped = wrap(body, "k", LockConfig("orders", 60, via_subworkflow=via_subworkflow), None)
        text = dump_workflow(wrapped).replace(f" (format {formats.FORMAT})", "")
        assert formats.workflow_format(json.loads(text)) == 2
    legacy = {"nodes": [{"notes": "n8nlock:lock-release — managed by n8nlock; re-run it"}]}
    assert formats.workflow_format(legacy) == 1


def test_a_workflow_without_n8nlock_nodes_has_no_format() -> None:
    assert formats.workflow_format({"name": "mine", "nodes": [{"name": "Set"}]}) is None
    assert formats.workflow_format({"name": "n8nlock: Lock Release", "nodes": []}) == 1
