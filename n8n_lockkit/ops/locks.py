"""`n8nlock locks`: every held lock, with its holder and the link to its execution in n8n."""

from __future__ import annotations

from typing import Any

from n8n_lockkit.errors import LockkitError
from n8n_lockkit.ops.store import ForeignKey, LockState, LockStore, Scan
from n8n_lockkit.primitives import keys


class ForeignKeys(LockkitError):
    """A scope glob matched keys under n8nlock's prefix that n8nlock did not write."""


def checked_scan(store: LockStore, glob: str | None) -> Scan:
    """Scan `glob` (every scope when None). Keys n8nlock did not write are never touched; when
    the user's own glob matches some, that is an error rather than a silent skip."""
    scan = store.scan(glob or "*")
    if scan.foreign and glob is not None:
        raise ForeignKeys(
            f"--scope {glob!r} matches {len(scan.foreign)} key(s) n8nlock did not write: "
            + describe_foreign(scan.foreign),
            hint="n8nlock leaves them alone; narrow --scope to the lock scopes you mean, or "
            "move those keys out of the n8n-lock- prefix",
        )
    return scan


def describe_foreign(foreign: list[ForeignKey]) -> str:
    shown = ", ".join(f"{f.key} ({f.kind})" for f in foreign[:5])
    return shown + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")


def execution_url(n8n_url: str, meta: dict[str, Any] | None) -> str | None:
    if not meta or not meta.get("workflow_id") or not meta.get("execution_id"):
        return None
    base = n8n_url.rstrip("/")
    return f"{base}/workflow/{meta['workflow_id']}/executions/{meta['execution_id']}"


def waiting_counts(store: LockStore, states: list[LockState]) -> dict[str, int]:
    """How many executions wait for each scope: those that counted themselves in at their
    first wait and not yet out. A waiter whose process died stays counted until the two
    counters expire (max wait + TTL after the scope's last waiter), so this can run high."""
    names = [name for s in states for name in (keys.arrived_key(s.scope), keys.left_key(s.scope))]
    values = store.values(names)
    counts = {}
    for index, state in enumerate(states):
        arrived, left = values[2 * index : 2 * index + 2]
        counts[state.scope] = max(0, _count(arrived) - _count(left))
    return counts


def _count(value: str | None) -> int:
    return int(value) if value is not None and value.isdigit() else 0


def lock_as_dict(state: LockState, n8n_url: str, waiting: int | None = None) -> dict[str, Any]:
    meta = state.meta
    holder = None
    if meta is not None:
        holder = {
            "lock_id": meta.get("lock_id"),
            "workflow_id": meta.get("workflow_id"),
            "workflow_name": meta.get("workflow_name"),
            "execution_id": meta.get("execution_id"),
            "execution_url": execution_url(n8n_url, meta),
        }
    return {
        "scope": state.scope,
        "key": state.key,
        "holder": holder,
        "count": int(state.counter) if state.counter is not None else None,
        "fence": (meta or {}).get("fence"),
        "locked_at": (meta or {}).get("locked_at"),
        "expires_at": (meta or {}).get("expires_at"),
        "age_seconds": _rounded(state.age_seconds),
        "ttl_seconds": _rounded(state.ttl_seconds),
        "waiting": waiting,
        "problems": state.problems,
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def held_locks(scan: Scan) -> list[LockState]:
    """The scopes whose counter exists: a record without a counter locks nothing."""
    return [state for state in scan.states if state.held]
