"""A "last node" webhook answered by Lock Respond (`wrap(…, respond_by_node=True)`, what a wrap
that parks its waiters needs) answers exactly as it did, in a real n8n.

For each `responseData` option (and a response code, headers and a content type that are not
the defaults) three workflows run with the same payload: the plain one, the one wrapped as
today (`lastNode`, answered by Lock Output), and the one wrapped with Lock Respond. The three
HTTP answers must have the same status, content-type and body bytes.
"""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

import pytest
import requests

from n8n_lockkit.primitives.render import dump_workflow
from n8n_lockkit.rewrite.wrapping.wrap import LockConfig, wrap
from tests.e2e.lockbed import LockBed, run_cli, wait_until
from tests.e2e.test_wrapped_corpus import lockbed_deactivate

HEADERS = {"entries": [{"name": "x-n8nlock-test", "value": "kept"}]}
# name: (webhook typeVersion, the webhook parameters that shape its answer)
CASES: dict[str, tuple[float, dict[str, Any]]] = {
    "first_entry_default": (2, {"options": {}}),
    "first_entry_options": (
        2,
        {
            "options": {
                "responseCode": {"values": {"responseCode": 201}},
                "responseHeaders": HEADERS,
                "responseContentType": "application/vnd.n8nlock+json",
            }
        },
    ),
    "all_entries": (
        2,
        {
            "responseData": "allEntries",
            "options": {
                "responseCode": {"values": {"responseCode": "customCode", "customCode": 299}},
                "responseHeaders": HEADERS,
            },
        },
    ),
    # n8n drops a customCode that "Custom Code" was not chosen for: 200 stays the answer.
    "hidden_custom_code": (
        2,
        {"options": {"responseCode": {"values": {"responseCode": 200, "customCode": 299}}}},
    ),
    "no_data": (2, {"responseData": "noData", "options": {"responseHeaders": HEADERS}}),
    "v1_code": (1, {"responseCode": 202, "options": {"responseHeaders": HEADERS}}),
    "no_items_first_entry": (2, {"options": {"responseHeaders": HEADERS}}),
    "no_items_all_entries": (
        2,
        {"responseData": "allEntries", "options": {"responseHeaders": HEADERS}},
    ),
    "no_items_no_data": (
        2,
        {
            "responseData": "noData",
            "options": {
                "responseCode": {"values": {"responseCode": 202}},
                "responseHeaders": HEADERS,
            },
        },
    ),
    "body_fails": (2, {"options": {}}),
}
BODY = (
    "return [{ json: { order: $json.body.order, n: 1, nested: { ok: true } } },"
    " { json: { order: $json.body.order, n: 2 } }];"
)
SCHEDULED = "return [{ json: { n: 1 } }, { json: { n: 2 } }];"
# The cases whose body is not BODY: one that ends with no items, one that fails.
BODIES = {
    "no_items_first_entry": "return [];",
    "no_items_all_entries": "return [];",
    "no_items_no_data": "return [];",
    "body_fails": "throw new Error('e2e: failing on purpose');",
}

# Where Lock Respond does not answer as 'last node' (measured on 2.41.1 and 1.123.81):
# - "first entry" of a body whose last node outputs no items: Lock Respond does not run (n8n
#   runs no node on an empty input), and n8n ends a responseNode call with an empty 200 without
#   the headers, where 'last node' answers 500 "No item to return was found" (with n8n's stack);
# - on 1.x, a failed execution: n8n 1.x answers a responseNode call when its execution ends,
#   with an empty 200, before it looks for an error ('last node': 500 "Error in workflow").
EMPTY_200 = (200, "application/json; charset=utf-8 ", b"")
NOT_THE_SAME = {"no_items_first_entry": EMPTY_200}
NOT_THE_SAME_ON_1X = {"body_fails": EMPTY_200}


def _node(key: str, name: str, kind: str, version: float, x: int, **rest: Any) -> dict[str, Any]:
    identity = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{key}:{name}"))
    place = {"typeVersion": version, "position": [x, 0]}
    return {"id": identity, "name": name, "type": f"n8n-nodes-base.{kind}", **place, **rest}


def body_workflow(key: str, version: float, answer: dict[str, Any], js: str) -> dict[str, Any]:
    """Webhook (lastNode, `answer`) → Two Items (a Code node)."""
    parameters = {"httpMethod": "POST", "path": key, "responseMode": "lastNode", **answer}
    webhook_id = str(uuid.uuid5(uuid.NAMESPACE_URL, key))
    webhook = _node(key, "Webhook", "webhook", version, 0, parameters=parameters)
    code = _node(key, "Two Items", "code", 2, 220, parameters={"jsCode": js})
    return {
        "name": f"respond e2e ({key})",
        "nodes": [{**webhook, "webhookId": webhook_id}, code],
        "connections": {"Webhook": {"main": [[{"node": "Two Items", "type": "main", "index": 0}]]}},
        "settings": {"executionOrder": "v1"},
    }


