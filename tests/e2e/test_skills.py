"""Every command line in skills/ runs as written, in order, against the test-bed n8n.

The skills are read in SKILL_ORDER; each ```sh line runs in bash, in one workspace, with the
variables the skills name (N8N_URL, N8N_API_KEY, REDIS_HOST, REDIS_PORT). After `n8nlock
init`, the workflows the skills talk about are put into the new workspace, as a user would
export them from n8n. Before the operate-locks skill, Redis holds the two locks it talks about,
as executions of `orders` that crashed and were pruned from n8n leave them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlsplit

import redis

from n8n_lockkit.workspace.envconfig import load_env
from n8n_lockkit.workspace.layout import Workspace
from testbed.endpoints import N8nInstance
from tests.e2e.lockbed import held_lanes

ROOT = Path(__file__).parent.parent.parent
CORPUS = Path(__file__).parent.parent / "corpus"
SKILL_ORDER = [
    "n8nlock-create-lock",
    "n8nlock-add-lock-to-workflow",
    "n8nlock-overlap-policies",
    "n8nlock-add-rate-limit",
    "n8nlock-debounce-chat-messages",
    # validate --env fails, as push would, until push-and-credentials links the credential
    "n8nlock-push-and-credentials",
    "n8nlock-validate-in-ci",
    "n8nlock-locking-pattern",
    "n8nlock-operate-locks",
    "n8nlock-upgrade",
]
# The locks the operate-locks skill shows, releases and reaps.
STUCK_SCOPES = ("order-1001", "order-1002")
EXPORTED = {
    "orders": "order_update",
    "invoices": "code_heavy",
    "enrich": "merge_branches",
    "sync": "schedule_sync",
    "events": "webhook_on_received",
    "chat": "if_one_branch",
}
FORMAT1 = Path(__file__).parent.parent / "fixtures" / "upgrade" / "format1" / "workflows"


def command_lines(skill: str) -> list[str]:
    text = (ROOT / "skills" / f"{skill}.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def export_workflows(workspace: Path) -> None:
    for key, corpus in EXPORTED.items():
        text = (CORPUS / f"{corpus}.template.json").read_text()
        (workspace / "workflows" / f"{key}.template.json").write_text(
            text.replace('"path": "corpus-', '"path": "skills-')
        )


def bring_back_format_1(workspace: Path) -> None:
    """The workspace as an n8nlock before engine v2 left it: its primitives and four workflows
    it wrapped (tests/fixtures/upgrade/format1), webhook paths of their own."""
    for path in FORMAT1.glob("*.template.json"):
        text = path.read_text().replace('"path": "corpus-', '"path": "skills-legacy-')
        (workspace / "workflows" / path.name).write_text(text)


def leave_stuck_locks(redis_url: str, workspace: Path) -> None:
    """Locks of `orders` executions n8n no longer has, written as lock_acquisition writes them."""
    env = load_env(Workspace(workspace), "dev")
    workflow_id = str(env.data["workflows"]["orders"]["id"])
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        for number, scope in enumerate(STUCK_SCOPES, start=900_001):
            now = datetime.now(timezone.utc)
            meta = {
                "lock_id": f"{number}-stuck",
                "scope": scope,
                "ticket": 1,
                "fence": 1,
                "slots": 1,
                "workflow_id": workflow_id,
                "workflow_name": "orders",
                "execution_id": str(number),
                "locked_at": now.isoformat(),
                "locked_ms": int(now.timestamp() * 1000),
                "expires_at": (now + timedelta(seconds=300)).isoformat(),
                "expires_ms": int((now + timedelta(seconds=300)).timestamp() * 1000),
                "ttl_seconds": 300,
            }
            client.set(f"n8n-lock-{scope}:ticket", 1)
            client.set(f"n8n-lock-{scope}:meta:0", json.dumps(meta), ex=300)
    finally:
        client.close()


def redis_url_override(n8n: N8nInstance, redis_url: str) -> dict[str, str]:
    """The CLI reaches Redis where the env records it, unless the tests see it elsewhere."""
    seen = urlsplit(redis_url)
    same = (seen.hostname, seen.port) == (n8n.redis_host, n8n.redis_port)
    return {} if same else {"N8NLOCK_REDIS_URL": redis_url}


def test_every_skill_is_run(tmp_path: Path) -> None:
    assert sorted(SKILL_ORDER) == sorted(p.stem for p in (ROOT / "skills").glob("*.md"))


def test_skill_commands_run_as_written(n8n: N8nInstance, redis_url: str, tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if k != "N8NLOCK_REDIS_URL"},
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "N8N_URL": n8n.base_url,
        "N8N_API_KEY": n8n.api_key,
        "REDIS_HOST": n8n.redis_host,
        "REDIS_PORT": str(n8n.redis_port),
        **redis_url_override(n8n, redis_url),
    }
    cwd = tmp_path
    for skill in SKILL_ORDER:
        if skill == "n8nlock-operate-locks":
            leave_stuck_locks(redis_url, cwd)
        if skill == "n8nlock-upgrade":
            bring_back_format_1(cwd)
        for line in command_lines(skill):
            if line.startswith("cd "):
                cwd = cwd / line.removeprefix("cd ").strip()
                export_workflows(cwd)
                continue
            run = subprocess.run(
                ["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
            )
            assert run.returncode == 0, f"{skill}: `{line}` exited {run.returncode}\n{run.stderr}"
    assert shutil.which("n8nlock", path=env["PATH"])
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        left = [lane for s in STUCK_SCOPES for lane in held_lanes(client, s)]
    finally:
        client.close()
    assert left == [], "release --force and reap left a stuck lock behind"
