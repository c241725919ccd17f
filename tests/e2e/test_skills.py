"""Every command line in skills/ runs as written, in order, against the test-bed n8n.

The skills are read in SKILL_ORDER; each ```sh line runs in bash, in one workspace, with the
variables the skills name (N8N_URL, N8N_API_KEY, REDIS_HOST, REDIS_PORT). After `n8nlock
init`, the workflows the skills talk about are put into the new workspace, as a user would
export them from n8n.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.testbed.endpoints import N8nInstance

ROOT = Path(__file__).parent.parent.parent
CORPUS = Path(__file__).parent.parent / "corpus"
SKILL_ORDER = [
    "n8nlock-create-lock",
    "n8nlock-add-lock-to-workflow",
    "n8nlock-add-rate-limit",
    "n8nlock-validate-in-ci",
    "n8nlock-push-and-credentials",
    "n8nlock-locking-pattern",
]
EXPORTED = {"orders": "order_update", "invoices": "code_heavy", "enrich": "merge_branches"}


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


def test_every_skill_is_run(tmp_path: Path) -> None:
    assert sorted(SKILL_ORDER) == sorted(p.stem for p in (ROOT / "skills").glob("*.md"))


def test_skill_commands_run_as_written(n8n: N8nInstance, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "N8N_URL": n8n.base_url,
        "N8N_API_KEY": n8n.api_key,
        "REDIS_HOST": n8n.redis_host,
        "REDIS_PORT": str(n8n.redis_port),
    }
    cwd = tmp_path
    for skill in SKILL_ORDER:
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
