"""`n8nlock forget`: an operator lets one key of a duplicate guard run again before its window
ends, against a real Redis (the marks written as the guard's release writes them)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import redis
from click.testing import Result

from n8n_lockkit.ops import forget
from n8n_lockkit.ops.redis_access import open_redis, target_for
from n8n_lockkit.ops.store import LockStore
from n8n_lockkit.primitives import keys
from n8n_lockkit.workspace.envconfig import load_env
from n8n_lockkit.workspace.layout import Workspace
from tests.cli.test_ops_commands import one_error, ws
from tests.conftest import Invoke, explain
from tests.ops_locks import hold
from tests.redis_fixtures import redis_client, redis_url

__all__ = ["redis_client", "redis_url", "ws"]

CORPUS = Path(__file__).parent.parent / "corpus"
SCOPE = keys.dedupe_scope("order_update", "evt_1")
MARK = {"execution_id": "512", "workflow_id": "wf1", "done_at": "2026-11-26T06:00:00.000Z"}


@pytest.fixture
def guarded(ws: Path, invoke: Invoke) -> Path:
    """The workspace with order_update guarded on `={{ $json.body.orderId }}`."""
    assert invoke("create-lock", "--include-error-handler", cwd=ws).exit_code == 0
    shutil.copy(CORPUS / "order_update.template.json", ws / "workflows")
    result = invoke(
        "add-dedupe", "--workflow-key", "order_update", "--key-expression",
        "={{ $json.body.orderId }}", "--window-seconds", "600", cwd=ws,
    )  # fmt: skip
    assert result.exit_code == 0, explain(result)
    return ws


def mark(client: redis.Redis, value: dict[str, str] = MARK, ttl: int = 600) -> None:
    client.set(keys.SCHEMA.done_key(SCOPE), json.dumps(value), ex=ttl)


def forget_key(invoke: Invoke, root: Path, *flags: str) -> Result:
    return invoke("forget", "--workflow-key", "order_update", "--key", "evt_1", *flags, cwd=root)


def test_forget_deletes_the_mark_of_a_success_so_the_key_runs_again(
    guarded: Path, invoke: Invoke, redis_client: redis.Redis
) -> None:
    mark(redis_client)
    result = forget_key(invoke, guarded)
    assert result.exit_code == 0, explain(result)
    assert "order_update key 'evt_1': succeeded in execution 512 at 2026-11-26T06:00:00.000Z" in (
        result.output
    )
    assert "forgot it: the next execution with this key runs its body" in result.output
    assert redis_client.get(keys.SCHEMA.done_key(SCOPE)) is None
    again = forget_key(invoke, guarded)
    assert again.exit_code == 0, explain(again)
    assert "no success is marked" in again.output


def test_dry_run_shows_the_mark_and_keeps_it(
    guarded: Path, invoke: Invoke, redis_client: redis.Redis
) -> None:
    mark(redis_client)
    result = forget_key(invoke, guarded, "--dry-run")
    assert result.exit_code == 0, explain(result)
    assert "dry run, nothing changed" in result.output
    assert json.loads(redis_client.get(keys.SCHEMA.done_key(SCOPE)) or "null") == MARK


def test_json_names_the_mark_its_remaining_window_and_the_outcome(
    guarded: Path, invoke: Invoke, redis_client: redis.Redis
) -> None:
    mark(redis_client, ttl=300)
    result = forget_key(invoke, guarded, "-o", "json")
    assert result.exit_code == 0, explain(result)
    answer = json.loads(result.stdout)
    done = answer.pop("done")
    assert 295 <= done.pop("expires_in_seconds") <= 300
    assert done == MARK
    assert answer == {
        "workflow_key": "order_update", "key": "evt_1", "scope": SCOPE, "running": [],
        "dry_run": False, "outcome": "forgotten",
    }  # fmt: skip


def test_a_key_that_runs_now_is_named_and_left_alone(
    guarded: Path, invoke: Invoke, redis_client: redis.Redis
) -> None:
    hold(redis_client, SCOPE, execution_id="77")
    result = forget_key(invoke, guarded)
    assert result.exit_code == 0, explain(result)
    assert "execution 77 runs this key now" in result.output
    assert f"n8nlock release {SCOPE} --force" in result.output
    assert redis_client.get(keys.SCHEMA.ticket_key(SCOPE)) == "1"


def test_a_workflow_without_a_guard_is_an_error_that_says_how_to_add_one(
    guarded: Path, invoke: Invoke, redis_client: redis.Redis
) -> None:
    assert invoke("unwrap", "--workflow-key", "order_update", cwd=guarded).exit_code == 0
    mark(redis_client)
    result = forget_key(invoke, guarded)
    hint = one_error(result, 3, "workflow 'order_update' has no duplicate guard")
    assert "n8nlock add-dedupe --workflow-key order_update" in hint
    assert redis_client.get(keys.SCHEMA.done_key(SCOPE)) is not None


def test_a_mark_written_again_after_it_was_shown_is_kept(
    guarded: Path, redis_client: redis.Redis
) -> None:
    """The key succeeded once more between `inspect` and `forget`: that newer success stays."""
    mark(redis_client)
    env = load_env(Workspace(guarded), "dev")
    with open_redis(target_for(env, None)) as client:
        store = LockStore(client)
        shown = forget.inspect(store, "order_update", "evt_1")
        mark(redis_client, {**MARK, "execution_id": "600"})
        with pytest.raises(forget.MarkChanged, match="succeeded again after it was shown"):
            forget.forget(store, shown)
        assert (
            json.loads(redis_client.get(keys.SCHEMA.done_key(SCOPE)) or "{}")["execution_id"]
            == "600"
        )
        redis_client.delete(keys.SCHEMA.done_key(SCOPE))
        assert forget.forget(store, forget.inspect(store, "order_update", "evt_1")) == "none"


def test_forget_in_an_env_with_a_key_prefix_deletes_only_that_namespaces_mark(
    guarded: Path, invoke: Invoke, redis_client: redis.Redis
) -> None:
    # Staging and production on one Redis: the same workflow and key, a mark in each namespace.
    env = guarded / "envs" / "dev.yml"
    env.write_text(env.read_text().replace('keyPrefix: ""', 'keyPrefix: "staging:"'))
    staging = keys.KeySchema("staging:").done_key(SCOPE)
    production = keys.SCHEMA.done_key(SCOPE)
    redis_client.set(staging, json.dumps({**MARK, "execution_id": "7"}), ex=600)
    redis_client.set(production, json.dumps(MARK), ex=600)
    shown = forget_key(invoke, guarded, "--dry-run", "-o", "json")
    assert shown.exit_code == 0, explain(shown)
    assert json.loads(shown.stdout)["done"]["execution_id"] == "7"
    result = forget_key(invoke, guarded)
    assert result.exit_code == 0, explain(result)
    assert redis_client.get(staging) is None
    assert json.loads(redis_client.get(production) or "null") == MARK
