from __future__ import annotations

import json
from pathlib import Path

import pytest

from n8n_lockkit.errors import LockkitError, PlaceholderError
from n8n_lockkit.remote.push import Outcome, PushFailed, PushResult, raise_for_failures
from n8n_lockkit.remote.push_compare import credential_matches, draft_pending, holds, is_subset
from n8n_lockkit.remote.push_items import (
    PushItem,
    activatable,
    only_internal_triggers,
    order_items,
    preflight,
    request_body,
    webhooks,
)
from n8n_lockkit.workspace.layout import Workspace


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


def workflow_of(types: list[str]) -> dict[str, object]:
    return {"nodes": [{"name": f"n{i}", "type": t} for i, t in enumerate(types)]}


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
    assert activatable({"nodes": [{"name": t, "type": t} for t in types]}) is expected


@pytest.mark.parametrize(
    ("types", "expected"),
    [
        (["n8n-nodes-base.executeWorkflowTrigger", "n8n-nodes-base.code"], True),
        (["n8n-nodes-base.errorTrigger"], True),
        (["n8n-nodes-base.executeWorkflowTrigger", "n8n-nodes-base.webhook"], False),
        (["n8n-nodes-base.code"], False),
    ],
)
def test_only_internal_triggers(types: list[str], expected: bool) -> None:
    assert only_internal_triggers(workflow_of(types)) is expected


# n8n's own rewrites, as measured on 2.41.1 and 1.123.81 (see tests/e2e/test_push_activation)


def chat(credentials: object) -> dict[str, object]:
    return {"nodes": [{"name": "Chat", "credentials": {"mattermostApi": credentials}}]}


@pytest.mark.parametrize(
    ("sent", "stored", "expected"),
    [
        # an old-style bare name n8n could not resolve: stored as is, or as {id: null, name}
        ("Mattermost", "Mattermost", True),
        ("Mattermost", {"id": None, "name": "Mattermost"}, True),
        # a bare name (or an id n8n does not know) resolved to the one credential of that name
        ("Mattermost", {"id": "c1", "name": "Mattermost"}, True),
        ({"id": "foreign", "name": "Mattermost"}, {"id": "c1", "name": "Mattermost"}, True),
        # a known id: n8n takes the name from its own record
        ({"id": "c1", "name": "old name"}, {"id": "c1", "name": "Mattermost"}, True),
        # real changes
        ("Mattermost", {"id": "c2", "name": "Slack"}, False),
        ({"id": "c2", "name": "Other"}, {"id": "c1", "name": "Mattermost"}, False),
        ({"id": None, "name": "Other"}, {"id": None, "name": "Mattermost"}, False),
    ],
)
def test_credential_references_compare_as_n8n_stores_them(
    sent: object, stored: object, expected: bool
) -> None:
    assert credential_matches(sent, stored) is expected
    assert holds(chat(sent), chat(stored)) is expected


def test_a_credential_n8n_lost_is_a_change() -> None:
    assert not holds(chat("Mattermost"), {"nodes": [{"name": "Chat"}]})


def test_an_empty_webhook_id_is_one_n8n_fills_in() -> None:
    sent = {"nodes": [{"name": "Wait", "webhookId": ""}]}
    assert holds(sent, {"nodes": [{"name": "Wait", "webhookId": "5f0c"}]})
    assert not holds(
        {"nodes": [{"name": "Wait", "webhookId": "a"}]},
        {"nodes": [{"name": "Wait", "webhookId": "b"}]},
    )


@pytest.mark.parametrize(
    ("setting", "value"),
    [("timezone", "DEFAULT"), ("errorWorkflow", "DEFAULT"), ("executionTimeout", -1)],
)
def test_settings_left_at_their_default_may_be_dropped_by_n8n(setting: str, value: object) -> None:
    sent = {"settings": {"executionOrder": "v1", setting: value}}
    assert holds(sent, {"settings": {"executionOrder": "v1"}})
    assert holds(sent, {"settings": {"executionOrder": "v1", setting: value}})
    assert not holds(sent, {"settings": {"executionOrder": "v1", setting: "Europe/Berlin"}})


def test_static_data_is_n8n_s_runtime_state_not_a_difference() -> None:
    sent = {"staticData": None, "name": "x"}
    assert holds(sent, {"staticData": {"node:Every": {"recurrenceRules": []}}, "name": "x"})


def test_other_settings_must_be_held() -> None:
    sent = {"settings": {"executionOrder": "v1", "timezone": "Europe/Berlin"}}
    assert not holds(sent, {"settings": {"executionOrder": "v1"}})


def test_a_draft_newer_than_the_published_version_is_pending() -> None:
    assert draft_pending({"active": True, "activeVersionId": "v1", "versionId": "v2"})
    assert not draft_pending({"active": True, "activeVersionId": "v2", "versionId": "v2"})
    assert not draft_pending({"active": False, "activeVersionId": None, "versionId": "v2"})


# the one Error/Hint pair at the end of a push


def test_a_clean_push_raises_nothing() -> None:
    raise_for_failures(PushResult([Outcome("a", "create", "1"), Outcome("b", "identical", "2")]))


def test_one_failure_carries_its_own_hint() -> None:
    result = PushResult(
        [
            Outcome("a", "create", "1", "failed", error="created, not published: x", hint="do y"),
            Outcome("b", "skip", "", "skipped", error="it references a, which failed"),
            Outcome("c", "identical", "3"),
        ]
    )
    with pytest.raises(PushFailed) as caught:
        raise_for_failures(result)
    assert caught.value.message == "1 of 3 workflow(s) failed: a; 1 skipped: b"
    assert caught.value.hint == "do y"
    assert caught.value.exit_code == 4


def test_several_failures_point_at_their_lines() -> None:
    failed = [Outcome(k, "update", k, "failed", error="e", hint=f"hint {k}") for k in "ab"]
    with pytest.raises(PushFailed) as caught:
        raise_for_failures(PushResult(failed))
    assert caught.value.message == "2 of 2 workflow(s) failed: a, b"
    assert "each `failed` line above gives n8n's message" in (caught.value.hint or "")


def test_webhooks_name_every_method_they_take() -> None:
    def hook(name: str, **parameters: object) -> dict[str, object]:
        return {"name": name, "type": "n8n-nodes-base.webhook", "parameters": parameters}

    workflow = {
        "nodes": [
            hook("Plain", path="a"),
            hook("Post", path="b", httpMethod="POST"),
            hook("Several", path="c", multipleMethods=True, httpMethod=["GET", "post"]),
            {**hook("Off", path="d"), "disabled": True},
            hook("No path"),
        ]
    }
    assert webhooks(workflow) == [("a", ("GET",)), ("b", ("POST",)), ("c", ("GET", "POST"))]
