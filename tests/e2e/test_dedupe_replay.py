"""`add-dedupe --on-duplicate replay` in a real n8n with a real Redis: a duplicate gets the
first run's answer (status, content type, body) and the body runs once per key.

The bodies are test_dedupe's (each run records its start and end in Redis,
`engine-sink-<key>`; a call with `fail: true` fails inside the body). One answers with a
Respond to Webhook node (status 201, a JSON body naming the caller that ran), the other with its
last node (200, the same body): a duplicate's answer names the first caller, not itself.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from tests.e2e.lockbed import Call, LockBed, held_lanes, run_cli, wait_until
from tests.e2e.test_dedupe import _failing, _last_error, install
from tests.e2e.test_lock_engine import spans

CALLS = 10
HOLD_MS = 3000  # long enough that every simultaneous caller arrives while the first one runs
WINDOW = 120
RESPOND = "n8n-nodes-base.respondToWebhook"


def _responding(key: str) -> dict[str, Any]:
    """test_dedupe's body answered by a Respond to Webhook node (version 1.1, as older
    workflows have it) with 201 and {who, answered: "by node"}, instead of its last node."""
    workflow = _failing(key)
    for node in workflow["nodes"]:
        if node["type"] == "n8n-nodes-base.webhook":
            node["parameters"]["responseMode"] = "responseNode"
        if node["name"] == "Answer":
            node.update(
                type=RESPOND,
                typeVersion=1.1,
                parameters={
                    "respondWith": "json",
                    "responseBody": "={{ { who: $('Webhook').first().json.body.who, "
                    "answered: 'by node' } }}",
                    "options": {"responseCode": 201},
                },
            )
    return workflow


def _unanswered(key: str) -> dict[str, Any]:
    """_responding's body with its Respond to Webhook node disabled: a run that answers nothing."""
    workflow = _responding(key)
    for node in workflow["nodes"]:
        if node["name"] == "Answer":
            node["disabled"] = True
    return workflow


def _install(bed: LockBed, name: str, by_node: bool, *flags: str) -> str:
    make = _responding if by_node else _failing
    return install(bed, name, "--on-duplicate", "replay", *flags, window=WINDOW, make=make)


def call(bed: LockBed, workflow: str, key: str, who: int, **body: Any) -> Call:
    return bed.webhook(workflow, {"scope": key, "who": who, **body})


@pytest.fixture(scope="module")
def by_node(lockbed: LockBed) -> str:
    return _install(lockbed, "replay_node", True)


@pytest.fixture(scope="module")
def by_last_node(lockbed: LockBed) -> str:
    return _install(lockbed, "replay_last", False)


@pytest.fixture
def key(unique_name: str) -> str:
    return f"event-{unique_name}"


def _warm(bed: LockBed, workflow: str, key: str) -> None:
    # The first executions of a workflow just activated are slower (n8n loads its nodes).
    for i in range(3):
        call(bed, workflow, f"{key}-warm-{i}", 100 + i, hold_ms=10)


def test_ten_simultaneous_duplicates_run_the_body_once_and_all_get_the_first_runs_answer(
    lockbed: LockBed, by_node: str, key: str
) -> None:
    _warm(lockbed, by_node, key)
    with ThreadPoolExecutor(CALLS) as pool:
        calls = list(
            pool.map(lambda i: call(lockbed, by_node, key, i, hold_ms=HOLD_MS), range(CALLS))
        )
    ran = spans(lockbed, key)
    assert len(ran) == 1, f"the body ran for callers {sorted(ran)}"
    (first,) = ran
    assert [c.status for c in calls] == [201] * CALLS, [(c.status, c.body) for c in calls]
    assert [c.body for c in calls] == [{"who": first, "answered": "by node"}] * CALLS, [
        c.body for c in calls
    ]
    assert held_lanes(lockbed.redis, f"dedupe-{by_node}-{key}") == []


def test_a_retry_inside_the_window_gets_the_answer_without_running_and_another_key_runs(
    lockbed: LockBed, by_node: str, key: str
) -> None:
    first = call(lockbed, by_node, key, 0)
    assert (first.status, first.body) == (201, {"who": 0, "answered": "by node"}), first
    url = f"{lockbed.n8n.base_url}/webhook/{by_node}"
    retry = requests.post(url, json={"scope": key, "who": 1}, timeout=180)
    assert retry.status_code == 201, retry.text
    assert retry.json() == {"who": 0, "answered": "by node"}, retry.text
    assert retry.headers["content-type"].startswith("application/json"), retry.headers
    other = call(lockbed, by_node, f"{key}-other", 2)
    assert (other.status, other.body) == (201, {"who": 2, "answered": "by node"}), other
    assert sorted(spans(lockbed, key)) == [0]
    assert sorted(spans(lockbed, f"{key}-other")) == [2]


