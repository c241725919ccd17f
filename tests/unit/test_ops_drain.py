"""The drain check an upgrade's push makes: format-1 callers that still wait block it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import redis

from n8n_lockkit.errors import ExitCode
from n8n_lockkit.ops.drain import (
    OldFormatWaiters,
    check_before_push,
    old_format_activity,
    require_drained,
)
from n8n_lockkit.workspace.envconfig import EnvFile, load_env
from n8n_lockkit.workspace.layout import Workspace

FORMAT1 = Path(__file__).parents[1] / "fixtures" / "upgrade" / "format1"


def test_format_1_waiters_are_arrivals_minus_departures(redis_client: redis.Redis) -> None:
    redis_client.set("n8nlock:arrived:orders", 5)
    redis_client.set("n8nlock:left:orders", 3)
    redis_client.set("n8nlock:arrived:sync", 2)
    redis_client.set("n8nlock:left:sync", 2)
    redis_client.set("n8n-lock-orders", 1)
    redis_client.set("n8n-lock-orders:meta", '{"lock_id": "a"}')
    redis_client.set("n8n-lock-api:meta:0", '{"lock_id": "b"}')  # engine v2: not format 1
    redis_client.set("n8n-lock-api:holder:3", '{"lock_id": "c", "format": 3}')  # neither
    activity = old_format_activity(redis_client)
    assert activity.waiting == {"orders": 2}
    assert activity.held == ["orders"]
    assert not activity.drained


def test_push_is_refused_while_format_1_callers_wait(redis_client: redis.Redis) -> None:
    redis_client.set("n8nlock:arrived:orders", 1)
    with pytest.raises(OldFormatWaiters) as refused:
        require_drained(old_format_activity(redis_client))
    assert refused.value.exit_code == ExitCode.DRAIN
    assert int(ExitCode.DRAIN) == 6  # documented in docs/exit-codes.md
    assert "still wait on orders (1)" in refused.value.message
    assert "--no-drain-check" in str(refused.value.hint)


def test_a_held_format_1_lock_alone_does_not_block_the_push(redis_client: redis.Redis) -> None:
    # engine v2 waits for it, and the new lock_release frees it (tests/e2e/test_upgrade_rollout)
    redis_client.set("n8n-lock-orders", 1)
    redis_client.set("n8n-lock-orders:meta", '{"lock_id": "a"}')
    require_drained(old_format_activity(redis_client))


def _format1_workspace(tmp_path: Path) -> tuple[Workspace, EnvFile]:
    root = tmp_path / "ws"
    shutil.copytree(FORMAT1, root)
    (root / "workflows" / "plain.template.json").write_text('{"name": "plain", "nodes": []}')
    workspace = Workspace.at(root)
    return workspace, load_env(workspace, "dev")


def test_a_push_of_locks_checks_the_drain_where_redis_is_known(
    tmp_path: Path, redis_client: redis.Redis, redis_url: str
) -> None:
    workspace, env = _format1_workspace(tmp_path)
    redis_client.set("n8nlock:arrived:orders", 1)
    with pytest.raises(OldFormatWaiters):
        check_before_push(workspace, env, [], redis_url)
    with pytest.raises(OldFormatWaiters):
        check_before_push(workspace, env, ["order_update"], redis_url)
    # Nothing of n8nlock's is sent, or nobody said where Redis is: nothing to check.
    assert check_before_push(workspace, env, ["plain"], redis_url) is None
    assert check_before_push(workspace, env, [], None) is None
    redis_client.set("n8nlock:left:orders", 1)
    activity = check_before_push(workspace, env, [], redis_url)
    assert activity is not None and activity.drained
