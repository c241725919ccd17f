"""A duplicate guard that replays (`add-dedupe --on-duplicate replay`): a duplicate gets what
the first run of its key answered its webhook, instead of a skipped answer.

The guard's engine chain runs with the `wait` policy: a duplicate that arrives while the first
run holds the key waits in line for it (up to the guard's max wait, REPLAY_MAX_WAIT_SECONDS by
default), as a lock's waiter does. When the first run succeeds its release writes the key's done
mark, and every waiter's next look turns it away (the engine's `skipped` exit); when it fails
the cleanup handler frees the key and the next waiter takes it and runs the body, as a first.

Two sides, both of plain n8n nodes:

- The first run stores its answer. Every Respond to Webhook node of the workflow (the user's,
  or Lock Respond for a "last node" webhook, `respond.py`) gets its response output branch
  (`enableResponseOutput` of node version 1.4, which an older node is raised to: versions
  1.1 to 1.4 answer alike; n8n gives `{response: {body, headers, statusCode}}` there). It
  leads to Dedupe Store Answer (a Set node: status, content type, body as text; a marker when
  the body is larger than the cap) and Dedupe Store (a Redis SET of `n8nlock:answer:<scope>`
  with the window's TTL, `keys.py`).
- A duplicate turned away reads that key (Dedupe Replay Read) and answers with it (Dedupe
  Replay Respond). The first run's release may write the done mark a moment before its answer
  is stored, so a duplicate that finds no answer looks again, REPLAY_POLLS times
  REPLAY_POLL_SECONDS apart, before it answers skipped ("no answer stored"). One that gives up
  waiting in line answers 409 with JSON that names the first execution (Dedupe Replay Busy,
  in place of the engine's Lock Refused).

`restore` (from `unwrap`) turns the response output branches it enabled off again.
"""

from __future__ import annotations

import json
from typing import Any

from n8n_lockkit.primitives import keys, nodekit
from n8n_lockkit.primitives.chain import Chain, Row
from n8n_lockkit.primitives.nodekit import (
    GET_EACH,
    SET_STRING_EACH,
    js_literal,
    redis,
    set_raw,
    switch,
    wait,
)
from n8n_lockkit.rewrite.canvas import placement
from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.graphs.graph import Node, Workflow
from n8n_lockkit.rewrite.wrapping.configs import WrapError
from n8n_lockkit.rewrite.wrapping.nodes import role_of

REPLAY = "replay"
REPLAY_MAX_WAIT_SECONDS = 60  # the default max wait of a duplicate for the first run
MAX_ANSWER_BYTES = 65536  # a larger answer is not stored (its duplicates answer skipped)
REPLAY_POLLS = 20  # looks for an answer after the done mark, before "no answer stored"
REPLAY_POLL_SECONDS = 0.25
WEBHOOK = "n8n-nodes-base.webhook"
RESPOND = "n8n-nodes-base.respondToWebhook"
RESPONSE_OUTPUT = "enableResponseOutput"
RESPONSE_OUTPUT_VERSION = 1.4  # the first Respond to Webhook version with the branch
STORE_ROLE = "dedupe-store-answer"
STORE_NAME = "Dedupe Store Answer"
SET_ROLE = "dedupe-store"
SET_NAME = "Dedupe Store"
FRAME_ROLE = "frame-dedupe-answer"
FRAME_NAME = "n8nlock · Dedupe Answer"
FRAME_TEXT = (
    "## Dedupe Answer\nStores what this run answered its webhook, for the duplicates of its "
    "key (`--on-duplicate replay`). **Remove**: `n8nlock unwrap --only dedupe`."
)
BEFORE_MARK = "\nresponse outputs before n8nlock: "
_HINT = "use --on-duplicate skip or error for this workflow"


def _refuse(what: str, hint: str) -> WrapError:
    return WrapError(f"--on-duplicate replay: {what}", hint=hint)


def check(workflow: Workflow, triggers: list[str]) -> None:
    """Refuse what has no answer to replay: a trigger other than a webhook, a webhook that
    answers when it receives the call, and an answer replay cannot store (binary data, a
    redirect)."""
    by_name = {str(n["name"]): n for n in graph.nodes(workflow)}
    for name in triggers:
        node = by_name[name]
        if node.get("type") != WEBHOOK:
            raise _refuse(
                f"trigger {name!r} ({node.get('type')}) has no caller to answer",
                f"{_HINT}; replay answers the callers of a Webhook trigger",
            )
        parameters = graph.as_dict(node.get("parameters"))
        mode = parameters.get("responseMode", "onReceived")
        if mode not in ("lastNode", "responseNode"):
            raise _refuse(
                f"webhook {name!r} answers as soon as it receives a call ({mode}), before the "
                "body has an answer",
                "set its Respond to 'When Last Node Finishes' or 'Using Respond to Webhook "
                f"Node', or {_HINT}",
            )
        options = graph.as_dict(parameters.get("options"))
        data = parameters.get("responseData", "firstEntryJson")
        picked = data == "firstEntryJson" and options.get("responsePropertyName")
        binary = data == "firstEntryBinary" or picked
        if mode == "lastNode" and binary:
            raise _refuse(
                f"webhook {name!r} answers with binary data or one property of an item, which "
                "is not stored",
                f"answer with JSON, or {_HINT}",
            )
    for node in graph.nodes(workflow):
        if node.get("type") != RESPOND or role_of(node):
            continue
        _check_respond(node)