def test_a_last_node_webhooks_duplicates_get_what_its_last_node_answered(
    lockbed: LockBed, by_last_node: str, key: str
) -> None:
    _warm(lockbed, by_last_node, key)
    with ThreadPoolExecutor(4) as pool:
        calls = list(
            pool.map(lambda i: call(lockbed, by_last_node, key, i, hold_ms=HOLD_MS), range(4))
        )
    ran = spans(lockbed, key)
    assert len(ran) == 1, f"the body ran for callers {sorted(ran)}"
    (first,) = ran
    assert [(c.status, c.body) for c in calls] == [(200, {"who": first})] * 4, calls
    retry = call(lockbed, by_last_node, key, 9)
    assert (retry.status, retry.body) == (200, {"who": first}), retry
    assert len(spans(lockbed, key)) == 1


def test_a_failed_first_run_lets_its_duplicate_run_the_body(
    lockbed: LockBed, by_node: str, key: str
) -> None:
    failed = call(lockbed, by_node, key, 0, fail=True)
    # n8n 2.x answers the failure (500); 1.x answers a failed responseNode call an empty 200.
    assert failed.status >= 400 or (failed.status, failed.body) == (200, ""), failed
    start = time.monotonic()
    retry = call(lockbed, by_node, key, 1)
    # The cleanup handler frees the failed run's key within seconds; a retry sent before that
    # waits in line for it, then runs.
    assert (retry.status, retry.body) == (201, {"who": 1, "answered": "by node"}), retry
    assert time.monotonic() - start < 30, "the failed run's key was freed only by its TTL"
    assert sorted(spans(lockbed, key)) == [1]


def test_a_duplicate_that_waits_past_its_max_wait_gets_409_naming_the_first_execution(
    lockbed: LockBed, key: str
) -> None:
    workflow = _install(lockbed, "replay_busy", True, "--max-wait-seconds", "3")
    _warm(lockbed, workflow, key)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(call, lockbed, workflow, key, 0, hold_ms=15000)
        time.sleep(1.5)  # the first is in its 15 s body by now
        busy = call(lockbed, workflow, key, 1)
        assert busy.status == 409, busy
        assert busy.body["reason"] == "first run still running", busy.body
        assert busy.body["key"] == key and str(busy.body["first_execution_id"]).isdigit(), busy
        assert first.result().status == 201
    assert sorted(spans(lockbed, key)) == [0]


def test_a_duplicate_of_a_run_that_answered_nothing_is_told_no_answer_was_stored(
    lockbed: LockBed, key: str
) -> None:
    workflow = install(lockbed, "replay_none", "--on-duplicate", "replay", make=_unanswered)
    call(lockbed, workflow, key, 0)
    duplicate = call(lockbed, workflow, key, 1)
    assert duplicate.status == 200, f"{duplicate}: {_last_error(lockbed, workflow)}"
    assert duplicate.body["skipped"] is True, duplicate.body
    assert duplicate.body["reason"] == "no answer stored", duplicate.body
    assert sorted(spans(lockbed, key)) == [0]


def test_an_answer_over_the_cap_is_not_stored_and_its_duplicate_is_told_so(
    lockbed: LockBed, key: str
) -> None:
    workflow = _install(lockbed, "replay_cap", True, "--max-answer-bytes", "10")
    first = call(lockbed, workflow, key, 0)
    assert first.status == 201, first
    duplicate = call(lockbed, workflow, key, 1)
    assert duplicate.status == 200, f"{duplicate}: {_last_error(lockbed, workflow)}"
    assert duplicate.body["skipped"] is True, duplicate.body
    assert duplicate.body["reason"] == "answer too large to store", duplicate.body
    assert duplicate.body["max_answer_bytes"] == 10, duplicate.body
    assert sorted(spans(lockbed, key)) == [0]


def test_forget_drops_the_stored_answer_and_the_next_call_runs(
    lockbed: LockBed, by_node: str, key: str
) -> None:
    assert call(lockbed, by_node, key, 0).status == 201
    answer, done = (f"n8nlock:{kind}:dedupe-{by_node}-{key}" for kind in ("answer", "done"))
    # The first run stores its answer and marks its key done just after it answered (n8n 1.x
    # may run the answer's branch before the release).
    wait_until(
        lambda: None not in (lockbed.redis.get(answer), lockbed.redis.get(done)),
        10,
        "the stored answer and the done mark",
    )
    forgot = run_cli(lockbed.root, "forget", "--workflow-key", by_node, "--key", key, "--env",
                     "e2e", "-o", "json")  # fmt: skip
    assert json.loads(forgot.stdout)["outcome"] == "forgotten", forgot.stdout
    assert lockbed.redis.get(answer) is None, forgot.stdout
    again = call(lockbed, by_node, key, 1)
    assert (again.status, again.body) == (201, {"who": 1, "answered": "by node"}), again
    assert sorted(spans(lockbed, key)) == [0, 1]
