"""`n8nlock locks`: every held lane, with its holder and the link to its execution in n8n.

The holder is read from its own record (`holder:<t>`, the lease the engine decides on; or the
lane's `meta:<k>` when that holds by itself, an older format's: compat.py), never from a lane
copy alone, which a caller skipped while it stalled may have written late. JSON keeps the fields
it had before format 3 (`key` is still the lane's key) and adds `record_key` (where the holder's
record is) and `format`.
"""

from __future__ import annotations

from typing import Any

from n8n_lockkit.errors import LockkitError
from n8n_lockkit.ops import compat
from n8n_lockkit.ops.snapshot import ForeignKey, Lane, Scan, ScopeState
from n8n_lockkit.ops.store import LockStore


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


def held_lanes(scan: Scan) -> list[Lane]:
    """Every lane a holder holds, by scope then lane."""
    return [lane for state in scan.states for lane in state.held]


def busy_scopes(scan: Scan) -> list[ScopeState]:
    """The scopes with a holder or a caller in line."""
    return [state for state in scan.states if state.held or state.waiting]


def lock_as_dict(lane: Lane, n8n_url: str, waiting: int) -> dict[str, Any]:
    meta = lane.meta or {}
    return {
        "scope": lane.scope,
        "lane": lane.lane,
        "slots": lane.slots,
        "key": lane.key,
        "record_key": lane.record_key,
        "format": lane.format,
        "holder": {
            "lock_id": meta.get("lock_id"),
            "workflow_id": meta.get("workflow_id"),
            "workflow_name": meta.get("workflow_name"),
            "execution_id": meta.get("execution_id"),
            "execution_url": execution_url(n8n_url, meta),
        },
        "ticket": lane.ticket,
        "fence": meta.get("fence"),
        "locked_at": meta.get("locked_at"),
        "expires_at": meta.get("expires_at"),
        "age_seconds": _rounded(lane.age_seconds),
        "ttl_seconds": _rounded(lane.ttl_seconds),
        "waiting": waiting,
        "problems": lane.problems,
    }


def scope_as_dict(state: ScopeState) -> dict[str, Any]:
    return {
        "scope": state.scope,
        "slots": state.slots,
        "ticket": state.ticket,
        "held": len(state.held),
        "waiting": state.waiting,
    }


def locks_document(scan: Scan, n8n_url: str) -> dict[str, Any]:
    """`locks -o json`: the held lanes, the scopes in use, and the older locks still held
    (compat.format1_held)."""
    return {
        "locks": [
            lock_as_dict(lane, n8n_url, state.waiting)
            for state in scan.states
            for lane in state.held
        ],
        "scopes": [scope_as_dict(state) for state in busy_scopes(scan)],
        "v1_locks": scan.v1_held,
    }


# What the CLI warns of the older locks a scan found (Scan.v1_held).
v1_warning = compat.format1_warning


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
