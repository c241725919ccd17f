"""What each workflow file held when it was last pushed to or pulled from an env.

`.n8nlock/synced.json` in the workspace keeps, per env and workflow key, the id and a digest
of the file (its JSON, not its formatting) as push sent it or pull wrote it. Pull reads it to
tell a file the user changed since (kept unless --force) from one that only n8n moved past.
It is this checkout's memory, not shared truth: without it, pull keeps every file that
differs from n8n unless --force.

Example:
    >>> file_digest({"b": 1, "a": [1, 2]}) == file_digest({"a": [1, 2], "b": 1})
    True
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from n8n_lockkit.workspace.layout import STATE_DIR, Workspace
from n8n_lockkit.workspace.plan import FileChange, read_text_or_none

STATE_PATH = Path(STATE_DIR) / "synced.json"
STATE_FORMAT = 1


def file_digest(workflow: Any) -> str:
    """The digest of a workflow file's JSON: key order and indentation do not count."""
    text = json.dumps(workflow, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class SyncState:
    """The state file, read once; `record` edits it and `change` says what to write."""

    def __init__(self, workspace: Workspace) -> None:
        self.path = workspace.root / STATE_PATH
        self.original = read_text_or_none(self.path)
        self.envs: dict[str, dict[str, dict[str, str]]] = _parse(self.original)

    def digest(self, env: str, key: str) -> str | None:
        """The digest recorded for `key` in `env`, if it was pushed or pulled from here."""
        entry = self.envs.get(env, {}).get(key)
        return entry.get("digest") if entry else None

    def record(self, env: str, key: str, workflow_id: str, workflow: Any) -> None:
        entry = {"id": workflow_id, "digest": file_digest(workflow)}
        self.envs.setdefault(env, {})[key] = entry

    def change(self) -> FileChange:
        document = {"format": STATE_FORMAT, "envs": _sorted(self.envs)}
        return FileChange(self.path, self.original, json.dumps(document, indent=2) + "\n")


def _sorted(envs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {env: dict(sorted(keys.items())) for env, keys in sorted(envs.items())}


def _parse(text: str | None) -> dict[str, dict[str, dict[str, str]]]:
    # A damaged or foreign state file means "nothing known": pull then keeps files that
    # differ, which is the safe side, and the next write replaces it.
    if not text:
        return {}
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        return {}
    envs = document.get("envs") if isinstance(document, dict) else None
    if not isinstance(envs, dict):
        return {}
    return {
        str(env): {
            str(key): {str(k): str(v) for k, v in entry.items()}
            for key, entry in keys.items()
            if isinstance(entry, dict)
        }
        for env, keys in envs.items()
        if isinstance(keys, dict)
    }
