"""A "last node" webhook answered by Lock Respond (`wrap(…, respond_by_node=True)`, what a wrap
that parks its waiters needs) answers exactly as it did, in a real n8n.

For each `responseData` option (and a response code, headers and a content type that are not
the defaults) three workflows run with the same payload: the plain one, the one wrapped as
today (`lastNode`, answered by Lock Output), and the one wrapped with Lock Respond. The three
HTTP answers must have the same status, content-type and body bytes.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import requests

from n8n_lockkit.primitives.render import dump_workflow
from n8n_lockkit.rewrite.wrapping.wrap import LockConfig, wrap
from tests.e2e.lockbed import LockBed, run_cli

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
}
BODY = (
    "return [{ json: { order: $json.body.order, n: 1, nested: { ok: true } } },"
    " { json: { order: $json.body.order, n: 2 } }];"
)


def _node(key: str, name: str, kind: str, version: float, x: int, **rest: Any) -> dict[str, Any]:
    identity = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{key}:{name}"))
    place = {"typeVersion": version, "position": [x, 0]}
    return {"id": identity, "name": name, "type": f"n8n-nodes-base.{kind}", **place, **rest}


def body_workflow(key: str, version: float, answer: dict[str, Any]) -> dict[str, Any]:
    """Webhook (lastNode, `answer`) → Two Items (a Code node)."""
    parameters = {"httpMethod": "POST", "path": key, "responseMode": "lastNode", **answer}
    webhook_id = str(uuid.uuid5(uuid.NAMESPACE_URL, key))
    webhook = _node(key, "Webhook", "webhook", version, 0, parameters=parameters)
    code = _node(key, "Two Items", "code", 2, 220, parameters={"jsCode": BODY})
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
        lock = LockConfig(f"respond-e2e-{case}-{suffix}", 60, 60)
        workflows = {
            plain: body_workflow(plain, version, answer),
            today: wrap(body_workflow(today, version, answer), today, lock, None),
            respond: wrap(
                body_workflow(respond, version, answer), respond, lock, None, respond_by_node=True
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
    before = answer(lockbed, plain)
    assert answer(lockbed, today) == before
    after = answer(lockbed, respond)
    assert after == before, json.dumps([str(before), str(after)])
