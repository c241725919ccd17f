"""Two environments on one Redis: a key namespace each (`keyPrefix:` in envs/<env>.yml).

Two workspaces, staging and production as a team would have them, point at the same Redis with
different `keyPrefix`: on one n8n (each with its own copy of one workflow: a key and a webhook
path of its own), and on two n8n instances, whose execution ids repeat. Each pushes its own
primitives and cleanup handler. The same scope is then two locks: each still runs one body at a
time, while the two run side by side; every key of the scope starts with its env's prefix; and
the operator commands of one env see only that env's keys.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from click.testing import CliRunner

from n8n_lockkit.cli import main
from testbed.backend import Backend
from testbed.client import saved_executions
from testbed.endpoints import N8nInstance, RedisEndpoint
from testbed.settings import topology
from tests.e2e.lockbed import API_KEY_VARIABLE, LockBed, init_workspace, run_cli
from tests.e2e.test_lock_engine import engine_workflow, most_at_once


@dataclass
class Env:
    root: Path
    prefix: str
    key: str  # the wrapped workflow's key, also its webhook path
    n8n: N8nInstance

    def cli(self, *args: str) -> Any:
        result = CliRunner().invoke(main, ["--workspace", str(self.root), *args, "-o", "json"])
        assert result.exit_code == 0, f"n8nlock {' '.join(args)}:\n{result.output}"
        return json.loads(result.stdout)


def _workspace(root: Path, n8n: N8nInstance, prefix: str, key: str) -> Env:
    init_workspace(root, n8n, [])
    env_file = root / "envs" / "e2e.yml"
    text = env_file.read_text()
    env_file.write_text(re.sub(r'^keyPrefix: ""', f'keyPrefix: "{prefix}"', text, flags=re.M))
    run_cli(root, "create-lock", "--include-error-handler")
    (root / "workflows" / f"{key}.template.json").write_text(json.dumps(engine_workflow(key)))
    run_cli(root, "add-lock-to-workflow", "--workflow-key", key, "--scope-expression",
            "={{ $json.body.scope }}", "--ttl-seconds", "60", "--lock-on-error")  # fmt: skip
    run_cli(root, "validate", "--env", "e2e")
    run_cli(root, "push", "--env", "e2e", "--activate")
    return Env(root, prefix, key, n8n)


@pytest.fixture(scope="module")
def envs(n8n: N8nInstance, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Env]]:
    run = uuid.uuid4().hex[:6]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(API_KEY_VARIABLE, n8n.api_key)
        yield [
            _workspace(tmp_path_factory.mktemp(name), n8n, f"{name}-{run}:", f"ns_{name}_{run}")
            for name in ("staging", "production")
        ]


def _call(bed: LockBed, env: Env, scope: str, who: int, hold_ms: int) -> int:
    body = {"scope": scope, "who": who, "hold_ms": hold_ms}
    return LockBed(bed.root, env.n8n, bed.redis).webhook(env.key, body).status


def _spans(bed: LockBed, scope: str, callers: range) -> list[tuple[int, int]]:
    events = [json.loads(e) for e in bed.redis.lrange(f"engine-sink-{scope}", 0, -1)]
    starts = {e["who"]: e["t"] for e in events if e["event"] == "start"}
    ends = {e["who"]: e["t"] for e in events if e["event"] == "end"}
    return [(starts[c], ends[c]) for c in callers if c in starts and c in ends]


@pytest.fixture(scope="module")
def second_n8n(
    testbed_backend: Backend,
    redis_endpoint: RedisEndpoint,
    n8n: N8nInstance,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[N8nInstance]:
    """Another n8n of the same version on the same Redis, with a database of its own."""
    if topology() == "queue":
        pytest.skip("the second instance is a regular-mode n8n")
    with ExitStack() as stack:
        yield testbed_backend.n8n(
            stack, n8n.version, redis_endpoint, tmp_path_factory.mktemp("n8n2")
        )


@pytest.fixture(scope="module")
def instances(
    n8n: N8nInstance, second_n8n: N8nInstance, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[Env]]:
    """Staging on the test bed's n8n, production on a second one: one Redis."""
    run = uuid.uuid4().hex[:6]
    with pytest.MonkeyPatch.context() as patch:
        made = []
        for name, instance in (("staging", n8n), ("production", second_n8n)):
            patch.setenv(API_KEY_VARIABLE, instance.api_key)
            root = tmp_path_factory.mktemp(f"{name}2")
            made.append(_workspace(root, instance, f"{name}-{run}:", f"ns2_{name}_{run}"))
        yield made