def _check_respond(node: Node) -> None:
    name = node["name"]
    parameters = graph.as_dict(node.get("parameters"))
    respond_with = parameters.get("respondWith", "firstIncomingItem")
    if respond_with in ("binary", "redirect"):
        raise _refuse(
            f"Respond to Webhook node {name!r} answers with {respond_with!r}, which is not "
            "stored (only status, content type and a text or JSON body are)",
            f"answer with JSON or text, or {_HINT}",
        )
    raised = float(node.get("typeVersion", 1)) < RESPONSE_OUTPUT_VERSION
    if raised and str(respond_with).startswith("="):
        raise _refuse(
            f"Respond to Webhook node {name!r} (version {node.get('typeVersion')}) picks what "
            "it answers with by an expression, which its version "
            f"{RESPONSE_OUTPUT_VERSION} (the first with the response output branch that the "
            "answer is read from) does not allow",
            "choose one 'Respond With' for it, or " + _HINT,
        )


def _answer_key(scope_js: str) -> str:
    return f"{js_literal(keys.TEMPLATE_SCHEMA.answer)} + {scope_js}"


def duplicates(group: Chain) -> None:
    """The duplicate's side, added to a guard's acquire chain after its skipped exit: read the
    stored answer and answer with it (or look again, or answer skipped); and in place of Lock
    Refused (a duplicate that waited its max wait in line) a 409 naming the first execution."""
    skipped = group.first("Lock Skipped")
    read = {
        **GET_EACH,
        "propertyName": "answer",
        "key": f"={{{{ {_answer_key(skipped + '.scope')} }}}}",
    }
    verdict = (
        "={{ (() => { "
        f"const skipped = {skipped}; "
        "const raw = $json.answer; "
        "let stored = null; "
        "try { stored = raw === null || raw === undefined ? null : "
        "typeof raw === 'string' ? JSON.parse(raw) : raw; } catch (error) { stored = null; } "
        "if (stored !== null && !stored.too_large) return { state: 'answer', "
        "status: stored.status, content_type: stored.content_type, body: stored.body }; "
        f"if (stored === null && $runIndex < {REPLAY_POLLS}) return {{ state: 'poll' }}; "
        "const reason = stored === null ? 'no answer stored' : 'answer too large to store'; "
        "const size = stored === null ? {} : { answer_bytes: stored.bytes, "
        "max_answer_bytes: stored.cap }; "
        "return { state: 'skipped', answer: { ...skipped, reason, ...size } }; "
        "})() }}"
    )
    replay = nodekit.Kind(
        RESPOND,
        1.1,
        {
            "respondWith": "text",
            "responseBody": "={{ $json.body }}",
            "options": {
                "responseCode": "={{ $json.status }}",
                "responseHeaders": {
                    "entries": [{"name": "content-type", "value": "={{ $json.content_type }}"}]
                },
            },
        },
    )
    answer_skipped = nodekit.Kind(
        RESPOND,
        1.1,
        {"respondWith": "json", "responseBody": "={{ $json.answer }}", "options": {}},
    )
    decision = group.first("Lock Decide")
    context = group.first("Lock Context")
    busy_body = (
        "={{ (() => { "
        f"const decision = {decision}; "
        "const held = String(decision.message || '').match(/execution ([^)\\s]+)\\)/); "
        "return { skipped: false, duplicate: true, reason: 'first run still running', "
        f"key: {context}.dedupe.key, first_execution_id: held ? held[1] : null, "
        "message: decision.message }; "
        "})() }}"
    )
    busy = nodekit.Kind(
        RESPOND,
        1.1,
        {"respondWith": "json", "responseBody": busy_body, "options": {"responseCode": 409}},
    )
    routes = [("answer",), ("poll",), ("skipped",)]  # the last also takes any other state
    group.rows(
        [
            Row("lock-replay-read", "Lock Replay Read", redis(read, True), (8, 3)),
            Row("lock-replay-verdict", "Lock Replay Verdict", set_raw(verdict), (9, 3)),
            Row("lock-replay-route", "Lock Replay Route", switch(routes, 2), (10, 3)),
            Row("lock-replay-respond", "Lock Replay Respond", replay, (11, 3)),
            Row("lock-replay-poll", "Lock Replay Poll", wait(str(REPLAY_POLL_SECONDS)), (10, 4)),
            Row("lock-replay-skipped", "Lock Replay Skipped", answer_skipped, (11, 4)),
            Row("lock-replay-busy", "Lock Replay Busy", busy, (4, 1)),
        ]
    )
    refused = group.name("Lock Refused")
    group.nodes[:] = [n for n in group.nodes if n["name"] != refused]
    give_up = group.name("Lock Count Give-Up")
    group.connections[give_up]["main"][0] = []
    group.link(
        [
            ("Lock Skipped", 0, "Lock Replay Read"),
            ("Lock Replay Read", 0, "Lock Replay Verdict"),
            ("Lock Replay Verdict", 0, "Lock Replay Route"),
            ("Lock Replay Route", 0, "Lock Replay Respond"),
            ("Lock Replay Route", 1, "Lock Replay Poll"),
            ("Lock Replay Poll", 0, "Lock Replay Read"),
            ("Lock Replay Route", 2, "Lock Replay Skipped"),
            ("Lock Count Give-Up", 0, "Lock Replay Busy"),
        ]
    )


