"""`n8nlock add-debounce`: the debounce chain goes in front of the body, a lastNode webhook
answers through a generated Respond to Webhook node, a re-run changes only what is given, and
unwrap gives the file back byte for byte."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import Result

from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.wrapping.debounce_wrap import DebounceConfig, read_debounce
from n8n_lockkit.rewrite.wrapping.nodes import role_of
from tests.cli.test_add_lock import CORPUS, workflow
from tests.conftest import Invoke, assert_golden, explain

CHAT = "={{ $json.body.chatId }}"
GOLDEN = Path(__file__).parent.parent / "fixtures" / "golden" / "debounce"


@pytest.fixture
def chat(workspace: Path) -> Path:
    for name in ("order_update", "two_triggers", "schedule_sync"):
        shutil.copy(CORPUS / f"{name}.template.json", workspace / "workflows")
    return workspace


def path(root: Path, key: str = "order_update") -> Path:
    return root / "workflows" / f"{key}.template.json"


def debounce(invoke: Invoke, root: Path, *flags: str, key: str = "order_update") -> Result:
    return invoke(
        "add-debounce", "--workflow-key", key, "--key-expression", CHAT,
        "--quiet-seconds", "5", *flags, cwd=root,
    )  # fmt: skip


def test_add_debounce_wraps_the_body_and_validate_accepts_it(
    chat: Path, invoke: Invoke, update_goldens: bool
) -> None:
    result = debounce(invoke, chat)
    assert result.exit_code == 0, explain(result)
    wrapped = workflow(chat, "order_update")
    assert read_debounce(wrapped) == DebounceConfig(CHAT, 5, 60, 100)
    webhook = next(n for n in graph.nodes(wrapped) if n["name"] == "Webhook")
    assert webhook["parameters"]["responseMode"] == "responseNode"
    roles = {role_of(n) for n in graph.nodes(wrapped)}
    assert {"debounce-context", "debounce-response", "debounce-body-items"} <= roles
    assert_golden(GOLDEN / "order_update.json", path(chat).read_text(), update_goldens)
    checked = invoke("validate", cwd=chat)
    assert checked.exit_code == 0, explain(checked)


def test_dry_run_writes_nothing_and_json_shows_the_settings(chat: Path, invoke: Invoke) -> None:
    before = path(chat).read_text()
    result = debounce(invoke, chat, "--dry-run", "-o", "json")
    assert result.exit_code == 0, explain(result)
    assert path(chat).read_text() == before
    document = json.loads(result.stdout)
    assert document["settings"]["debounce"] == {
        "key_expression": CHAT,
        "quiet_seconds": 5,
        "max_wait_seconds": 60,
        "max_items": 100,
    }


def test_a_rerun_changes_nothing_and_other_flags_update_in_place(
    chat: Path, invoke: Invoke
) -> None:
    assert debounce(invoke, chat).exit_code == 0
    first = path(chat).read_text()
    again = debounce(invoke, chat)
    assert again.exit_code == 0, explain(again)
    assert path(chat).read_text() == first
    changed = invoke(
        "add-debounce", "--workflow-key", "order_update", "--max-items", "10", cwd=chat
    )
    assert changed.exit_code == 0, explain(changed)
    assert read_debounce(workflow(chat, "order_update")) == DebounceConfig(CHAT, 5, 60, 10)
    assert "max_items" in changed.output
    back = invoke(
        "add-debounce", "--workflow-key", "order_update", "--max-items", "default", cwd=chat
    )
    assert back.exit_code == 0, explain(back)
    assert path(chat).read_text() == first


@pytest.mark.parametrize("key", ["order_update", "schedule_sync"])
def test_unwrap_gives_back_the_file_byte_for_byte(chat: Path, invoke: Invoke, key: str) -> None:
    original = path(chat, key).read_text()
    assert debounce(invoke, chat, key=key).exit_code == 0
    assert path(chat, key).read_text() != original
    result = invoke("unwrap", "--workflow-key", key, cwd=chat)
    assert result.exit_code == 0, explain(result)
    assert path(chat, key).read_text() == original


def test_unwrap_only_debounce_on_a_workflow_without_one_says_so(chat: Path, invoke: Invoke) -> None:
    result = invoke("unwrap", "--workflow-key", "order_update", "--only", "debounce", cwd=chat)
    assert result.exit_code == 0, explain(result)
    assert "has no debounce" in result.stdout + result.stderr


def test_a_new_debounce_needs_a_key_and_a_quiet_time(chat: Path, invoke: Invoke) -> None:
    result = invoke("add-debounce", "--workflow-key", "order_update", cwd=chat)
    assert result.exit_code == 3, explain(result)
    assert "Error: --key-expression is needed" in result.stderr
    assert "Hint: " in result.stderr
    result = invoke(
        "add-debounce", "--workflow-key", "order_update", "--key-expression", CHAT, cwd=chat
    )
    assert result.exit_code == 3, explain(result)
    assert "Error: --quiet-seconds is needed" in result.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--max-wait-seconds", "2"), "shorter than --quiet-seconds"),
        (("--max-items", "0"), "--max-items 0 is not between 1 and 1000"),
        (("--quiet-seconds", "0"), "--quiet-seconds 0 is below 1"),
    ],
)
def test_bad_numbers_are_refused_with_a_hint(
    chat: Path, invoke: Invoke, flags: tuple[str, ...], message: str
) -> None:
    result = debounce(invoke, chat, *flags)
    assert result.exit_code == 3, explain(result)
    assert message in result.stderr
    assert "Hint: " in result.stderr


def test_an_unbraced_key_expression_is_refused(chat: Path, invoke: Invoke) -> None:
    result = invoke(
        "add-debounce", "--workflow-key", "order_update", "--key-expression",
        "$json.body.chatId", "--quiet-seconds", "5", cwd=chat,
    )  # fmt: skip
    assert result.exit_code == 3, explain(result)
    assert "Hint: " in result.stderr


def test_a_workflow_with_two_entries_is_refused(chat: Path, invoke: Invoke) -> None:
    result = debounce(invoke, chat, key="two_triggers")
    assert result.exit_code == 3, explain(result)
    assert "exactly one trigger output" in result.stderr


def test_upgrade_keeps_a_debounce_as_it_is(chat: Path, invoke: Invoke) -> None:
    assert debounce(invoke, chat).exit_code == 0
    before = path(chat).read_text()
    result = invoke("upgrade", cwd=chat)
    assert result.exit_code == 0, explain(result)
    assert path(chat).read_text() == before


def test_a_workflow_without_settings_gets_v1_and_unwrap_takes_it_off(
    chat: Path, invoke: Invoke
) -> None:
    original = json.loads(path(chat).read_text())
    del original["settings"]
    text = json.dumps(original, indent=2) + "\n"
    path(chat).write_text(text)
    assert debounce(invoke, chat).exit_code == 0
    assert workflow(chat, "order_update")["settings"] == {"executionOrder": "v1"}
    result = invoke("unwrap", "--workflow-key", "order_update", cwd=chat)
    assert result.exit_code == 0, explain(result)
    assert json.loads(path(chat).read_text()) == original


def test_a_debounced_workflow_validates_clean_even_strict_and_as_json(
    chat: Path, invoke: Invoke
) -> None:
    assert debounce(invoke, chat).exit_code == 0
    strict = invoke("validate", "--strict", cwd=chat)
    assert strict.exit_code == 0, explain(strict)
    assert "0 problem(s): all good" in strict.stdout + strict.stderr
    report = json.loads(invoke("validate", "-o", "json", cwd=chat).stdout)
    assert "workflows/order_update.template.json" in report["files"], report
    assert report["counts"] == {"error": 0, "warning": 0} and report["findings"] == [], report


def test_upgrade_leaves_a_debounced_workflow_alone_and_renders_an_edited_node_anew(
    chat: Path, invoke: Invoke
) -> None:
    assert debounce(invoke, chat, "--max-items", "10").exit_code == 0
    fresh = path(chat).read_text()
    first = invoke("upgrade", cwd=chat)
    assert first.exit_code == 0, explain(first)
    assert "order_update: wrapped, format 4 -> identical" in first.stdout + first.stderr
    assert path(chat).read_text() == fresh
    edited = json.loads(fresh)  # an older render of one node: its sleep read another way
    sleep = next(n for n in edited["nodes"] if n["name"] == "Debounce Sleep")
    sleep["parameters"]["amount"] = "={{ $json.sleep * 1 }}"
    path(chat).write_text(json.dumps(edited, indent=2))
    second = invoke("upgrade", cwd=chat)
    assert second.exit_code == 0, explain(second)
    assert path(chat).read_text() == fresh
    assert read_debounce(workflow(chat, "order_update")) == DebounceConfig(CHAT, 5, 60, 10)
    checked = invoke("validate", "--strict", cwd=chat)
    assert checked.exit_code == 0, explain(checked)
