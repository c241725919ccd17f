"""The drain check an upgrade's push makes: format-1 callers that still wait block it."""

from __future__ import annotations

import pytest
import redis

from n8n_lockkit.errors import ExitCode
from n8n_lockkit.ops.drain import OldFormatWaiters, old_format_activity, require_drained


def test_format_1_waiters_are_arrivals_minus_departures(redis_client: redis.Redis) -> None:
    redis_client.set("n8nlock:arrived:orders", 5)
    redis_client.set("n8nlock:left:orders", 3)
    redis_client.set("n8nlock:arrived:sync", 2)
    redis_client.set("n8nlock:left:sync", 2)
    redis_client.set("n8n-lock-orders", 1)
    redis_client.set("n8n-lock-orders:meta", '{"lock_id": "a"}')
    redis_client.set("n8n-lock-api:meta:0", '{"lock_id": "b"}')  # engine v2: not format 1
    activity = old_format_activity(redis_client)
    assert activity.waiting == {"orders": 2}
    assert activity.held == ["orders"]
    assert not activity.drained


def test_push_is_refused_while_format_1_callers_wait(redis_client: redis.Redis) -> None:
    redis_client.set("n8nlock:arrived:orders", 1)
    with pytest.raises(OldFormatWaiters) as refused:
        require_drained(old_format_activity(redis_client))
    assert refused.value.exit_code == ExitCode.DRAIN
    assert int(ExitCode.DRAIN) == 6  # documented in the README's exit codes
    assert "still wait on orders (1)" in refused.value.message
    assert "--no-drain-check" in str(refused.value.hint)


def test_a_held_format_1_lock_alone_does_not_block_the_push(redis_client: redis.Redis) -> None:
    # engine v2 waits for it, and the new lock_release frees it (tests/e2e/test_upgrade_rollout)
    redis_client.set("n8n-lock-orders", 1)
    redis_client.set("n8n-lock-orders:meta", '{"lock_id": "a"}')
    require_drained(old_format_activity(redis_client))