def _store_expression(record: str, max_bytes: int) -> str:
    """Dedupe Store Answer's: the SET of the answer (`$json.response`, the response output
    branch's item) under the guard's scope, for the window; `record` is the JS of the guard's
    held record. Its size is the body's in UTF-8 bytes."""
    return (
        "={{ (() => { "
        "const response = $json.response || {}; "
        "const body = response.body; "
        "const text = body === undefined || body === null ? '' : "
        "typeof body === 'string' ? body : JSON.stringify(body); "
        "const headers = response.headers || {}; "
        "const type = headers['content-type'] ?? (typeof body === 'string' ? "
        "'text/plain; charset=utf-8' : 'application/json; charset=utf-8'); "
        f"const held = {record}; "
        "const bytes = encodeURIComponent(text).replace(/%[0-9A-F]{2}/g, '.').length; "
        f"const cap = {max_bytes}; "
        "const value = bytes > cap "
        "? { too_large: true, bytes, cap, execution_id: held.execution_id } "
        ": { status: response.statusCode ?? 200, content_type: type, body: text, "
        "execution_id: held.execution_id }; "
        f"return {{ key: {_answer_key('held.scope')}, value: JSON.stringify(value), "
        "ttl: held.dedupe.window_seconds }; "
        "})() }}"
    )


def _responders(workflow: Workflow) -> list[Node]:
    """The Respond to Webhook nodes that answer a first run: the user's and Lock Respond."""
    return [
        n
        for n in graph.nodes(workflow)
        if n.get("type") == RESPOND and role_of(n) in (None, "", "lock-respond")
    ]


def store_answers(workflow: Workflow, key: str, record: str, max_bytes: int) -> None:
    """Lead every responder's response output branch to Dedupe Store Answer → Dedupe Store
    (in place). What each had of the branch before is noted on Dedupe Store Answer, so that
    `restore` gives it back."""
    responders = _responders(workflow)
    if not responders:
        raise _refuse(
            "no Respond to Webhook node answers the webhook",
            "add one at the end of the body, or " + _HINT,
        )
    before: dict[str, Any] = {}
    for node in responders:
        parameters = node.setdefault("parameters", {})
        version = node.get("typeVersion", 1)
        before[str(node["name"])] = [version, parameters.get(RESPONSE_OUTPUT)]
        # Versions 1.1 to 1.4 answer alike (1.2 only forbids an expression in Respond With,
        # which `check` refuses; 1.3 always has the branch, and 1.4 has it when enabled).
        if float(version) < RESPONSE_OUTPUT_VERSION and version != 1.3:
            node["typeVersion"] = RESPONSE_OUTPUT_VERSION
        if version != 1.3:
            parameters[RESPONSE_OUTPUT] = True
    right = max(int(n["position"][0]) for n in responders) + 220
    low = max(int(n["position"][1]) for n in responders) + 200
    spot = placement.free_spot(workflow, [right, low])
    store = set_raw(_store_expression(record, max_bytes)).node(key, STORE_ROLE, STORE_NAME, spot)
    store["notes"] += BEFORE_MARK + json.dumps(before, sort_keys=True)
    setter = redis(SET_STRING_EACH, True).node(key, SET_ROLE, SET_NAME, [spot[0] + 220, spot[1]])
    workflow["nodes"] += [store, setter]
    box = placement.extent([store, setter])
    workflow["nodes"].append(placement.note(key, FRAME_ROLE, FRAME_NAME, FRAME_TEXT, box))
    connections = workflow.setdefault("connections", {})
    for node in responders:
        nodekit.connect(connections, str(node["name"]), 1, STORE_NAME)
    nodekit.connect(connections, STORE_NAME, 0, SET_NAME)


def restore(workflow: Workflow) -> None:
    """Turn the response output branches store_answers enabled off again (in place; unwrap
    takes the nodes themselves off with the rest of n8nlock's nodes)."""
    for node in graph.nodes(workflow):
        notes = str(node.get("notes", ""))
        if role_of(node) != STORE_ROLE or BEFORE_MARK not in notes:
            continue
        before = json.loads(notes.split(BEFORE_MARK, 1)[1])
        for other in graph.nodes(workflow):
            if other.get("name") not in before or role_of(other):
                continue
            version, output = before[other["name"]]
            other["typeVersion"] = version
            if output is None:
                other["parameters"].pop(RESPONSE_OUTPUT, None)
            else:
                other["parameters"][RESPONSE_OUTPUT] = output
