"""`n8nlock init`: the files of a new workspace."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from n8n_lockkit.workspace.layout import (
    ENVS_DIR,
    STATE_DIR,
    WORKFLOWS_DIR,
    check_key_prefix,
    check_name,
)
from n8n_lockkit.workspace.plan import FileChange, Plan, read_text_or_none

DEFAULT_URL = "http://127.0.0.1:5678"

ENV_TEMPLATE = """\
# n8nlock env file: one per n8n instance. n8nlock edits it in place and keeps your comments.
keyPrefix: "{key_prefix}"                 # namespace in front of this env's Redis keys (e.g. staging:), for envs that share one Redis
name: {name}
n8n:
  url: {url}
  apiKeyEnv: N8N_API_KEY      # name of the environment variable that holds the API key; the key itself never goes in a file
credentials:
  redis: {{id: "", name: ""}} # the n8n Redis credential the primitives use
workflows: {{}}                 # workflow key -> {{id, name}}; ids are filled when pushed
lockScopes: []                # static scopes that error_handler_lock_cleanup cleans
"""  # noqa: E501  (the file is for people; its comments say what each key is)


def env_text(name: str, url: str = DEFAULT_URL, key_prefix: str = "") -> str:
    prefix = check_key_prefix(key_prefix, "--key-prefix")
    return ENV_TEMPLATE.format(name=check_name("env name", name), url=url, key_prefix=prefix)


_IGNORED = (STATE_DIR, f"{STATE_DIR}/", f"/{STATE_DIR}", f"/{STATE_DIR}/")
GITIGNORE_ENTRY = f"""\
# n8nlock's record of what this checkout last pushed and pulled (added by `n8nlock init`)
{STATE_DIR}/
"""


def gitignore_text(current: str | None) -> str:
    r"""The workspace's .gitignore with n8nlock's state folder in it: the user's lines are
    kept as they are, and the entry is added only when no line names the folder yet.

    Example:
        >>> gitignore_text("*.log") == "*.log\n" + GITIGNORE_ENTRY
        True
        >>> gitignore_text("*.log\n.n8nlock\n")
        '*.log\n.n8nlock\n'
    """
    text = current or ""
    # git ignores trailing spaces in a pattern, not leading ones
    if any(line.rstrip() in _IGNORED for line in text.splitlines()):
        return text
    if text and not text.endswith("\n"):
        text += "\n"
    return text + GITIGNORE_ENTRY


def plan_init(
    root: Path, env_names: Sequence[str], url: str = DEFAULT_URL, key_prefix: str = ""
) -> Plan:
    """Env files that do not exist yet, the workflows folder, and a .gitignore that keeps
    n8nlock's state out of git; nothing the user wrote is overwritten."""
    changes = [
        FileChange(path, read_text_or_none(path), env_text(name, url, key_prefix), overwrite=False)
        for name in dict.fromkeys(env_names)
        for path in [root / ENVS_DIR / f"{check_name('env name', name)}.yml"]
    ]
    keep = root / WORKFLOWS_DIR / ".gitkeep"
    changes.append(FileChange(keep, read_text_or_none(keep), "", overwrite=False))
    ignore = root / ".gitignore"
    before = read_text_or_none(ignore)
    changes.append(FileChange(ignore, before, gitignore_text(before)))
    return Plan(tuple(changes))
