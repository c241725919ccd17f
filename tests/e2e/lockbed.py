"""A workspace of primitives and test callers, pushed by n8nlock itself to the test-bed n8n.

The callers (tests/e2e/workflows/) are webhooks, because the Error Trigger ignores manual runs:
- e2e-lock: acquire → record start in a sink list → hold → record end → release; the body
  picks scope, ttl, max_wait, wait, hold_ms, items, release, fail;
- e2e-release: release(scope, lock_id); e2e-rate: rate_limit_check(scope, limit, window).
The sink (`e2e-sink-<scope>`, a Redis list) does not depend on the lock.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
import requests
from click.testing import CliRunner, Result

from n8n_lockkit.cli import main
from n8n_lockkit.workspace.envconfig import load_env
from n8n_lockkit.workspace.layout import Workspace
from testbed.client import OWNER, saved_executions
from testbed.endpoints import N8nInstance
from testbed.process import live_processes
from testbed.queue import unheard_executions

CALLERS = Path(__file__).parent / "workflows"
API_KEY_VARIABLE = "N8NLOCK_E2E_API_KEY"
# The one scope the lock bed registers in lockScopes, so the cleanup handler covers it.
REGISTERED_SCOPE = f"e2e-registered-{uuid.uuid4().hex[:8]}"


def run_cli(root: Path, *args: str) -> Result:
    result = CliRunner().invoke(main, ["--workspace", str(root), *args])
    assert result.exit_code == 0, f"n8nlock {' '.join(args)}:\n{result.output}"
    return result


def build_workspace(root: Path, n8n: N8nInstance, lock_scopes: list[str]) -> Path:
    """init → redis-credential → create-lock → callers → validate → push, all through the CLI."""
    init_workspace(root, n8n, lock_scopes)
    run_cli(
        root,
        "create-lock",
        "--include-error-handler",
        "--include-rate-limit",
        "--include-renew",
    )
    for caller in CALLERS.glob("*.template.json"):
        shutil.copy(caller, root / "workflows" / caller.name)
    run_cli(root, "validate", "--env", "e2e")
    run_cli(root, "push", "--env", "e2e", "--activate")
    return root


def init_workspace(root: Path, n8n: N8nInstance, lock_scopes: list[str]) -> Path:
    """init → redis-credential: a workspace whose one env, e2e, points at the test-bed n8n."""
    CliRunner().invoke(main, ["init", str(root), "--env", "e2e", "--url", n8n.base_url])
    env = root / "envs" / "e2e.yml"
    text = env.read_text().replace("apiKeyEnv: N8N_API_KEY", f"apiKeyEnv: {API_KEY_VARIABLE}")
    scopes = json.dumps(lock_scopes)
    env.write_text(text.replace("lockScopes: []", f"lockScopes: {scopes}"))
    credential = [
        "redis-credential",
        "--host",
        n8n.redis_host,
        "--port",
        str(n8n.redis_port),
        "--database",
        str(n8n.redis_db),
    ]
    run_cli(root, *credential)
    return root


@dataclass
class Call:
    status: int
    body: Any
    seconds: float


@dataclass
class LockBed:
    root: Path
    n8n: N8nInstance
    redis: redis.Redis

    def webhook(self, path: str, body: dict[str, Any], timeout: float = 180.0) -> Call:
        start = time.monotonic()
        try:
            response = requests.post(
                f"{self.n8n.base_url}/webhook/{path}", json=body, timeout=timeout
            )
        except requests.exceptions.ReadTimeout:
            # A caller never answered is a defect (ours or n8n's): say where its execution is.
            # CI keeps the head and the tail of a failure's output, so the chained urllib3
            # traceback is dropped and the report ends with what matters most.
            headline = f"POST /webhook/{path} {json.dumps(body)}: no answer in {timeout:.0f} s"
            raise AssertionError(f"{headline}\n{self.unfinished_report()}\n{headline}") from None
        try:
            payload = response.json()
        except ValueError:
            payload = response.text
        return Call(response.status_code, payload, time.monotonic() - start)

    def unfinished_report(self) -> str:
        """The tail of every test-bed process's log, then what n8n has not finished: the
        executions it lists as running or waiting (with their last node) and, in queue mode,
        the ones main enqueued but heard no end of (testbed.queue.unheard_executions)."""
        lines = []
        processes = sorted(live_processes(), key=lambda process: process.name.startswith("n8n"))
        logs = {process.name: process.log_path.read_text(errors="replace") for process in processes}
        for process in processes:
            lines.append(f"--- {process.name} ({process.log_path}), last lines:")
            lines.extend(logs[process.name].splitlines()[-12:])
        lines.extend(unheard_executions(logs))
        for status in ("running", "waiting"):
            try:
                found = saved_executions(self.n8n, None, status=status, page_size=50)
            except (requests.RequestException, ValueError) as failed:
                lines.append(f"executions {status}: not read ({failed})")
                continue
            lines.append(f"executions {status}: {len(found)}")
            for execution in found[:20]:
                result = (execution.get("data") or {}).get("resultData") or {}
                lines.append(
                    f"  execution {execution.get('id')} of workflow {execution.get('workflowId')}: "
                    f"since {execution.get('startedAt')}, last node "
                    f"{result.get('lastNodeExecuted')!r}"
                )
        return "\n".join(lines)

    def lock(self, scope: str, **body: Any) -> Call:
        body = {"ttl": 60, "max_wait": 60, "hold_ms": 10, **body, "scope": scope}
        return self.webhook("e2e-lock", body)

    def release(self, scope: str, lock_id: str) -> Call:
        return self.webhook("e2e-release", {"scope": scope, "lock_id": lock_id})

    def rate(self, scope: str, limit: int, window: int, **inputs: Any) -> Call:
        """Call rate_limit_check; `inputs`: algorithm, cost, wait, max_wait_seconds."""
        return self.webhook("e2e-rate", {"scope": scope, "limit": limit, "window": window,
                                         **inputs})  # fmt: skip

    def sink(self, scope: str) -> list[dict[str, Any]]:
        return [json.loads(entry) for entry in self.redis.lrange(f"e2e-sink-{scope}", 0, -1)]

    def workflow_id(self, key: str) -> str:
        return str(load_env(Workspace(self.root), "e2e").data["workflows"][key]["id"])

    def executions(self, workflow_id: str, *, with_data: bool = False) -> list[dict[str, Any]]:
        """The workflow's last 250 executions (with their run data: the last 50)."""
        params = {"workflowId": workflow_id, "limit": "250"}
        if with_data:
            params.update(includeData="true", limit="50")
        response = requests.get(
            f"{self.n8n.base_url}/api/v1/executions",
            params=params,
            headers={"X-N8N-API-KEY": self.n8n.api_key},
            timeout=30,
        )
        response.raise_for_status()
        executions: list[dict[str, Any]] = response.json()["data"]
        return executions


