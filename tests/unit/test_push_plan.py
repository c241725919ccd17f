from __future__ import annotations

import json
from pathlib import Path

import pytest

from n8n_lockkit.errors import LockkitError, PlaceholderError
from n8n_lockkit.push import PushItem, activatable, is_subset, order_items, preflight, request_body
from n8n_lockkit.workspace import Workspace


def item(key: str, refs: tuple[str, ...] = (), extra: str = "") -> PushItem:
    text = json.dumps(
        {
            "name": key,
            "nodes": [],
            "connections": {},
            "active": True,
            "tags": [],
            "settings": {"refs": [f"{{{{@:env:workflows.{r}.id}}}}" for r in refs], "x": extra},
        }
    )
    return PushItem(key, Path(f"workflows/{key}.template.json"), text, json.loads(text))


def test_referenced_workflows_go_first() -> None:
    items = [
        item("caller", ("lock_release", "lock_acquisition")),
        item("lock_release"),
        item("lock_acquisition"),
    ]
    assert [i.key for i in order_items(items)] == ["lock_release", "lock_acquisition", "caller"]


def test_a_cycle_is_refused() -> None:
    with pytest.raises(LockkitError, match="cycle: a -> b -> a"):
        order_items([item("a", ("b",)), item("b", ("a",))])


def test_only_accepted_fields_are_sent_and_placeholders_resolve() -> None:
    body = request_body(item("c", ("a",)), {"workflows": {"a": {"id": "42"}}}, "Name")
    assert sorted(body) == ["connections", "name", "nodes", "settings"]
    assert body["settings"]["refs"] == ["42"]
    assert body["name"] == "Name"


def test_preflight_names_file_and_placeholder() -> None:
    env: dict[str, object] = {"workflows": {}}
    with pytest.raises(PlaceholderError, match=r"caller\.template\.json: \{\{@:env:cred"):
        preflight(Workspace(Path()), [item("caller", extra="{{@:env:credentials.redis.id}}")], env)


def test_preflight_allows_ids_that_this_push_will_create() -> None:
    preflight(
        Workspace(Path()),
        [item("caller", ("lock_release",)), item("lock_release")],
        {"workflows": {"lock_release": {"id": "", "name": "x"}}},
    )


def test_preflight_refuses_ids_of_workflows_not_in_this_push() -> None:
    with pytest.raises(PlaceholderError, match="not on n8n yet"):
        preflight(
            Workspace(Path()),
            [item("caller", ("lock_release",))],
            {"workflows": {"lock_release": {"id": "", "name": "x"}}},
        )


def test_subset_ignores_what_n8n_adds() -> None:
    sent = {"nodes": [{"name": "A", "parameters": {"x": 1}}], "settings": {"executionOrder": "v1"}}
    stored = {
        "nodes": [{"name": "A", "parameters": {"x": 1, "options": {}}, "id": "n"}],
        "settings": {"executionOrder": "v1", "callerPolicy": "workflowsFromSameOwner"},
    }
    assert is_subset(sent, stored)
    assert not is_subset(sent, {**stored, "nodes": [{"name": "A", "parameters": {"x": 2}}]})


@pytest.mark.parametrize(
    ("types", "expected"),
    [
        (["n8n-nodes-base.webhook", "n8n-nodes-base.code"], True),
        (["n8n-nodes-base.executeWorkflowTrigger"], True),
        (["n8n-nodes-base.scheduleTrigger"], True),
        (["n8n-nodes-base.errorTrigger", "n8n-nodes-base.code"], True),
        (["n8n-nodes-base.manualTrigger"], False),
    ],
)
def test_activatable(types: list[str], expected: bool) -> None:
    assert activatable({"nodes": [{"type": t} for t in types]}) is expected
