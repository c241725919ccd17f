"""Expressions typed without ={{ }}: every option that takes an n8n expression refuses them
with the fixed form, and `validate` flags the workflows wrapped with one before."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from n8n_lockkit.primitives.render import dump_workflow
from n8n_lockkit.rewrite.wrapping.scope import UnbracedExpression, refuse_unbraced
from n8n_lockkit.rewrite.wrapping.unwrap import read_configs
from n8n_lockkit.rewrite.wrapping.wrap import LockConfig, RateLimitConfig, rate_limits, wrap
from n8n_lockkit.workspace.envconfig import load_env
from n8n_lockkit.workspace.layout import Workspace
from tests.cli.test_add_lock import CORPUS, add_lock, locked, workflow
from tests.conftest import Invoke, explain, snapshot

__all__ = ["locked"]  # the fixture: a workspace with every primitive and two corpus workflows

ORDER = "$json.body.orderId"
COMMANDS = {
    "add-lock-to-workflow": ("--scope-expression",),
    "add-dedupe": ("--window-seconds", "600", "--key-expression"),
    "add-rate-limit": ("--limit", "5", "--window-seconds", "60", "--scope-expression"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    ("typed", "fixed"),
    [
        (ORDER, f"'={{{{ {ORDER} }}}}'"),
        (f"'order-' + {ORDER}", f"""'={{{{ '"'"'order-'"'"' + {ORDER} }}}}'"""),
        (f"={ORDER}", f"'={{{{ {ORDER} }}}}'"),
    ],
)
def test_an_expression_typed_without_braces_is_refused_with_the_fixed_form(
    locked: Path, invoke: Invoke, command: str, typed: str, fixed: str
) -> None:
    before = snapshot(locked)
    *flags, option = COMMANDS[command]
    result = invoke(command, "--workflow-key", "order_update", *flags, option, typed, cwd=locked)
    assert result.exit_code == 3, explain(result)
    error, hint = result.stderr.splitlines()
    assert error.startswith(f"Error: {option} {typed!r} "), explain(result)
    assert hint.startswith(f"Hint: use {option} {fixed}"), explain(result)
    assert snapshot(locked) == before


def test_a_cost_typed_without_braces_is_refused_with_the_fixed_form(
    locked: Path, invoke: Invoke
) -> None:
    result = invoke(
        "add-rate-limit", "--workflow-key", "order_update", "--scope-expression", "api",
        "--limit", "5", "--window-seconds", "60", "--cost-expression", "$input.all().length",
        cwd=locked,
    )  # fmt: skip
    assert result.exit_code == 3, explain(result)
    assert result.stderr.splitlines() == [
        "Error: --cost-expression '$input.all().length' has no ={{ }}, so n8n uses it as "
        "text: a cost is a number or an expression",
        "Hint: use --cost-expression '={{ $input.all().length }}'",
    ]


def test_a_text_that_really_means_dollar_json_is_written_as_a_string_and_is_static(
    locked: Path, invoke: Invoke
) -> None:
    literal = f'={{{{ "{ORDER}" }}}}'  # what the refusal's hint says to write
    result = add_lock(invoke, locked, "order_update", literal, "--lock-on-error")
    assert result.exit_code == 0, explain(result)
    assert f"- {ORDER}\n" in (locked / "envs" / "dev.yml").read_text()
    assert invoke("validate", "-o", "json", cwd=locked).stdout.count("expression-braced") == 0


def wrapped_with(root: Path, key: str, lock: LockConfig | None, rate: object) -> None:
    """The corpus workflow as an n8nlock before the refusal wrapped it, with what it was given."""
    body = json.loads((CORPUS / "order_update.template.json").read_text())
    path = root / "workflows" / f"{key}.template.json"
    path.write_text(dump_workflow(wrap(body, key, lock, rate)))  # type: ignore[arg-type]


def findings(invoke: Invoke, root: Path) -> list[dict[str, str]]:
    result = invoke("validate", "-o", "json", cwd=root)
    found: list[dict[str, str]] = json.loads(result.stdout)["findings"]
    return [f for f in found if f["rule"] == "expression-braced"]


def repair_command(finding: dict[str, str]) -> list[str]:
    """The command a finding's hint says to run, as the shell would split it."""
    prefix = "re-run the command with it: n8nlock "
    assert finding["hint"].startswith(prefix), finding
    return shlex.split(finding["hint"].removeprefix(prefix))


def test_validate_flags_a_lock_wrapped_with_such_a_scope_and_its_hint_repairs_it(
    locked: Path, invoke: Invoke
) -> None:
    wrapped_with(locked, "orders", LockConfig(ORDER, 300), None)
    env = load_env(Workspace(locked), "dev")  # …which registered the scope as static
    env.add_lock_scope(ORDER)
    (locked / "envs" / "dev.yml").write_text(env.document.dumps())
    [finding] = findings(invoke, locked)
    assert finding["severity"] == "warning"
    assert finding["message"] == (
        f"the lock's scope '{ORDER}' has no ={{{{ }}}}, so n8n uses it as text: every "
        "execution waits for one lock"
    )
    assert finding["hint"] == (
        "re-run the command with it: n8nlock add-lock-to-workflow --workflow-key orders "
        f"--scope-expression '={{{{ {ORDER} }}}}'"
    )
    repair = invoke(*repair_command(finding), cwd=locked)
    assert repair.exit_code == 0, explain(repair)
    assert findings(invoke, locked) == []
    lock, _ = read_configs(workflow(locked, "orders"))
    assert lock is not None and (lock.scope, lock.ttl_seconds) == (f"={{{{ {ORDER} }}}}", 300)
    assert ORDER not in (locked / "envs" / "dev.yml").read_text()
    assert f"lockScopes ['{ORDER}'] → []" in repair.stderr


def test_validate_flags_a_rate_limit_so_scoped_and_the_fixed_scope_replaces_that_limit(
    locked: Path, invoke: Invoke
) -> None:
    broken = RateLimitConfig(f"=api-{ORDER}", 5, 60, "error")
    wrapped_with(locked, "orders", None, (broken, RateLimitConfig("global", 100, 60)))
    [finding] = findings(invoke, locked)
    fixed = f"=api-{{{{ {ORDER} }}}}"
    assert finding["hint"].endswith(f"--scope-expression '{fixed}'")
    repair = invoke(*repair_command(finding), cwd=locked)
    assert repair.exit_code == 0, explain(repair)
    limits = rate_limits(read_configs(workflow(locked, "orders"))[1])
    assert [(r.scope, r.limit, r.on_denied) for r in limits] == [
        (fixed, 5, "error"),
        ("global", 100, "passthrough"),
    ]
    assert findings(invoke, locked) == []


def test_the_commands_page_shows_the_hints_the_tool_gives() -> None:
    page = (Path(__file__).parent.parent.parent / "docs" / "commands.md").read_text()
    section = page.split("### Scopes, keys and costs are n8n expressions", 1)[1].split("###")[0]
    rows = re.findall(r"^\| `(.+?)` \| `(.+?)`", section, re.M)
    assert len(rows) == 5, section
    for typed, hint in rows:
        with pytest.raises(UnbracedExpression) as refused:
            refuse_unbraced("--scope-expression", typed, "")
        assert (refused.value.hint or "").startswith(hint), typed
