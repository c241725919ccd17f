"""One rule for running a wrapping command again: an option left out keeps what the workflow
has, `default` puts it back to its default, --no-FLAG turns a flag off; each run prints what
it changed (old → new) and, with -o json, the settings the workflow has now."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import Result

from n8n_lockkit.rewrite.wrapping.unwrap import read_configs, read_guard
from n8n_lockkit.rewrite.wrapping.wrap import rate_limits
from tests.cli.test_add_lock import CORPUS, add_lock, lock_config, locked, workflow
from tests.conftest import Invoke, explain

__all__ = ["locked"]  # the fixture: a workspace with every primitive and two corpus workflows

KEY = "order_update"


@pytest.fixture
def renewing(locked: Path, invoke: Invoke) -> Path:
    """The workspace with lock_renew too (for --renew-before)."""
    result = invoke("create-lock", "--include-renew", cwd=locked)
    assert result.exit_code == 0, explain(result)
    return locked


def lock_line(setting: str, before: str, after: str) -> str:
    return f"    update  {KEY}: lock {setting} {before} → {after}"


def test_a_rerun_without_on_busy_keeps_skip_and_says_what_it_changed(
    locked: Path, invoke: Invoke
) -> None:
    assert add_lock(invoke, locked, KEY, "orders", "--on-busy", "skip").exit_code == 0
    result = add_lock(invoke, locked, KEY, "orders", "--ttl-seconds", "120")
    assert result.exit_code == 0, explain(result)
    assert lock_config(locked, KEY).on_busy == "skip"
    assert lock_line("ttl_seconds", "3600", "120") in result.stderr.splitlines()
    back = add_lock(invoke, locked, KEY, "orders", "--on-busy", "default")
    assert back.exit_code == 0, explain(back)
    assert lock_config(locked, KEY).on_busy == "wait"
    assert lock_line("on_busy", "skip", "wait") in back.stderr.splitlines()


def test_every_lock_setting_is_kept_when_left_out_and_a_rerun_needs_no_scope(
    renewing: Path, invoke: Invoke
) -> None:
    locked = renewing
    flags = "--ttl-seconds 120 --max-wait-seconds 30 --on-busy buffer-one --lock-on-error"
    flags += " --max-concurrent 2"
    assert add_lock(invoke, locked, KEY, "orders", *flags.split()).exit_code == 0
    renew = add_lock(invoke, locked, KEY, "orders", "--renew-before", "Write Balance")
    assert renew.exit_code == 0, explain(renew)
    before = (locked / "workflows" / f"{KEY}.template.json").read_text()
    again = invoke("add-lock-to-workflow", "--workflow-key", KEY, cwd=locked)
    assert again.exit_code == 0, explain(again)
    assert (locked / "workflows" / f"{KEY}.template.json").read_text() == before
    assert "nothing to do" in again.stderr


@pytest.mark.parametrize(
    ("on", "off", "setting"),
    [
        ("--fail-fast", "--no-fail-fast", "on_busy"),
        ("--lock-on-error", "--no-lock-on-error", "lock_on_error"),
        ("--via-subworkflow", "--no-via-subworkflow", "via_subworkflow"),
        ("--renew-before=Write Balance", "--no-renew-before", "renew_before"),
    ],
)
def test_every_flag_is_kept_when_left_out_and_its_no_form_turns_it_off(
    renewing: Path, invoke: Invoke, on: str, off: str, setting: str
) -> None:
    def value() -> object:
        return getattr(lock_config(renewing, KEY), setting)

    assert add_lock(invoke, renewing, KEY, "orders").exit_code == 0
    default = value()
    assert add_lock(invoke, renewing, KEY, "orders", on).exit_code == 0
    turned_on = value()
    assert turned_on != default
    assert add_lock(invoke, renewing, KEY, "orders").exit_code == 0
    assert value() == turned_on
    result = add_lock(invoke, renewing, KEY, "orders", off)
    assert result.exit_code == 0, explain(result)
    assert value() == default
    assert f"{KEY}: lock {setting} " in result.stderr


def test_no_fail_fast_leaves_another_policy_alone(locked: Path, invoke: Invoke) -> None:
    assert add_lock(invoke, locked, KEY, "orders", "--on-busy", "skip").exit_code == 0
    result = add_lock(invoke, locked, KEY, "orders", "--no-fail-fast")
    assert result.exit_code == 0 and "nothing to do" in result.stderr, explain(result)
    assert lock_config(locked, KEY).on_busy == "skip"


def test_default_puts_values_back_the_ttl_to_the_workflows_default(
    locked: Path, invoke: Invoke
) -> None:
    flags = ("--ttl-seconds", "120", "--max-wait-seconds", "30", "--max-concurrent", "3")
    assert add_lock(invoke, locked, KEY, "orders", *flags).exit_code == 0
    result = add_lock(invoke, locked, KEY, "orders", "--ttl-seconds", "default",
                      "--max-wait-seconds", "default", "--max-concurrent", "default")  # fmt: skip
    assert result.exit_code == 0, explain(result)
    lock = lock_config(locked, KEY)
    assert (lock.ttl_seconds, lock.max_wait_seconds, lock.max_concurrent) == (3600, 86400, 1)
    assert "lock TTL 3600 s, from the default" in result.stderr


def test_a_changed_scope_is_named_with_what_happens_to_a_running_holder_and_leaves_lockscopes(
    locked: Path, invoke: Invoke
) -> None:
    assert add_lock(invoke, locked, KEY, "orders", "--lock-on-error").exit_code == 0
    result = add_lock(invoke, locked, KEY, "invoices")
    assert result.exit_code == 0, explain(result)
    assert lock_line("scope", "orders", "invoices") in result.stderr.splitlines()
    assert "    update  envs/dev.yml: lockScopes [orders] → [invoices]" in result.stderr
    assert (
        "Warning: the lock's scope changes from 'orders' to 'invoices': an execution that holds "
        "'orders' keeps it until it ends, and a caller of the new scope does not wait for it; "
        "'orders' leaves lockScopes, no workflow locks it" in result.stderr
    )
    assert (locked / "envs" / "dev.yml").read_text().endswith("\n  - invoices\n")


def test_an_old_scope_another_workflow_still_locks_stays_in_lockscopes(
    locked: Path, invoke: Invoke
) -> None:
    for key in (KEY, "code_heavy"):
        assert add_lock(invoke, locked, key, "orders").exit_code == 0
    result = add_lock(invoke, locked, KEY, "invoices")
    assert result.exit_code == 0, explain(result)
    assert "leaves lockScopes" not in result.stderr
    assert (locked / "envs" / "dev.yml").read_text().endswith("\n  - orders\n  - invoices\n")


def test_json_gives_the_settings_the_workflow_has_now_and_what_changed(
    locked: Path, invoke: Invoke
) -> None:
    assert add_lock(invoke, locked, KEY, "orders", "--on-busy", "skip").exit_code == 0
    result = add_lock(invoke, locked, KEY, "orders", "--max-concurrent", "2", "-o", "json")
    assert result.exit_code == 0, explain(result)
    document = json.loads(result.stdout)
    assert document["settings"] == {
        "workflow": KEY,
        "lock": {
            "scope": "orders", "ttl_seconds": 3600, "max_wait_seconds": 86400,
            "on_busy": "skip", "max_concurrent": 2, "lock_on_error": False,
            "renew_before": [], "via_subworkflow": False, "park": False,
        },
        "dedupe": None,
        "rate_limits": [],
    }  # fmt: skip
    assert document["changed"] == [
        {"subject": f"{KEY}: lock", "setting": "max_concurrent", "before": 1, "after": 2}
    ]


def dedupe(invoke: Invoke, root: Path, *flags: str) -> Result:
    return invoke("add-dedupe", "--workflow-key", KEY, *flags, cwd=root)


def test_add_dedupe_keeps_what_is_left_out_and_a_new_key_is_named(
    locked: Path, invoke: Invoke
) -> None:
    first = dedupe(invoke, locked, "--key-expression", "={{ $json.body.id }}",
                   "--window-seconds", "600", "--on-duplicate", "error")  # fmt: skip
    assert first.exit_code == 0, explain(first)
    result = dedupe(invoke, locked, "--window-seconds", "60")
    assert result.exit_code == 0, explain(result)
    guard = read_guard(workflow(locked, KEY))
    assert guard is not None
    assert (guard.dedupe_key, guard.on_busy, guard.dedupe_window_seconds) == (
        "={{ $json.body.id }}", "error", 60,
    )  # fmt: skip
    assert f"    update  {KEY}: dedupe window_seconds 600 → 60" in result.stderr
    renamed = dedupe(invoke, locked, "--key-expression", "={{ $json.body.eventId }}")
    assert renamed.exit_code == 0, explain(renamed)
    assert "Warning: the duplicate guard's key changes from '={{ $json.body.id }}' to" in (
        renamed.stderr
    )


def rate(invoke: Invoke, root: Path, *flags: str) -> Result:
    return invoke("add-rate-limit", "--workflow-key", "code_heavy", *flags, cwd=root)


def test_add_rate_limit_keeps_what_is_left_out_and_needs_no_scope_for_the_only_limit(
    locked: Path, invoke: Invoke
) -> None:
    flags = ("--scope-expression", "api", "--limit", "5", "--window-seconds", "60",
             "--on-denied", "wait", "--max-wait-seconds", "90",
             "--cost-expression", "2")  # fmt: skip
    assert rate(invoke, locked, *flags).exit_code == 0
    result = rate(invoke, locked, "--limit", "7")
    assert result.exit_code == 0, explain(result)
    [limit] = rate_limits(read_configs(workflow(locked, "code_heavy"))[1])
    assert (limit.scope, limit.limit, limit.on_denied, limit.max_wait_seconds, limit.cost) == (
        "api", 7, "wait", 90, "2",
    )  # fmt: skip
    assert "    update  code_heavy: rate limit 'api' limit 5 → 7" in result.stderr
    back = rate(invoke, locked, "--on-denied", "default", "--cost-expression", "default")
    assert back.exit_code == 0, explain(back)
    [limit] = rate_limits(read_configs(workflow(locked, "code_heavy"))[1])
    assert (limit.on_denied, limit.cost) == ("passthrough", "1")


def test_add_rate_limit_asks_which_limit_when_there_are_several(
    locked: Path, invoke: Invoke
) -> None:
    for scope in ("api", "global"):
        added = rate(invoke, locked, "--scope-expression", scope, "--limit", "5",
                     "--window-seconds", "60")  # fmt: skip
        assert added.exit_code == 0, explain(added)
    result = rate(invoke, locked, "--limit", "7")
    assert result.exit_code == 3, explain(result)
    assert result.stderr.splitlines() == [
        "Error: workflow 'code_heavy' has 2 rate limits; say which one to change",
        "Hint: pass --scope-expression with one of: 'api', 'global'",
    ]


@pytest.mark.parametrize(
    ("command", "flags", "error"),
    [
        ("add-lock-to-workflow", (),
         "--scope-expression is needed: workflow 'fresh' has no lock yet"),
        ("add-dedupe", ("--window-seconds", "60"),
         "--key-expression is needed: workflow 'fresh' has no duplicate guard yet"),
        ("add-rate-limit", ("--limit", "5", "--window-seconds", "60"),
         "--scope-expression is needed: workflow 'fresh' has no rate limit yet"),
        ("add-rate-limit", ("--scope-expression", "api", "--window-seconds", "60"),
         "--limit is needed: a new rate limit has no default for it"),
    ],
)  # fmt: skip
def test_what_a_new_lock_guard_or_limit_needs_is_asked_for_in_our_words(
    locked: Path, invoke: Invoke, command: str, flags: tuple[str, ...], error: str
) -> None:
    shutil.copy(CORPUS / "order_update.template.json", locked / "workflows" / "fresh.template.json")
    result = invoke(command, "--workflow-key", "fresh", *flags, cwd=locked)
    assert result.exit_code == 3, explain(result)
    lines = result.stderr.splitlines()
    assert lines[0] == f"Error: {error}" and lines[1].startswith("Hint: e.g. --"), explain(result)


def test_unwrap_says_what_it_took_off(locked: Path, invoke: Invoke) -> None:
    assert add_lock(invoke, locked, KEY, "orders").exit_code == 0
    result = invoke("unwrap", "--workflow-key", KEY, "-o", "json", cwd=locked)
    assert result.exit_code == 0, explain(result)
    document = json.loads(result.stdout)
    assert document["settings"]["lock"] is None
    [removed] = document["changed"]
    assert (removed["subject"], removed["after"]) == (f"{KEY}: lock", None)
    assert removed["before"]["scope"] == "orders"
