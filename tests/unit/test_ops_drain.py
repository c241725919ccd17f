"""The drain check a push makes before it replaces, on n8n, a lock whose callers the engine it
brings cannot see: format 1's holders and waiters, format 2's holders and the callers in line
beside them, and every holder and line in a key namespace the push moves away from, block it;
what format 3 sees natively does not."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from n8n_lockkit.errors import ExitCode
from n8n_lockkit.ops.drain import (
    DrainCheckImpossible,
    OldFormatWaiters,
    check_before_push,
    namespace_activity,
    old_format_activity,
    require_drained,
)
from n8n_lockkit.ops.redis_access import RedisUnreachable
from n8n_lockkit.primitives import formats
from n8n_lockkit.remote.push import Replacements
from n8n_lockkit.workspace.envconfig import EnvFile, load_env
from n8n_lockkit.workspace.layout import Workspace
from n8n_lockkit.workspace.plan import apply
from n8n_lockkit.workspace.scaffold import plan_init
from tests.ops_locks import hold, leave
from tests.redis_fixtures import draw


def test_the_bound_of_formats_that_need_a_drain_is_one_constant() -> None:
    assert formats.NATIVE_CALLERS_FORMAT == 3
    assert [formats.needs_drain(n) for n in (None, 1, 2, 3, 4)] == [
        False,
        True,
        True,
        False,
        False,
    ]


def test_format_1_waiters_are_arrivals_minus_departures(redis_client: redis.Redis) -> None:
    redis_client.set("n8nlock:arrived:orders", 5)
    redis_client.set("n8nlock:left:orders", 3)
    redis_client.set("n8nlock:arrived:sync", 2)
    redis_client.set("n8nlock:left:sync", 2)
    redis_client.set("n8n-lock-orders", 1)
    redis_client.set("n8n-lock-orders:meta", '{"lock_id": "a"}')
    activity = old_format_activity(redis_client)
    assert activity.waiting == {"orders": 2}
    assert activity.held == ["orders"]
    assert not activity.drained


def test_push_is_refused_while_format_1_callers_wait_naming_the_holder(
    redis_client: redis.Redis,
) -> None:
    redis_client.set("n8nlock:arrived:orders", 1)
    redis_client.set(
        "n8n-lock-orders:meta",
        '{"lock_id": "a", "workflow_name": "Orders", "workflow_id": "wf1", '
        '"execution_id": "42", "locked_at": "2026-03-01T12:00:00.000Z"}',
    )
    with pytest.raises(OldFormatWaiters) as refused:
        require_drained(old_format_activity(redis_client))
    assert refused.value.exit_code == ExitCode.DRAIN
    assert int(ExitCode.DRAIN) == 6  # documented in docs/exit-codes.md
    assert refused.value.message == (
        "callers the pushed lock cannot see still hold or wait: orders: 1 caller(s) of format 1 "
        "waiting, behind orders held by 'Orders' (workflow wf1, execution 42) since "
        "2026-03-01T12:00:00.000Z, format 1; orders held by 'Orders' (workflow wf1, execution "
        "42) since 2026-03-01T12:00:00.000Z, format 1; pushing now could let one of them in "
        "beside a new holder; nothing was sent"
    )
    assert "--no-drain-check" in str(refused.value.hint)


def test_a_held_format_1_lock_alone_blocks_the_push(redis_client: redis.Redis) -> None:
    # the engine of format 4 decides on format 3's keys alone: it would not wait for it
    redis_client.set("n8n-lock-orders", 1)
    redis_client.set("n8n-lock-orders:meta", '{"lock_id": "a"}')
    with pytest.raises(OldFormatWaiters, match="orders held by 'a workflow', format 1"):
        require_drained(old_format_activity(redis_client))


def test_a_format_2_holder_blocks_the_push_and_is_named(redis_client: redis.Redis) -> None:
    hold(redis_client, "orders", fmt=2, execution_id="42", workflow_name="Orders")
    activity = old_format_activity(redis_client)
    assert [(h.scope, h.format) for h in activity.blocking_holders] == [("orders", 2)]
    with pytest.raises(OldFormatWaiters) as refused:
        require_drained(activity)
    assert "orders held by 'Orders' (workflow wf1, execution 42) since " in refused.value.message
    assert ", format 2;" in refused.value.message


def test_callers_in_line_behind_a_released_format_2_record_block_the_push(
    redis_client: redis.Redis,
) -> None:
    leave(redis_client, "orders", fmt=2, ticket=1)  # format 2 left; nothing holds now
    draw(redis_client, "orders", 3)  # tickets 2 and 3 wait, of format 2 as far as one can tell
    activity = old_format_activity(redis_client)
    assert activity.blocking_holders == []
    assert activity.v2_waiting == {"orders": 2}
    with pytest.raises(OldFormatWaiters) as refused:
        require_drained(activity)
    assert "orders: 2 caller(s) in line beside format 2" in refused.value.message


def test_waiters_behind_a_format_2_holder_are_counted_too(redis_client: redis.Redis) -> None:
    hold(redis_client, "orders", fmt=2, ticket=1)
    draw(redis_client, "orders", 4)
    assert old_format_activity(redis_client).v2_waiting == {"orders": 3}


def test_format_3_holders_and_their_waiters_and_releases_do_not_block(
    redis_client: redis.Redis,
) -> None:
    hold(redis_client, "orders", fmt=3, ticket=2)
    draw(redis_client, "orders", 5)
    leave(redis_client, "sync", fmt=3, ticket=1)
    draw(redis_client, "sync", 2)
    activity = old_format_activity(redis_client)
    assert activity.drained, activity


@pytest.fixture
def env(tmp_path: Path) -> EnvFile:
    apply(plan_init(tmp_path, ["dev"]), tmp_path)
    return load_env(Workspace.at(tmp_path), "dev")


def test_a_push_that_replaces_no_older_lock_checks_nothing(env: EnvFile) -> None:
    assert check_before_push(env, Replacements(), None) is None  # Redis is not even asked


def test_a_needed_check_without_a_redis_address_says_it_cannot_run(env: EnvFile) -> None:
    with pytest.raises(DrainCheckImpossible) as impossible:
        check_before_push(env, Replacements([("lock_acquisition", 1), ("orders", 2)]), None)
    assert impossible.value.message == (
        "push replaces lock_acquisition (format 1); orders (format 2) on n8n; callers of an "
        "older lock format, or of another key namespace, that still hold or wait are invisible "
        "to the lock it brings, so push first checks Redis for them (docs/upgrading.md); "
        "envs/dev.yml does not say where Redis is (no redis: record), so it cannot check; "
        "nothing was sent"
    )
    assert "--redis-url" in str(impossible.value.hint)
    assert "--no-drain-check" in str(impossible.value.hint)


def test_an_unreachable_redis_says_why_the_check_exists_and_how_to_skip_it(
    env: EnvFile, unused_port: int
) -> None:
    with pytest.raises(RedisUnreachable) as unreachable:
        check_before_push(env, Replacements([("orders", 1)]), f"redis://127.0.0.1:{unused_port}/0")
    message, hint = unreachable.value.message, str(unreachable.value.hint)
    assert message.startswith("push replaces orders (format 1) on n8n; callers of an older")
    assert f"cannot reach Redis at redis://127.0.0.1:{unused_port}/0" in message
    assert "--redis-url" in hint and "--no-drain-check" in hint


def test_a_needed_check_refuses_while_old_callers_wait_and_passes_once_drained(
    env: EnvFile, redis_client: redis.Redis, redis_url: str
) -> None:
    redis_client.set("n8nlock:arrived:orders", 1)
    with pytest.raises(OldFormatWaiters):
        check_before_push(env, Replacements([("orders", 1)]), redis_url)
    redis_client.set("n8nlock:left:orders", 1)
    activity = check_before_push(env, Replacements([("orders", 1)]), redis_url)
    assert activity is not None and activity.drained


def test_moving_a_lock_to_another_key_namespace_waits_for_the_old_ones_holders_and_lines(
    env: EnvFile, redis_client: redis.Redis, redis_url: str
) -> None:
    """keyPrefix changed since n8n got the workflow: its running callers hold and wait under
    the old namespace (here none), where the lock pushed now never looks."""
    hold(redis_client, "orders", fmt=3, ticket=1, execution_id="42", workflow_name="Orders")
    draw(redis_client, "orders", 2)
    moving = Replacements(namespaces=[("orders", "")])
    with pytest.raises(OldFormatWaiters) as refused:
        check_before_push(env, moving, redis_url)
    assert "orders held by 'Orders' (workflow wf1, execution 42)" in refused.value.message
    assert "orders: 1 caller(s) in line (in the keys without a namespace)" in refused.value.message
    assert namespace_activity(redis_client, "staging:") == []  # the other namespace is idle


@pytest.fixture
def unused_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
