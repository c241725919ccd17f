"""`add-dedupe` in a real n8n with a real Redis: the body runs once per key.

The body records its start and end in Redis (`engine-sink-<key>`), as in test_lock_engine; a
call with `fail: true` fails inside the body (a Stop and Error node).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from testbed.settings import topology
from tests.e2e.lockbed import Call, LockBed, held_lanes, run_cli, stat, wait_until
from tests.e2e.stalls import contend_with_stalls, n8n_main_pid
from tests.e2e.test_lock_engine import engine_workflow, spans
from tests.e2e.test_lock_stalls import report
from tests.e2e.test_overlap_policies import HOLD_MS, SKIP_ANSWER_SECONDS

CALLS = 10
WINDOW = 4  # seconds a success turns its key away


def _failing(key: str) -> dict[str, Any]:
    """engine_workflow with a Stop and Error after Mark Start when the body says `fail`."""
    workflow = engine_workflow(key)
    fail = {
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{key}:Fail?")),
        "name": "Fail?",
        "type": "n8n-nodes-base.if",
        "typeVersion": 2.2,
        "position": [330, 150],
        "parameters": {
            "conditions": {
                "options": {"caseSensitive": True, "leftValue": "", "typeValidation": "loose"},
                "conditions": [
                    {
                        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{key}:fail-test")),
                        "leftValue": "={{ $('Webhook').first().json.body.fail === true }}",
                        "rightValue": True,
                        "operator": {"type": "boolean", "operation": "true", "singleValue": True},
                    }
                ],
                "combinator": "and",
            },
            "options": {},
        },
    }
    stop = {
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{key}:Fail On Purpose")),
        "name": "Fail On Purpose",
        "type": "n8n-nodes-base.stopAndError",
        "typeVersion": 1,
        "position": [440, 300],
        "parameters": {"errorType": "errorMessage", "errorMessage": "e2e: failing on purpose"},
    }
    workflow["nodes"] += [fail, stop]
    links = workflow["connections"]
    links["Mark Start"] = {"main": [[{"node": "Fail?", "type": "main", "index": 0}]]}
    links["Fail?"] = {
        "main": [
            [{"node": "Fail On Purpose", "type": "main", "index": 0}],
            [{"node": "Hold", "type": "main", "index": 0}],
        ]
    }
    return workflow


def install(
    bed: LockBed,
    name: str,
    *flags: str,
    retrying: bool = False,
    window: int = WINDOW,
    make: Callable[[str], dict[str, Any]] = _failing,
) -> str:
    """The guarded workflow `make(key)` (the failing body by default), pushed and active."""
    key = f"{name}_{uuid.uuid4().hex[:6]}"
    body = make(key)
    if retrying:  # as in test_lock_stalls: n8n 2.x fails an expression a stop interrupts
        for node in body["nodes"]:
            if node["type"] != "n8n-nodes-base.webhook":
                node.update(retryOnFail=True, maxTries=3, waitBetweenTries=0)
    path = bed.root / "workflows" / f"{key}.template.json"
    path.write_text(json.dumps(body, indent=2))
    run_cli(
        bed.root,
        "add-dedupe",
        "--workflow-key",
        key,
        "--key-expression",
        "={{ $json.body.scope }}",
        "--window-seconds",
        str(window),
        "--ttl-seconds",
        "60",
        *flags,
    )
    run_cli(bed.root, "validate", "--env", "e2e")
    run_cli(bed.root, "push", "--env", "e2e", "--activate", key)
    return key


def call(bed: LockBed, workflow: str, key: str, who: int, **body: Any) -> Call:
    return bed.webhook(workflow, {"scope": key, "who": who, **body})


def skipped(calls: list[Call]) -> list[Call]:
    return [c for c in calls if isinstance(c.body, dict) and c.body.get("skipped") is True]


@pytest.fixture(scope="module")
def guarded(lockbed: LockBed) -> str:
    return install(lockbed, "dedupe")


@pytest.fixture
def key(unique_name: str) -> str:
    return f"event-{unique_name}"


def test_of_ten_simultaneous_calls_with_one_key_one_runs_and_nine_answer_duplicate(
    lockbed: LockBed, guarded: str, key: str
) -> None:
    # The first executions of a workflow just activated are slower (n8n loads its nodes).
    for i in range(3):
        call(lockbed, guarded, f"{key}-warm-{i}", i, hold_ms=10)
    with ThreadPoolExecutor(CALLS) as pool:
        calls = list(
            pool.map(lambda i: call(lockbed, guarded, key, i, hold_ms=HOLD_MS), range(CALLS))
        )
    assert [c.status for c in calls] == [200] * CALLS, [c.body for c in calls]
    assert len(spans(lockbed, key)) == 1
    answers = skipped(calls)
    assert len(answers) == CALLS - 1, [c.body for c in calls]
    for answer in answers:
        assert answer.body["reason"] == "duplicate" and answer.body["key"] == key, answer.body
        # null when it decided before the first execution entered (no record names it yet)
        first = answer.body["first_execution_id"]
        assert first is None or str(first).isdigit(), answer.body
    slowest = max(c.seconds for c in answers)
    assert slowest < SKIP_ANSWER_SECONDS, f"a duplicate waited {slowest:.2f} s for its answer"
    assert held_lanes(lockbed.redis, f"dedupe-{guarded}-{key}") == []
    assert stat(lockbed, "duplicate", f"dedupe-{guarded}-{key}") == CALLS - 1


def test_a_repeat_inside_the_window_does_not_run_another_key_does_and_after_it_the_key_runs(
    lockbed: LockBed, guarded: str, key: str
) -> None:
    first = call(lockbed, guarded, key, 0)
    assert first.status == 200 and not skipped([first]), first.body
    repeat = call(lockbed, guarded, key, 1)
    assert skipped([repeat]) and repeat.body["reason"] == "duplicate", repeat.body
    assert repeat.body["first_execution_id"] is not None, repeat.body
    other = call(lockbed, guarded, f"{key}-other", 2)
    assert not skipped([other]), other.body
    done = time.monotonic()
    wait_until(lambda: not skipped([call(lockbed, guarded, key, 3)]), WINDOW + 10, "a rerun")
    assert time.monotonic() - done >= WINDOW - 1.5, "the key ran again inside its window"
    assert sorted(spans(lockbed, key)) == [0, 3]


def test_an_operator_forgets_a_used_key_and_its_next_call_runs_inside_the_window(
    lockbed: LockBed, guarded: str, key: str
) -> None:
    first = call(lockbed, guarded, key, 0)
    assert not skipped([first]), first.body
    assert skipped([call(lockbed, guarded, key, 1)])
    shown = json.loads(run_cli(lockbed.root, "forget", "--workflow-key", guarded, "--key", key,
                               "--env", "e2e", "-o", "json").stdout)  # fmt: skip
    assert shown["outcome"] == "forgotten" and shown["done"]["execution_id"], shown
    again = call(lockbed, guarded, key, 2)
    assert not skipped([again]), again.body
    assert sorted(spans(lockbed, key)) == [0, 2]


def test_a_failed_first_run_does_not_use_up_its_key(
    lockbed: LockBed, guarded: str, key: str
) -> None:
    failed = call(lockbed, guarded, key, 0, fail=True)
    assert failed.status >= 400 or "failing on purpose" in json.dumps(failed.body), failed
    start = time.monotonic()
    wait_until(lambda: not skipped([call(lockbed, guarded, key, 1)]), 20, "a retry runs")
    assert time.monotonic() - start < 10, "the failed run's key was freed only by its TTL"
    assert 1 in spans(lockbed, key)


def test_on_duplicate_error_fails_the_duplicate_naming_the_key(lockbed: LockBed, key: str) -> None:
    workflow = install(lockbed, "dedupe_error", "--on-duplicate", "error")
    assert call(lockbed, workflow, key, 0).status == 200
    duplicate = call(lockbed, workflow, key, 1)
    assert duplicate.status >= 400 or "Duplicate" in json.dumps(duplicate.body), duplicate
    assert f"Duplicate execution of key '{key}'" in _last_error(lockbed, workflow)


@pytest.mark.skipif(topology() != "single", reason="stops the one n8n process")
def test_stalls_of_n8n_during_a_burst_of_duplicates_let_none_through(
    lockbed: LockBed, key: str
) -> None:
    """n8n stops twice for 6 s (SIGSTOP) while 20 duplicates arrive: the body runs once and
    every caller gets its answer (the stall-safety tests' harness, tests/e2e/stalls.py)."""
    # A window longer than the run: callers stalled past a short one would rightly run again.
    workflow = install(lockbed, "dedupe_stall", retrying=True, window=300)
    run = contend_with_stalls(
        lockbed, workflow, key, callers=20, hold_ms=300, schedule=[6, 6],
        pids=[n8n_main_pid(lockbed.n8n)],
    )  # fmt: skip
    assert len(run.stops) == 2 and not run.stop_errors, report(run)
    assert run.ok == 20, report(run)
    assert len(run.bodies) == 1, report(run)
    assert held_lanes(lockbed.redis, f"dedupe-{workflow}-{key}") == []


def _last_error(bed: LockBed, workflow: str) -> str:
    """The error message of the workflow's last failed execution, from n8n's API."""
    import requests

    answer = requests.get(
        f"{bed.n8n.base_url}/api/v1/executions",
        params={"workflowId": bed.workflow_id(workflow), "status": "error", "includeData": "true"},
        headers={"X-N8N-API-KEY": bed.n8n.api_key},
        timeout=30,
    ).json()
    return json.dumps(answer["data"][0]["data"]["resultData"].get("error", {}))
