"""Issue 34: a debounce composes with a duplicate guard, rate limits and a lock. Per trigger,
whatever order the commands came in: guard → debounce → (in the runner, after Debounce Body
Items) rate limit → lock → body; re-runs change nothing, unwrap gives every file back byte for
byte, and a policy that would drop a whole burst is refused with exit 3."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import Result

from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.wrapping.compose import read_layers
from n8n_lockkit.rewrite.wrapping.debounce_wrap import DebounceConfig
from tests.cli.test_add_lock import CORPUS, workflow
from tests.conftest import Invoke, explain

KEY = "order_update"
CHAT = "={{ $json.body.chatId }}"
COMMANDS: dict[str, tuple[str, ...]] = {
    "debounce": ("add-debounce", "--key-expression", CHAT, "--quiet-seconds", "5"),
    "dedupe": ("add-dedupe", "--key-expression", "={{ $json.body.eventId }}",
               "--window-seconds", "600"),
    "rate": ("add-rate-limit", "--scope-expression", "chat-api", "--limit", "5",
             "--window-seconds", "10", "--on-denied", "wait"),
    "lock": ("add-lock-to-workflow", "--scope-expression", "={{ 'chat-' + $json.body.chatId }}",
             "--lock-on-error"),
}  # fmt: skip
ORDERS = [
    ("debounce", "dedupe", "rate", "lock"),
    ("lock", "rate", "dedupe", "debounce"),
    ("dedupe", "debounce", "lock", "rate"),
    ("rate", "lock", "debounce", "dedupe"),
]


@pytest.fixture
def bed(workspace: Path, invoke: Invoke) -> Path:
    """A workspace with the cleanup handler (a guard needs it) and a webhook workflow."""
    result = invoke("create-lock", "--include-error-handler", cwd=workspace)
    assert result.exit_code == 0, explain(result)
    for name in (KEY, "schedule_sync"):
        shutil.copy(CORPUS / f"{name}.template.json", workspace / "workflows")
    return workspace


def path(root: Path, key: str = KEY) -> Path:
    return root / "workflows" / f"{key}.template.json"


def run(invoke: Invoke, root: Path, step: str, *flags: str, key: str = KEY) -> Result:
    command, *options = COMMANDS[step]
    return invoke(command, "--workflow-key", key, *options, *flags, cwd=root)


def apply(invoke: Invoke, root: Path, steps: Sequence[str], key: str = KEY) -> str:
    for step in steps:
        result = run(invoke, root, step, key=key)
        assert result.exit_code == 0, f"{step} after {steps}: {explain(result)}"
    return path(root, key).read_text()


def targets(wrapped: dict[str, object], source: str) -> list[str]:
    return [str(x["node"]) for x in graph.outputs(wrapped, source)[0]]


def test_every_order_of_the_four_commands_writes_the_same_file(
    bed: Path, invoke: Invoke, tmp_path: Path
) -> None:
    texts = set()
    for index, order in enumerate(ORDERS):
        root = tmp_path / f"order{index}"
        shutil.copytree(bed, root)
        texts.add(apply(invoke, root, order))
    assert len(texts) == 1, "the composed file depends on the order of the commands"


def test_the_composed_shape_is_guard_debounce_rate_lock_body(bed: Path, invoke: Invoke) -> None:
    apply(invoke, bed, ORDERS[1])
    wrapped = workflow(bed, KEY)
    assert targets(wrapped, "Webhook") == ["Dedupe Context", "Dedupe Restore"]
    assert targets(wrapped, "Dedupe Restore") == ["Debounce Context"]
    assert set(targets(wrapped, "Debounce Body Items")) == {
        "Rate Limit Context", "Rate Limit Restore", "Debounce Next",
    }  # fmt: skip
    assert set(targets(wrapped, "Rate Limit Restore")) == {"Lock Context", "Lock Restore"}
    assert targets(wrapped, "Lock Restore") == ["Mark Start", "Lock Join"]
    # the guard's key is released where each execution ends: a buffered event's after its
    # answer, the runner's after the body and the wait for a next burst
    ends = [
        (source, output)
        for source in ("Debounce Route", "Debounce Took?", "Debounce Again?")
        for output, links in enumerate(graph.outputs(wrapped, source))
        if any(x["node"] == "Dedupe Release Verdict" for x in links)
    ]
    assert ends == [("Debounce Route", 2), ("Debounce Took?", 1), ("Debounce Again?", 1)], ends
    layers = read_layers(wrapped)
    assert layers.debounce == DebounceConfig(CHAT, 5, 60, 100)
    assert layers.lock is not None and layers.lock.on_busy == "wait"
    assert layers.guard is not None and layers.guard.dedupe_window_seconds == 600


@pytest.mark.parametrize("order", [ORDERS[0], ORDERS[1]], ids=["debounce-first", "debounce-last"])
def test_running_any_command_again_changes_nothing(
    bed: Path, invoke: Invoke, order: tuple[str, ...]
) -> None:
    composed = apply(invoke, bed, order)
    for step in order:
        result = run(invoke, bed, step)
        assert result.exit_code == 0, explain(result)
        assert path(bed).read_text() == composed, f"re-running {step} changed the file"


def test_unwrap_gives_back_the_original_file_byte_for_byte(bed: Path, invoke: Invoke) -> None:
    original = path(bed).read_text()
    apply(invoke, bed, ORDERS[2])
    result = invoke("unwrap", "--workflow-key", KEY, cwd=bed)
    assert result.exit_code == 0, explain(result)
    assert path(bed).read_text() == original


@pytest.mark.parametrize("part", ["debounce", "dedupe", "rate", "lock"])
def test_unwrap_only_one_part_gives_the_file_of_the_other_three(
    bed: Path, invoke: Invoke, tmp_path: Path, part: str
) -> None:
    rest = [step for step in ORDERS[0] if step != part]
    expected = apply(invoke, shutil.copytree(bed, tmp_path / "rest"), rest)
    apply(invoke, bed, ORDERS[0])
    only = {"rate": "rate-limit"}.get(part, part)
    result = invoke("unwrap", "--workflow-key", KEY, "--only", only, cwd=bed)
    assert result.exit_code == 0, explain(result)
    assert path(bed).read_text() == expected, f"unwrap --only {only} left another file"


@pytest.mark.parametrize("first", ["lock", "rate", "dedupe"])
def test_adding_the_debounce_and_taking_it_off_again_restores_the_file(
    bed: Path, invoke: Invoke, first: str
) -> None:
    before = apply(invoke, bed, [first])
    apply(invoke, bed, ["debounce"])
    result = invoke("unwrap", "--workflow-key", KEY, "--only", "debounce", cwd=bed)
    assert result.exit_code == 0, explain(result)
    assert path(bed).read_text() == before


def test_a_schedule_triggered_workflow_composes_and_unwraps_too(bed: Path, invoke: Invoke) -> None:
    original = path(bed, "schedule_sync").read_text()
    composed = apply(invoke, bed, ORDERS[3], key="schedule_sync")
    assert composed != original
    result = invoke("unwrap", "--workflow-key", "schedule_sync", cwd=bed)
    assert result.exit_code == 0, explain(result)
    assert path(bed, "schedule_sync").read_text() == original


@pytest.mark.parametrize(
    ("first", "then", "message", "hint"),
    [
        (("debounce",), ("lock", "--on-busy", "skip"), "a lock with --on-busy skip",
         "--on-busy wait"),
        (("debounce",), ("lock", "--fail-fast"), "a lock with --on-busy error", "--on-busy wait"),
        (("debounce",), ("lock", "--on-busy", "buffer-one"), "a lock with --on-busy buffer-one",
         "--on-busy wait"),
        (("debounce",), ("rate", "--on-denied", "stop"), "--on-denied stop", "--on-denied wait"),
        (("debounce",), ("rate", "--on-denied", "error"), "--on-denied error",
         "--on-denied wait"),
        (("debounce",), ("rate", "--on-denied", "passthrough"), "--on-denied passthrough",
         "--on-denied wait"),
        (("debounce",), ("dedupe", "--on-duplicate", "replay"), "--on-duplicate replay",
         "--on-duplicate skip"),
        (("debounce",), ("lock", "--via-subworkflow"), "--via-subworkflow",
         "--no-via-subworkflow"),
    ],
)  # fmt: skip
def test_a_policy_that_would_drop_a_burst_is_refused_with_a_hint(
    bed: Path,
    invoke: Invoke,
    first: tuple[str, ...],
    then: tuple[str, ...],
    message: str,
    hint: str,
) -> None:
    setup = run(invoke, bed, *first)
    assert setup.exit_code == 0, explain(setup)
    before = path(bed).read_text()
    result = run(invoke, bed, *then)
    assert result.exit_code == 3, explain(result)
    assert "Error: " in result.stderr and message in result.stderr, explain(result)
    assert "Hint: " in result.stderr and hint in result.stderr, explain(result)
    assert path(bed).read_text() == before


@pytest.mark.parametrize(
    ("step", "flags", "message"),
    [
        ("lock", ("--on-busy", "skip"), "a lock with --on-busy skip"),
        ("rate", ("--on-denied", "passthrough"), "--on-denied passthrough"),
        ("dedupe", ("--on-duplicate", "replay"), "--on-duplicate replay"),
    ],
)
def test_add_debounce_refuses_a_workflow_whose_lock_or_guard_would_drop_a_burst(
    bed: Path, invoke: Invoke, step: str, flags: tuple[str, ...], message: str
) -> None:
    first = run(invoke, bed, step, *flags)
    assert first.exit_code == 0, explain(first)
    before = path(bed).read_text()
    result = run(invoke, bed, "debounce")
    assert result.exit_code == 3, explain(result)
    assert message in result.stderr and "Hint: " in result.stderr, explain(result)
    assert path(bed).read_text() == before


def test_dry_run_writes_nothing_and_json_shows_every_layer(bed: Path, invoke: Invoke) -> None:
    apply(invoke, bed, ["debounce", "dedupe"])
    before = path(bed).read_text()
    result = run(invoke, bed, "lock", "--dry-run", "-o", "json")
    assert result.exit_code == 0, explain(result)
    assert path(bed).read_text() == before
    document = json.loads(result.stdout)
    settings = document["settings"]
    assert settings["debounce"]["quiet_seconds"] == 5, settings
    assert settings["lock"]["scope"] == "={{ 'chat-' + $json.body.chatId }}", settings
    assert settings["dedupe"] is not None, settings
    assert any("runner's own event" in m for m in document["warnings"]), document


def test_a_new_lock_behind_a_debounce_says_what_its_scope_reads(bed: Path, invoke: Invoke) -> None:
    apply(invoke, bed, ["debounce"])
    result = run(invoke, bed, "lock")
    assert result.exit_code == 0, explain(result)
    output = result.stdout + result.stderr
    assert "once per burst" in output and "$('Webhook') there is the runner's own event" in output


def test_validate_strict_accepts_it_and_upgrade_renders_it_identically(
    bed: Path, invoke: Invoke
) -> None:
    composed = apply(invoke, bed, ORDERS[0])
    strict = invoke("validate", "--strict", cwd=bed)
    assert strict.exit_code == 0, explain(strict)
    assert "0 problem(s): all good" in strict.stdout + strict.stderr
    result = invoke("upgrade", cwd=bed)
    assert result.exit_code == 0, explain(result)
    assert "order_update: wrapped, format 4 -> identical" in result.stdout + result.stderr
    assert path(bed).read_text() == composed


def test_a_lock_that_parks_its_waiters_composes_and_unwraps(bed: Path, invoke: Invoke) -> None:
    original = path(bed).read_text()
    apply(invoke, bed, ["debounce"])
    debounced = path(bed).read_text()
    result = run(invoke, bed, "lock", "--park")
    assert result.exit_code == 0, explain(result)
    wrapped = workflow(bed, KEY)
    roles = {str(n.get("notes", "")).split(" ")[0] for n in graph.nodes(wrapped)}
    assert "n8nlock:lock-park" in roles and "n8nlock:debounce-response" in roles, roles
    strict = invoke("validate", "--strict", cwd=bed)
    assert strict.exit_code == 0, explain(strict)
    result = invoke("unwrap", "--workflow-key", KEY, "--only", "lock", cwd=bed)
    assert result.exit_code == 0, explain(result)
    assert path(bed).read_text() == debounced
    result = invoke("unwrap", "--workflow-key", KEY, cwd=bed)
    assert result.exit_code == 0, explain(result)
    assert path(bed).read_text() == original