def _execution_ids(n8n: N8nInstance) -> set[str]:
    """Every execution id the instance has saved, page by page: the test bed's n8n has run
    hundreds of other tests' executions by now, and its first ids (the ones a fresh second
    instance repeats) are no longer among its last 250 (make test, 1.123.81, once
    test_debounce_composed ran before this file)."""
    return {str(e["id"]) for e in saved_executions(n8n, None, with_data=False, page_size=250)}


def test_the_same_scope_in_two_namespaces_is_two_locks_each_still_exclusive(
    lockbed: LockBed, envs: list[Env], unique_name: str
) -> None:
    _two_locks_each_exclusive(lockbed, envs, unique_name)


def test_two_n8n_instances_whose_execution_ids_repeat_keep_their_locks_apart(
    lockbed: LockBed, instances: list[Env], unique_name: str
) -> None:
    _two_locks_each_exclusive(lockbed, instances, unique_name)
    staging, production = instances
    repeated = _execution_ids(staging.n8n) & _execution_ids(production.n8n)
    assert repeated, "the two instances' execution ids never repeated: the test proves less"


def _two_locks_each_exclusive(lockbed: LockBed, envs: list[Env], unique_name: str) -> None:
    staging, production = envs
    callers = {id(staging): range(0, 8), id(production): range(100, 108)}
    with ThreadPoolExecutor(16) as pool:
        futures = [
            pool.submit(_call, lockbed, env, unique_name, who, 300)
            for who_by_env in zip(callers[id(staging)], callers[id(production)], strict=True)
            for env, who in zip((staging, production), who_by_env, strict=True)
        ]
        assert [f.result() for f in futures] == [200] * 16
    staged = _spans(lockbed, unique_name, callers[id(staging)])
    produced = _spans(lockbed, unique_name, callers[id(production)])
    assert (len(staged), len(produced)) == (8, 8)
    assert most_at_once(staged) == 1 and most_at_once(produced) == 1
    assert most_at_once(staged + produced) == 2, "the two envs' bodies never ran side by side"
    # Every key n8nlock wrote for the scope is in one of the two namespaces.
    written = [str(k) for k in lockbed.redis.scan_iter(match=f"*{unique_name}*", count=1000)]
    ours = [k for k in written if not k.startswith("engine-sink-")]
    assert ours, written
    strays = [k for k in ours if not k.startswith((staging.prefix, production.prefix))]
    assert strays == []
    for env in envs:
        assert any(k.startswith(f"{env.prefix}n8n-lock-{unique_name}:") for k in ours)
        assert list(lockbed.redis.scan_iter(match=f"{env.prefix}n8nlock:exec:*", count=1000))


def test_the_operator_commands_of_one_env_see_only_its_keys(
    lockbed: LockBed, envs: list[Env], unique_name: str, redis_url: str
) -> None:
    staging, production = envs
    redis_args = ["--redis-url", redis_url]
    assert _call(lockbed, production, unique_name, 200, 10) == 200  # production ran once
    holding = threading.Thread(target=_call, args=(lockbed, staging, unique_name, 1, 4000))
    holding.start()
    try:
        deadline = time.monotonic() + 30
        while not staging.cli("locks", "--scope", unique_name, *redis_args)["locks"]:
            assert time.monotonic() < deadline, "staging's caller never held the lock"
            time.sleep(0.1)
        assert production.cli("locks", "--scope", unique_name, *redis_args)["locks"] == []
        reaped = production.cli("reap", "--scope", unique_name, "--dry-run", *redis_args)
        assert reaped["locks"] == []
    finally:
        holding.join()
    (staged,) = staging.cli("stats", "--scope", unique_name, "--hours", "2", *redis_args)["scopes"]
    (produced,) = production.cli("stats", "--scope", unique_name, "--hours", "2",
                                 *redis_args)["scopes"]  # fmt: skip
    assert (staged["arrived"], produced["arrived"]) == (1, 1)
    assert redis.Redis.from_url(redis_url).exists(f"{staging.prefix}n8n-lock-{unique_name}:ticket")
