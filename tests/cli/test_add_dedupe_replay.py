"""`n8nlock add-dedupe --on-duplicate replay`: a duplicate gets the first run's answer. The
guard's duplicates wait in line (60 s) and then read the stored answer; every Respond to Webhook
node (or Lock Respond, for a "last node" webhook) leads its response output branch to Dedupe
Store Answer; what has no answer to replay is refused; unwrap gives the file back byte for
byte."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from n8n_lockkit.rewrite.wrapping.unwrap import read_guard
from tests.cli.test_add_dedupe import CORPUS, add_dedupe, text
from tests.cli.test_add_lock import locked, workflow
from tests.conftest import Invoke, explain

__all__ = ["locked"]  # the fixture: a workspace with every primitive and two corpus workflows


@pytest.fixture
def corpus(locked: Path) -> Path:
    for name in ("webhook_respond_node", "schedule_sync", "webhook_on_received"):
        shutil.copy(CORPUS / f"{name}.template.json", locked / "workflows")
    return locked


def replay(invoke: Invoke, root: Path, key: str, *flags: str) -> Result:
    return add_dedupe(invoke, root, key, "--on-duplicate", "replay", *flags)


def links(wrapped: dict[str, Any], node: str, output: int = 0) -> list[str]:
    outputs = wrapped["connections"].get(node, {}).get("main", [])
    return [str(x["node"]) for x in outputs[output]] if output < len(outputs) else []


def node(wrapped: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(n for n in wrapped["nodes"] if n["name"] == name)
    return found


def test_replay_stores_what_the_respond_node_answers_and_answers_duplicates_with_it(
    corpus: Path, invoke: Invoke
) -> None:
    result = replay(invoke, corpus, "webhook_respond_node")
    assert result.exit_code == 0, explain(result)
    wrapped: dict[str, Any] = workflow(corpus, "webhook_respond_node")
    guard = read_guard(wrapped)
    assert guard is not None
    assert (guard.on_busy, guard.max_wait_seconds, guard.max_answer_bytes) == ("replay", 60, 65536)
    respond = node(wrapped, "Respond")
    # Raised from 1.1 to 1.4, the first version with the response output branch.
    assert respond["typeVersion"] == 1.4
    assert respond["parameters"]["enableResponseOutput"] is True
    assert links(wrapped, "Respond", 1) == ["Dedupe Store Answer"]
    assert links(wrapped, "Dedupe Store Answer") == ["Dedupe Store"]
    # A duplicate: turned away by the done mark, it reads the answer and answers with it.
    assert links(wrapped, "Dedupe Skipped") == ["Dedupe Replay Read"]
    assert links(wrapped, "Dedupe Replay Route", 0) == ["Dedupe Replay Respond"]
    assert links(wrapped, "Dedupe Replay Route", 1) == ["Dedupe Replay Poll"]
    assert links(wrapped, "Dedupe Replay Poll") == ["Dedupe Replay Read"]
    # One that waited its max wait answers 409 instead of failing.
    assert links(wrapped, "Dedupe Count Give-Up") == ["Dedupe Replay Busy"]
    assert "Dedupe Refused" not in {n["name"] for n in wrapped["nodes"]}
    assert node(wrapped, "Dedupe Replay Busy")["parameters"]["options"]["responseCode"] == 409


def test_replay_answers_a_last_node_webhook_through_lock_respond(
    locked: Path, invoke: Invoke
) -> None:
    result = replay(invoke, locked, "order_update")
    assert result.exit_code == 0, explain(result)
    wrapped: dict[str, Any] = workflow(locked, "order_update")
    assert node(wrapped, "Webhook")["parameters"]["responseMode"] == "responseNode"
    assert links(wrapped, "Lock Output") == ["Lock Respond"]
    assert node(wrapped, "Lock Respond")["parameters"]["enableResponseOutput"] is True
    assert links(wrapped, "Lock Respond", 1) == ["Dedupe Store Answer"]
    # The duplicates' own answers are not followed by Lock Respond.
    assert links(wrapped, "Dedupe Replay Respond") == []


@pytest.mark.parametrize("key", ["order_update", "webhook_respond_node"])
def test_replay_again_changes_nothing_and_unwrap_gives_the_file_back_byte_for_byte(
    corpus: Path, invoke: Invoke, key: str
) -> None:
    original = text(corpus, key)
    assert replay(invoke, corpus, key).exit_code == 0
    wrapped = text(corpus, key)
    again = replay(invoke, corpus, key)
    assert again.exit_code == 0, explain(again)
    assert text(corpus, key) == wrapped
    result = invoke("unwrap", "--workflow-key", key, cwd=corpus)
    assert result.exit_code == 0, explain(result)
    assert text(corpus, key) == original


def test_switching_replay_back_to_skip_gives_the_skip_form_byte_for_byte(
    locked: Path, invoke: Invoke
) -> None:
    assert add_dedupe(invoke, locked, "order_update").exit_code == 0
    skipping = text(locked, "order_update")
    assert replay(invoke, locked, "order_update").exit_code == 0
    assert text(locked, "order_update") != skipping
    result = add_dedupe(invoke, locked, "order_update", "--on-duplicate", "skip")
    assert result.exit_code == 0, explain(result)
    assert text(locked, "order_update") == skipping


def test_the_answer_cap_and_max_wait_are_kept_on_a_rerun_and_shown_in_json(
    locked: Path, invoke: Invoke
) -> None:
    flags = ("--max-answer-bytes", "1000", "--max-wait-seconds", "5")
    assert replay(invoke, locked, "order_update", *flags).exit_code == 0
    result = add_dedupe(invoke, locked, "order_update", "-o", "json")
    assert result.exit_code == 0, explain(result)
    shown = json.dumps(json.loads(result.stdout))
    for setting in (
        '"on_duplicate": "replay"',
        '"max_answer_bytes": 1000',
        '"max_wait_seconds": 5',
    ):
        assert setting in shown, shown
    guard = read_guard(workflow(locked, "order_update"))
    assert guard is not None and (guard.max_answer_bytes, guard.max_wait_seconds) == (1000, 5)
    result = add_dedupe(invoke, locked, "order_update", "--max-wait-seconds", "default")
    assert result.exit_code == 0, explain(result)
    guard = read_guard(workflow(locked, "order_update"))
    assert guard is not None and (guard.max_answer_bytes, guard.max_wait_seconds) == (1000, 60)


@pytest.mark.parametrize(
    ("key", "said"),
    [
        ("schedule_sync", "trigger 'Schedule Trigger' (n8n-nodes-base.scheduleTrigger) has no "
         "caller to answer"),
        ("webhook_on_received", "answers as soon as it receives a call (onReceived)"),
    ],
)  # fmt: skip
def test_replay_is_refused_where_there_is_no_answer_to_replay(
    corpus: Path, invoke: Invoke, key: str, said: str
) -> None:
    before = text(corpus, key)
    result = replay(invoke, corpus, key)
    assert result.exit_code == 3, explain(result)
    assert said in result.stderr, explain(result)
    assert "--on-duplicate skip or error" in result.stderr, explain(result)
    assert text(corpus, key) == before


def test_replay_refuses_a_binary_answer(corpus: Path, invoke: Invoke) -> None:
    path = corpus / "workflows" / "webhook_respond_node.template.json"
    body = json.loads(path.read_text())
    for each in body["nodes"]:
        if each["name"] == "Respond":
            each["parameters"] = {"respondWith": "binary", "options": {}}
    path.write_text(json.dumps(body, indent=2) + "\n")
    result = replay(invoke, corpus, "webhook_respond_node")
    assert result.exit_code == 3, explain(result)
    assert "Respond to Webhook node 'Respond' answers with 'binary'" in result.stderr
    assert "Hint: answer with JSON or text" in result.stderr


@pytest.mark.parametrize(
    ("flag", "said"),
    [
        ("--max-answer-bytes", "--max-answer-bytes caps the answers --on-duplicate replay stores"),
        ("--max-wait-seconds", "--max-wait-seconds is how long a duplicate of --on-duplicate "
         "replay waits"),
    ],
)  # fmt: skip
def test_replays_options_without_replay_are_refused(
    locked: Path, invoke: Invoke, flag: str, said: str
) -> None:
    result = add_dedupe(invoke, locked, "order_update", flag, "10")
    assert result.exit_code == 3, explain(result)
    assert said in result.stderr, explain(result)


def test_dry_run_writes_nothing(locked: Path, invoke: Invoke) -> None:
    before = text(locked, "order_update")
    result = replay(invoke, locked, "order_update", "--dry-run")
    assert result.exit_code == 0, explain(result)
    assert text(locked, "order_update") == before


def test_replay_refuses_a_last_node_webhook_that_answers_binary_data(
    locked: Path, invoke: Invoke
) -> None:
    path = locked / "workflows" / "order_update.template.json"
    body = json.loads(path.read_text())
    for each in body["nodes"]:
        if each["name"] == "Webhook":
            each["parameters"]["responseData"] = "firstEntryBinary"
    path.write_text(json.dumps(body, indent=2) + "\n")
    before = path.read_text()
    result = replay(invoke, locked, "order_update")
    assert result.exit_code == 3, explain(result)
    assert "webhook 'Webhook' answers with binary data" in result.stderr, explain(result)
    assert path.read_text() == before


def test_a_replay_refusal_offers_skip_not_parking(locked: Path, invoke: Invoke) -> None:
    """A "last node" webhook whose response code is an expression cannot be answered by Lock
    Respond; the hint used to say "do not park it", which a user asking for replay never did."""
    path = locked / "workflows" / "order_update.template.json"
    body = json.loads(path.read_text())
    for each in body["nodes"]:
        if each["name"] == "Webhook":
            each["parameters"].setdefault("options", {})["responseCode"] = "={{ 201 }}"
    path.write_text(json.dumps(body, indent=2) + "\n")
    before = path.read_text()
    result = replay(invoke, locked, "order_update")
    assert result.exit_code == 3, explain(result)
    assert "its response code is '={{ 201 }}'" in result.stderr, explain(result)
    assert "--on-duplicate skip" in result.stderr and "park" not in result.stderr, explain(result)
    assert path.read_text() == before