@pytest.fixture(scope="module")
def installed(lockbed: LockBed) -> dict[str, tuple[str, str, str]]:
    """Per case, the keys (= webhook paths) of its plain, lastNode-wrapped and Lock Respond
    workflows, pushed and active."""
    suffix = uuid.uuid4().hex[:6]
    keys: dict[str, tuple[str, str, str]] = {}
    for case, (version, answer) in CASES.items():
        plain, today, respond = (f"respond_{case}_{suffix}_{v}" for v in ("plain", "today", "rn"))
        js = BODIES.get(case, BODY)
        # A scope each: a failed body holds its lock (no --lock-on-error) until the TTL.
        today_lock, respond_lock = (
            LockConfig(f"respond-e2e-{k}", 60, 60) for k in (today, respond)
        )
        workflows = {
            plain: body_workflow(plain, version, answer, js),
            today: wrap(body_workflow(today, version, answer, js), today, today_lock, None),
            respond: wrap(
                body_workflow(respond, version, answer, js),
                respond,
                respond_lock,
                None,
                respond_by_node=True,
            ),
        }
        for key, workflow in workflows.items():
            path = lockbed.root / "workflows" / f"{key}.template.json"
            path.write_text(dump_workflow(workflow))
        keys[case] = (plain, today, respond)
    run_cli(lockbed.root, "validate", "--env", "e2e")
    every = ["error_handler_lock_cleanup", *(k for three in keys.values() for k in three)]
    run_cli(lockbed.root, "push", "--env", "e2e", "--activate", *every)
    return keys


def answer(lockbed: LockBed, path: str) -> tuple[int, str, bytes]:
    response = requests.post(
        f"{lockbed.n8n.base_url}/webhook/{path}", json={"order": "o-7"}, timeout=60
    )
    extra = response.headers.get("x-n8nlock-test", "")
    return response.status_code, f"{response.headers.get('content-type')} {extra}", response.content


@pytest.mark.parametrize("case", sorted(CASES))
def test_lock_respond_answers_as_last_node_did(
    lockbed: LockBed, installed: dict[str, tuple[str, str, str]], case: str
) -> None:
    plain, today, respond = installed[case]
    before, wrapped, after = (answer(lockbed, key) for key in (plain, today, respond))
    seen = json.dumps({"plain": str(before), "today": str(wrapped), "respond": str(after)})
    assert wrapped == before, seen
    on_1x = NOT_THE_SAME_ON_1X if lockbed.n8n.version.startswith("1.") else {}
    assert after == {**NOT_THE_SAME, **on_1x}.get(case, before), seen


def test_a_schedule_beside_the_webhook_runs_lock_respond_without_harm(lockbed: LockBed) -> None:
    """Lock Respond also follows the release of a Schedule Trigger's executions (they share the
    release): there it answers nobody, and the execution succeeds."""
    key = f"respond_schedule_{uuid.uuid4().hex[:6]}"
    body = body_workflow(key, 2, {"responseData": "allEntries"}, SCHEDULED)
    rule = {"rule": {"interval": [{"field": "seconds", "secondsInterval": 2}]}}
    body["nodes"].append(_node(key, "Every 2 s", "scheduleTrigger", 1.2, 0, parameters=rule))
    body["connections"]["Every 2 s"] = copy.deepcopy(body["connections"]["Webhook"])
    wrapped = wrap(body, key, LockConfig(f"respond-e2e-{key}", 60, 60), None, respond_by_node=True)
    (lockbed.root / "workflows" / f"{key}.template.json").write_text(dump_workflow(wrapped))
    run_cli(lockbed.root, "push", "--env", "e2e", "--activate", "error_handler_lock_cleanup", key)
    try:
        workflow_id = lockbed.workflow_id(key)

        def scheduled() -> list[dict[str, Any]]:
            return [e for e in lockbed.executions(workflow_id) if e["mode"] == "trigger"]

        wait_until(lambda: len(scheduled()) >= 2, 30, "the schedule ran twice")
        wait_until(lambda: all(e["finished"] for e in scheduled()[:2]), 20, "the runs finished")
        assert {e["status"] for e in scheduled()[:2]} == {"success"}
        assert answer(lockbed, key)[::2] == (200, b'[{"n":1},{"n":2}]')
    finally:
        lockbed_deactivate(lockbed, key)
