"""`n8nlock init`: the files of a new workspace."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from n8n_lockkit.workspace.layout import ENVS_DIR, WORKFLOWS_DIR, check_name
from n8n_lockkit.workspace.plan import FileChange, Plan, read_text_or_none

DEFAULT_URL = "http://127.0.0.1:5678"

ENV_TEMPLATE = """\
# n8nlock env file: one per n8n instance. n8nlock edits it in place and keeps your comments.
name: {name}
n8n:
  url: {url}
  apiKeyEnv: N8N_API_KEY      # name of the environment variable that holds the API key; the key itself never goes in a file
credentials:
  redis: {{id: "", name: ""}} # the n8n Redis credential the primitives use
workflows: {{}}                 # workflow key -> {{id, name}}; ids are filled when pushed
lockScopes: []                # static scopes that error_handler_lock_cleanup cleans
"""  # noqa: E501  (the file is for people; its comments say what each key is)


def env_text(name: str, url: str = DEFAULT_URL) -> str:
    return ENV_TEMPLATE.format(name=check_name("env name", name), url=url)


def plan_init(root: Path, env_names: Sequence[str], url: str = DEFAULT_URL) -> Plan:
    """Env files that do not exist yet, and the workflows folder; nothing is overwritten."""
    changes = [
        FileChange(path, read_text_or_none(path), env_text(name, url), overwrite=False)
        for name in dict.fromkeys(env_names)
        for path in [root / ENVS_DIR / f"{check_name('env name', name)}.yml"]
    ]
    keep = root / WORKFLOWS_DIR / ".gitkeep"
    changes.append(FileChange(keep, read_text_or_none(keep), "", overwrite=False))
    return Plan(tuple(changes))
