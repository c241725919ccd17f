"""add-rate-limit: algorithms, composed limits, cost and waiting, as the files show them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import Result

from n8n_lockkit.rewrite.wrapping.unwrap import read_configs, unwrap
from n8n_lockkit.rewrite.wrapping.wrap import RateLimitConfig, rate_limits
from tests.conftest import Invoke, explain, snapshot

CORPUS = Path(__file__).parent.parent / "corpus"
BEFORE_INLINE = Path(__file__).parent.parent / "fixtures" / "wrap" / "before_inline_rate_limit"
USER_SCOPE = "=api-{{ $json.body.customer }}"


@pytest.fixture
def root(workspace: Path) -> Path:
    shutil.copy(CORPUS / "code_heavy.template.json", workspace / "workflows")
    return workspace


def add(invoke: Invoke, root: Path, scope: str, *flags: str, limit: int = 5) -> Result:
    return invoke(
        "add-rate-limit",
        "--workflow-key",
        "code_heavy",
        "--scope-expression",
        scope,
        "--limit",
        str(limit),
        "--window-seconds",
        "60",
        *flags,
        cwd=root,
    )


def limits(root: Path, key: str = "code_heavy") -> tuple[RateLimitConfig, ...]:
    data = json.loads((root / "workflows" / f"{key}.template.json").read_text())
    return rate_limits(read_configs(data)[1])


def test_a_new_limit_is_a_sliding_window_and_a_rerun_changes_nothing(
    root: Path, invoke: Invoke
) -> None:
    result = add(invoke, root, USER_SCOPE)
    assert result.exit_code == 0, explain(result)
    assert limits(root) == (RateLimitConfig(USER_SCOPE, 5, 60, "passthrough", "sliding"),)
    before = snapshot(root)
    again = add(invoke, root, USER_SCOPE)
    assert again.exit_code == 0, explain(again)
    assert snapshot(root) == before


def test_algorithm_fixed_converts_in_place_and_a_rerun_keeps_it(root: Path, invoke: Invoke) -> None:
    assert add(invoke, root, USER_SCOPE).exit_code == 0
    assert add(invoke, root, USER_SCOPE, "--algorithm", "fixed").exit_code == 0
    assert [r.algorithm for r in limits(root)] == ["fixed"]
    before = snapshot(root)
    assert add(invoke, root, USER_SCOPE).exit_code == 0
    assert snapshot(root) == before
    assert add(invoke, root, USER_SCOPE, "--algorithm", "sliding").exit_code == 0
    assert [r.algorithm for r in limits(root)] == ["sliding"]


def test_a_workflow_wrapped_before_the_sliding_window_stays_fixed_on_a_rerun(
    workspace: Path, invoke: Invoke
) -> None:
    legacy = json.loads((BEFORE_INLINE / "merge_branches.json").read_text())
    lock, rate = read_configs(legacy)
    assert isinstance(rate, RateLimitConfig) and rate.algorithm == "fixed"
    (workspace / "workflows" / "merge_branches.template.json").write_text(json.dumps(legacy))
    result = invoke(
        "add-rate-limit", "--workflow-key", "merge_branches", "--scope-expression", rate.scope,
        "--limit", str(rate.limit), "--window-seconds", str(rate.window_seconds),
        "--on-denied", rate.on_denied, cwd=workspace,
    )  # fmt: skip
    assert result.exit_code == 0, explain(result)
    converted = json.loads((workspace / "workflows" / "merge_branches.template.json").read_text())
    assert read_configs(converted) == (lock, rate)
    assert unwrap(converted) == unwrap(legacy)
    assert "rate_limit_check" not in json.dumps(converted)


def test_a_second_scope_adds_a_limit_and_the_same_scope_updates_it_in_place(
    root: Path, invoke: Invoke
) -> None:
    assert add(invoke, root, USER_SCOPE).exit_code == 0
    assert add(invoke, root, "global", limit=50).exit_code == 0
    assert [(r.scope, r.limit) for r in limits(root)] == [(USER_SCOPE, 5), ("global", 50)]
    assert add(invoke, root, USER_SCOPE, "--on-denied", "wait", limit=7).exit_code == 0
    assert [(r.scope, r.limit, r.on_denied) for r in limits(root)] == [
        (USER_SCOPE, 7, "wait"),
        ("global", 50, "passthrough"),
    ]
    assert invoke("validate", cwd=root).exit_code == 0


def test_composed_limits_are_one_chain_with_the_redis_nodes_of_one(
    root: Path, invoke: Invoke
) -> None:
    assert add(invoke, root, USER_SCOPE).exit_code == 0
    one = json.loads((root / "workflows" / "code_heavy.template.json").read_text())
    assert add(invoke, root, "global", "--algorithm", "fixed", limit=50).exit_code == 0
    two = json.loads((root / "workflows" / "code_heavy.template.json").read_text())

    def redis_nodes(data: dict[str, object]) -> list[str]:
        return sorted(n["name"] for n in data["nodes"] if n["type"] == "n8n-nodes-base.redis")  # type: ignore[attr-defined]

    assert (
        redis_nodes(one)
        == redis_nodes(two)
        == [
            "Rate Limit Claim",
            "Rate Limit Commit",
            "Rate Limit Read",
        ]
    )


def test_wait_and_cost_are_kept_and_unwrap_restores_the_file_exactly(
    root: Path, invoke: Invoke
) -> None:
    original = (root / "workflows" / "code_heavy.template.json").read_text()
    flags = ("--on-denied", "wait", "--max-wait-seconds", "90",
             "--cost-expression", "={{ $input.all().length }}")  # fmt: skip
    assert add(invoke, root, USER_SCOPE, *flags).exit_code == 0
    (config,) = limits(root)
    assert config == RateLimitConfig(
        USER_SCOPE, 5, 60, "wait", "sliding", "={{ $input.all().length }}", 90
    )
    data = json.loads((root / "workflows" / "code_heavy.template.json").read_text())
    assert unwrap(data) == json.loads(original)
    before = snapshot(root)
    assert add(invoke, root, USER_SCOPE, *flags).exit_code == 0
    assert snapshot(root) == before


@pytest.mark.parametrize(
    ("cost", "message"),
    [
        ("6", "--cost-expression 6 is more than --limit 5: such a call could never pass"),
        ("three", "--cost-expression 'three' is neither a whole number >= 1 nor an expression"),
        ("0", "--cost-expression '0' is neither a whole number >= 1 nor an expression"),
    ],
)
def test_a_cost_that_could_never_pass_is_refused_and_nothing_changes(
    root: Path, invoke: Invoke, cost: str, message: str
) -> None:
    before = snapshot(root)
    result = add(invoke, root, USER_SCOPE, "--cost-expression", cost)
    assert result.exit_code == 3, explain(result)
    lines = result.stderr.splitlines()
    assert lines[0] == f"Error: {message}", explain(result)
    assert lines[1].startswith("Hint: "), explain(result)
    assert snapshot(root) == before


def test_the_default_algorithm_is_written_into_the_file(root: Path, invoke: Invoke) -> None:
    # What a later n8nlock reads back must not depend on its default.
    assert add(invoke, root, USER_SCOPE).exit_code == 0
    data = json.loads((root / "workflows" / "code_heavy.template.json").read_text())
    context = next(n for n in data["nodes"] if n["name"] == "Rate Limit Context")
    assert '"algorithm": "sliding"' in context["notes"]


BUCKETS = (
    Path(__file__).parent.parent / "fixtures" / "upgrade" / "rate_buckets_f368956.template.json"
)


def test_a_rate_limit_of_the_bucket_engine_is_flagged_and_upgrade_moves_it_to_slots(
    root: Path, invoke: Invoke
) -> None:
    """rate_buckets_f368956.template.json is code_heavy wrapped by `add-rate-limit ... --on-denied
    wait --max-wait-seconds 90` at f368956, when the sliding window counted in buckets: same
    format stamp, other keys, so a workflow wrapped since would not share its budget."""
    path = root / "workflows" / "code_heavy.template.json"
    path.write_text(BUCKETS.read_text())
    (config,) = limits(root)
    assert (config.algorithm, config.on_denied, config.max_wait_seconds) == ("sliding", "wait", 90)
    flagged = invoke("validate", "-o", "json", cwd=root)
    assert "rate-engine-current" in flagged.output, explain(flagged)
    result = invoke("upgrade", cwd=root)
    assert result.exit_code == 0, explain(result)
    assert limits(root) == (config,)
    upgraded = path.read_text()
    assert "n8nlock:rate-claim" in upgraded and "n8nlock:rate-reread" not in upgraded
    clean = invoke("validate", "-o", "json", cwd=root)
    assert "rate-engine-current" not in clean.output, explain(clean)
    assert json.loads(unwrap_text(upgraded)) == json.loads(unwrap_text(BUCKETS.read_text()))


def unwrap_text(text: str) -> str:
    return json.dumps(unwrap(json.loads(text)), sort_keys=True)
