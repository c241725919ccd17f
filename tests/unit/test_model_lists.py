"""The model's Redis lists behave as n8n's Redis node did against a real Redis.

The append-only log that can close the debounce's cut gap (docs/debounce.md, "Why INCR cannot
close the cut gap") is built from three Redis node operations, checked by hand on n8n 2.41.1 and
1.123.81: *Push* with Tail is an RPUSH that passes its item through, *Get* with key type `list`
is LRANGE 0 -1, and *Set* with key type `list` and Expire writes each element of the value by
index, then EXPIREs, so an empty value gives the list its TTL and changes nothing in it. The
model check can only judge a design built on them if its mini n8n runs them the same way.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.unit import test_lock_model

# Fast, so not marked slow; it needs Node.js as the model check does.
pytestmark = [m for m in test_lock_model.pytestmark if m.name == "skipif"]

PROBE = Path(__file__).parents[1] / "model" / "lists_probe.mjs"


def test_two_pushes_are_read_back_in_order_and_an_empty_list_set_only_sets_the_ttl() -> None:
    node = test_lock_model.NODE
    assert node is not None
    out = subprocess.run([node, str(PROBE)], capture_output=True, text=True, check=True, timeout=60)
    seen = json.loads(out.stdout)
    # The first party reads only its own mark; the second reads both, the first one first.
    assert seen["first"] == [{"marks": ["e"]}]
    assert seen["second"] == [{"marks": ["e", "r"]}]
    assert seen["held"] == ["e", "r"]
    assert seen["ttl_s"] == 100
