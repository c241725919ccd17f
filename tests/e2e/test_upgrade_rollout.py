"""Upgrading a live instance from format 1 (the lock before engine v2) to this format.

A workspace made by n8nlock before engine v2 (its primitives from tests/fixtures/upgrade/
format1, and a caller wrapped by that n8nlock: format1_caller.template.json) is pushed to a
real n8n. An old-form execution takes a scope and holds it; meanwhile the workspace is
upgraded (`n8nlock upgrade --inline`) and pushed, and new-form executions arrive on the same
scope. The new form decides on its own keys alone, so the push refuses (exit code 6) while an
old-form caller holds or waits in line, naming it, and goes once they are served: no two
executions ever hold the scope at the same moment.
"""

from __future__ import annotations

import itertools
import json
import shutil
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
import requests
from click.testing import CliRunner

from n8n_lockkit.cli import main
from n8n_lockkit.primitives import formats
from n8n_lockkit.workspace.envconfig import load_env
from n8n_lockkit.workspace.layout import Workspace
from testbed.endpoints import N8nInstance
from tests.e2e.lockbed import API_KEY_VARIABLE, init_workspace, run_cli, wait_until

FIXTURES = Path(__file__).parents[1] / "fixtures" / "upgrade"
CALLER = "rollout_caller"
PATH = "rollout-caller"  # the caller's webhook path, as format 1 wrapped it


@dataclass
class Legacy:
    root: Path
    path: str  # the caller's webhook path in this test (one per test: n8n keeps them live)


@pytest.fixture
def legacy(n8n: N8nInstance, tmp_path: Path) -> Iterator[Legacy]:
    """Format-1 primitives and caller, pushed and published under names no other test uses."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(API_KEY_VARIABLE, n8n.api_key)
        root = init_workspace(tmp_path / "ws", n8n, [])
        for key in ("lock_acquisition", "lock_release"):
            name = f"{key}.template.json"
            shutil.copy(FIXTURES / "format1" / "workflows" / name, root / "workflows" / name)
        suffix = uuid.uuid4().hex[:6]
        path = f"{PATH}-{suffix}"
        caller = (FIXTURES / "format1_caller.template.json").read_text()
        (root / "workflows" / f"{CALLER}.template.json").write_text(
            caller.replace(f'"path": "{PATH}"', f'"path": "{path}"')
        )
        env = load_env(Workspace(root), "e2e")
        for key in ("lock_acquisition", "lock_release", CALLER):
            env.register_workflow(key, f"rollout {key} {suffix}")
        env.document.path.write_text(env.document.dumps())
        run_cli(root, "push", "--env", "e2e", "--activate")
        yield Legacy(root, path)


def _call(n8n: N8nInstance, path: str, scope: str, who: str, hold_ms: int) -> tuple[int, Any]:
    response = requests.post(
        f"{n8n.base_url}/webhook/{path}",
        json={"scope": scope, "who": who, "hold_ms": hold_ms},
        timeout=180,
    )
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, response.text


def _intervals(client: redis.Redis, scope: str) -> dict[str, tuple[int, int]]:
    events = [json.loads(e) for e in client.lrange(f"engine-sink-{scope}", 0, -1)]
    starts = {e["who"]: e["t"] for e in events if e["event"] == "start"}
    ends = {e["who"]: e["t"] for e in events if e["event"] == "end"}
    return {who: (starts[who], ends.get(who, -1)) for who in starts}


def test_an_old_form_holder_and_new_form_callers_never_hold_one_scope_together(
    legacy: Legacy, n8n: N8nInstance, redis_url: str
) -> None:
    """The new engine decides on its own keys alone: the push that brings it waits until the
    old holder has left (refused, naming it), and the new form's callers come after it."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    scope = f"rollout-{uuid.uuid4().hex[:8]}"
    with pytest.MonkeyPatch.context() as patch, ThreadPoolExecutor(max_workers=8) as pool:
        patch.setenv(API_KEY_VARIABLE, n8n.api_key)
        old = pool.submit(_call, n8n, legacy.path, scope, "old", 4000)
        wait_until(lambda: "old" in _intervals(client, scope), 30, "the old form holds the scope")
        assert client.get(f"n8n-lock-{scope}") == "1"  # the format-1 counter

        run_cli(legacy.root, "upgrade", "--inline")
        caller = json.loads((legacy.root / "workflows" / f"{CALLER}.template.json").read_text())
        assert formats.workflow_format(caller) == formats.FORMAT
        push = ["--workspace", str(legacy.root), "push", "--env", "e2e"]
        refused = CliRunner().invoke(main, push)
        assert refused.exit_code == 6, refused.output
        assert f"{scope} held by " in refused.output and ", format 1" in refused.output
        assert "nothing was sent" in refused.output
        assert old.result()[0] == 200  # released through the old lock_release, still on n8n
        run_cli(legacy.root, "push", "--env", "e2e")
        new = [pool.submit(_call, n8n, legacy.path, scope, f"new-{i}", 300) for i in range(6)]
        answers = [f.result() for f in new]

    assert [status for status, _ in answers] == [200] * 6, answers
    spans = sorted(_intervals(client, scope).items(), key=lambda item: item[1][0])
    assert spans[0][0] == "old"
    assert len(spans) == 7 and all(end > 0 for _, (_, end) in spans), spans
    for (first, (_, end)), (second, (start, _)) in itertools.pairwise(spans):
        assert end <= start, f"{first} and {second} held {scope} together: {spans}"
    assert client.get(f"n8n-lock-{scope}") is None  # the old form left its keys behind none
    client.close()


