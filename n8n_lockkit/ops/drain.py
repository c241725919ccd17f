"""The drain an upgrade from format 1 (the lock before engine v2) needs before its push.

Engine v2 waits for a format-1 holder (it reads the old counter, `n8n-lock-<scope>`), and the
new lock_release frees a format-1 lock its caller took before the push. What it cannot see is
a format-1 caller that is still *waiting*: such a caller loops inside the old lock_acquisition
and would enter as soon as the old counter is free, even beside a new-form holder. So a push
that brings the new lock waits until no format-1 caller waits: `n8nlock push` checks it, and
`n8nlock locks` shows it.

Format 1 counted its waiters: `n8nlock:arrived:<scope>` on joining the line and
`n8nlock:left:<scope>` on leaving it (entered or timed out); waiting = arrived - left.

Example:
    >>> from n8n_lockkit.ops.drain import OldFormatActivity
    >>> OldFormatActivity(held=["orders"], waiting={}).drained
    True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import redis

from n8n_lockkit.errors import ExitCode, LockkitError
from n8n_lockkit.ops.redis_access import open_redis, target_for
from n8n_lockkit.primitives import formats, keys
from n8n_lockkit.workspace.envconfig import EnvFile
from n8n_lockkit.workspace.layout import Workspace, workflow_key

SCAN_COUNT = 500


class OldFormatWaiters(LockkitError):
    """Callers of the format before engine v2 still wait; pushing the new lock now is unsafe."""

    exit_code = ExitCode.DRAIN


@dataclass(frozen=True)
class OldFormatActivity:
    held: list[str]  # scopes whose format-1 lock is held
    waiting: dict[str, int]  # scope -> format-1 callers waiting for it

    @property
    def drained(self) -> bool:
        return not self.waiting


def _count(value: bytes | str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def old_format_activity(client: redis.Redis) -> OldFormatActivity:
    """Format-1 holders and waiters, found with SCAN (never KEYS). A format-1 holder's record
    is `n8n-lock-<scope>:meta`; engine v2's records (`:meta:<k>`, a lane's, and format 3's
    `:holder:<t>`, a ticket's) end in a number and never match."""
    held = sorted(
        key.removeprefix(keys.LOCK_PREFIX).removesuffix(keys.META_SUFFIX)
        for key in client.scan_iter(
            match=f"{keys.LOCK_PREFIX}*{keys.META_SUFFIX}", count=SCAN_COUNT
        )
    )
    scopes = [
        key.removeprefix(keys.ARRIVED_PREFIX)
        for key in client.scan_iter(match=f"{keys.ARRIVED_PREFIX}*", count=SCAN_COUNT)
    ]
    waiting: dict[str, int] = {}
    if scopes:
        arrived = client.mget([keys.SCHEMA.arrived_key(s) for s in scopes])
        left = client.mget([keys.SCHEMA.left_key(s) for s in scopes])
        for scope, came, went in zip(scopes, arrived, left, strict=True):
            if _count(came) > _count(went):
                waiting[scope] = _count(came) - _count(went)
    return OldFormatActivity(held, dict(sorted(waiting.items())))


def require_drained(activity: OldFormatActivity) -> None:
    """Raise when format-1 callers still wait (the push would let one in beside a new holder)."""
    if activity.drained:
        return
    shown = ", ".join(f"{scope} ({n})" for scope, n in list(activity.waiting.items())[:5])
    more = f" and {len(activity.waiting) - 5} more" if len(activity.waiting) > 5 else ""
    raise OldFormatWaiters(
        f"callers of the lock format before engine v2 still wait on {shown}{more}; pushing "
        "the new lock now could let one of them in beside a new holder; nothing was sent",
        hint="push again once they are served or time out (`n8nlock locks` shows them); if "
        "their executions are gone (n8n restarted), `n8nlock push --no-drain-check` skips this",
    )


def _sends_locks(workspace: Workspace, selected: Sequence[str]) -> bool:
    """True when a workflow file the push sends was made by n8nlock (a primitive or a lock)."""
    for path in workspace.workflow_files():
        if selected and workflow_key(path) not in selected:
            continue
        try:
            workflow = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # push itself reports the file
        if isinstance(workflow, dict) and formats.workflow_format(workflow) is not None:
            return True
    return False


def check_before_push(
    workspace: Workspace, env: EnvFile, selected: Sequence[str], redis_url: str | None
) -> OldFormatActivity | None:
    """The drain check of a push: raise OldFormatWaiters while format-1 callers wait.

    None when the push sends none of n8nlock's workflows, or nobody said where Redis is
    (no `--redis-url` and no `redis:` record): then there is nothing this push can check."""
    if not _sends_locks(workspace, selected):
        return None
    if not redis_url and env.redis_address() is None:
        return None
    with open_redis(target_for(env, redis_url)) as client:
        activity = old_format_activity(client)
    require_drained(activity)
    return activity