def stop_execution(n8n: N8nInstance, execution_id: str) -> None:
    """Stop a running execution as a user would: the public API on 2.x; 1.x has no public
    stop, so its UI's internal endpoint, logged in as the owner."""
    if not n8n.version.startswith("1."):
        response = requests.post(
            f"{n8n.base_url}/api/v1/executions/{execution_id}/stop",
            headers={"X-N8N-API-KEY": n8n.api_key},
            timeout=30,
        )
        response.raise_for_status()
        return
    with requests.Session() as session:
        session.headers["browser-id"] = str(uuid.uuid4())
        login = {"emailOrLdapLoginId": OWNER["email"], "password": OWNER["password"]}
        session.post(f"{n8n.base_url}/rest/login", json=login, timeout=30).raise_for_status()
        stop = session.post(f"{n8n.base_url}/rest/executions/{execution_id}/stop", timeout=30)
        stop.raise_for_status()


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> float:
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"{what}: not true after {timeout:g} s")
        time.sleep(0.05)
    return time.monotonic() - start


def stat(lockbed: LockBed, metric: str, scope: str) -> int:
    """What the primitives counted for `metric` of `scope`, over every hour kept."""
    keys = lockbed.redis.scan_iter(match=f"n8nlock:stats:*:{metric}:{scope}")
    return sum(int(lockbed.redis.get(key) or 0) for key in keys)


def acquired(call: Call) -> dict[str, Any]:
    """What Lock Acquire answered, after checking the e2e-lock caller got the lock."""
    assert call.status == 200 and isinstance(call.body, dict), call
    assert call.body.get("acquire", {}).get("acquired") is True, call.body
    result: dict[str, Any] = call.body["acquire"]
    return result


def held_lanes(client: redis.Redis, scope_pattern: str) -> list[str]:
    """The records that still name a holder: each ticket's own (`:holder:<t>`) and the lanes'
    copies (`:meta:<k>`). A release leaves `{released: true}` in both for a few seconds, and the
    scalars (ticket, served, hold average) stay by design."""
    held = []
    for kind in ("holder", "meta"):
        for key in client.scan_iter(match=f"n8n-lock-{scope_pattern}:{kind}:*"):
            record = client.get(key)
            if record is not None and not json.loads(record).get("released"):
                held.append(str(key))
    return sorted(held)


def tickets_drawn(client: redis.Redis, scope: str) -> int:
    """How many callers have taken a ticket for `scope` (the ticket is also the fence)."""
    return int(client.get(f"n8n-lock-{scope}:ticket") or 0)