def test_push_refuses_while_an_old_form_caller_waits_and_goes_once_it_is_served(
    legacy: Legacy, n8n: N8nInstance, redis_url: str
) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    scope = f"rollout-{uuid.uuid4().hex[:8]}"
    with pytest.MonkeyPatch.context() as patch, ThreadPoolExecutor(max_workers=2) as pool:
        patch.setenv(API_KEY_VARIABLE, n8n.api_key)
        holder = pool.submit(_call, n8n, legacy.path, scope, "old-holder", 4000)
        wait_until(lambda: "old-holder" in _intervals(client, scope), 30, "the old form holds")
        waiter = pool.submit(_call, n8n, legacy.path, scope, "old-waiter", 100)
        wait_until(
            lambda: client.get(f"n8nlock:arrived:{scope}") == "1", 30, "the old waiter is in line"
        )
        run_cli(legacy.root, "upgrade", "--inline")
        refused = CliRunner().invoke(
            main, ["--workspace", str(legacy.root), "push", "--env", "e2e"]
        )
        assert refused.exit_code == 6, refused.output
        assert f"{scope}: 1 caller(s) of format 1 waiting" in refused.output
        assert "nothing was sent" in refused.output
        assert [status for status, _ in (holder.result(), waiter.result())] == [200, 200]
        run_cli(legacy.root, "push", "--env", "e2e")  # the line has drained
    spans = sorted(_intervals(client, scope).values())
    assert spans[0][1] <= spans[1][0], spans
    client.close()


def test_push_refuses_while_a_format_2_caller_holds_naming_it_and_goes_once_it_left(
    n8n: N8nInstance, tmp_path: Path, redis_url: str
) -> None:
    """Format 2 is not stall-safe: the push that replaces a format-2 lock on n8n waits until
    no format-2 caller holds (formats.NATIVE_CALLERS_FORMAT), and names the one that does."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    scope = f"rollout2-{uuid.uuid4().hex[:8]}"
    suffix = uuid.uuid4().hex[:6]
    path, name = f"format2-rollout-{suffix}", f"rollout format 2 {suffix}"
    with pytest.MonkeyPatch.context() as patch, ThreadPoolExecutor(max_workers=1) as pool:
        patch.setenv(API_KEY_VARIABLE, n8n.api_key)
        root = init_workspace(tmp_path / "ws", n8n, [])
        caller = (FIXTURES / "format2_caller.template.json").read_text()
        (root / "workflows" / "caller2.template.json").write_text(
            caller.replace('"path": "format2_caller"', f'"path": "{path}"')
        )
        env = load_env(Workspace(root), "e2e")
        env.register_workflow("caller2", name)
        env.document.path.write_text(env.document.dumps())
        run_cli(root, "push", "--env", "e2e", "--activate")
        holder = pool.submit(_call, n8n, path, scope, "format-2 holder", 5000)
        wait_until(lambda: "format-2 holder" in _intervals(client, scope), 30, "format 2 holds")
        run_cli(root, "upgrade", "--inline")
        refused = CliRunner().invoke(main, ["--workspace", str(root), "push", "--env", "e2e"])
        assert refused.exit_code == 6, refused.output
        assert f"{scope} held by {name!r} (workflow " in refused.output
        assert ", format 2;" in refused.output and "nothing was sent" in refused.output
        assert holder.result()[0] == 200
        run_cli(root, "push", "--env", "e2e")  # nothing of format 2 holds now
    client.close()
