"""`n8nlock forget`: let one key of a duplicate guard run again before its window ends.

A guard's success leaves `n8nlock:done:<scope>` (primitives/keys.py) for the window, which turns
the key's duplicates away. Forgetting deletes that mark, only if it is still the one shown (a
success meanwhile wrote a new one, which stays), and with it the answer a replaying guard
stored (`n8nlock:answer:<scope>`). An execution of the key that runs now holds
the guard's lock, not the mark: forget leaves it alone and says so.

Example:
    >>> state = KeyState("stripe-events", "evt_1", "dedupe-stripe-events-evt_1", None, [])
    >>> print(state.lines()[0].split(":")[0])
    stripe-events key 'evt_1'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from n8n_lockkit.errors import ExitCode, LockkitError
from n8n_lockkit.ops.snapshot import ForeignKey
from n8n_lockkit.ops.store import LockStore
from n8n_lockkit.primitives import keys


class MarkChanged(LockkitError):
    """The key succeeded again between being shown and being forgotten."""

    exit_code = ExitCode.REMOTE


@dataclass(frozen=True)
class DoneMark:
    raw: str
    ttl_seconds: int
    execution_id: str | None
    workflow_id: str | None
    done_at: str | None

    @classmethod
    def parse(cls, raw: str, ttl_seconds: int) -> DoneMark:
        try:
            record = json.loads(raw)
        except json.JSONDecodeError:
            record = None
        fields = record if isinstance(record, dict) else {}

        def text(name: str) -> str | None:
            value = fields.get(name)
            return None if value is None else str(value)

        return cls(raw, ttl_seconds, text("execution_id"), text("workflow_id"), text("done_at"))


@dataclass(frozen=True)
class KeyState:
    """One key of a guard, as Redis held it: its mark of a success, and who runs it now."""

    workflow_key: str
    key: str
    scope: str
    done: DoneMark | None
    running: list[str]  # the execution ids that hold the key's lock now

    def lines(self) -> list[str]:
        name = f"{self.workflow_key} key {self.key!r}"
        if self.done is None:
            found = [
                f"{name}: no success is marked (it never ran, it failed, or its window ended): "
                "the next execution with this key runs its body"
            ]
        else:
            when = f" at {self.done.done_at}" if self.done.done_at else ""
            by = f"execution {self.done.execution_id}" if self.done.execution_id else "an execution"
            found = [
                f"{name}: succeeded in {by}{when}; its duplicates are turned away for "
                f"{self.done.ttl_seconds} s more"
            ]
        for execution in self.running:
            found.append(
                f"execution {execution} runs this key now: its duplicates are turned away until "
                f"it ends; forget leaves it alone (`n8nlock release {self.scope} --force` frees "
                "its lock)"
            )
        return found

    def as_dict(self) -> dict[str, Any]:
        done = None
        if self.done is not None:
            done = {
                "execution_id": self.done.execution_id,
                "workflow_id": self.done.workflow_id,
                "done_at": self.done.done_at,
                "expires_in_seconds": self.done.ttl_seconds,
            }
        return {
            "workflow_key": self.workflow_key,
            "key": self.key,
            "scope": self.scope,
            "done": done,
            "running": self.running,
        }


def inspect(store: LockStore, workflow_key: str, key: str) -> KeyState:
    """The key's mark of a success and the executions that run it, as they are now."""
    scope = keys.dedupe_scope(workflow_key, key)
    found = store.done_mark(scope)
    done = DoneMark.parse(*found) if found is not None else None
    state = store.read(scope)
    running: list[str] = []
    if state is not None and not isinstance(state, ForeignKey):
        running = [str((lane.meta or {}).get("execution_id", "?")) for lane in state.held]
    return KeyState(workflow_key, key, scope, done, running)


def forget(store: LockStore, shown: KeyState) -> str:
    """Delete the mark shown: "forgotten", "none" (there was none), or "expired" (its window
    ended meanwhile). Raises MarkChanged when the key succeeded again meanwhile."""
    if shown.done is None:
        return "none"
    if store.forget_done(shown.scope, shown.done.raw):
        return "forgotten"
    if store.done_mark(shown.scope) is None:
        return "expired"
    raise MarkChanged(
        f"{shown.workflow_key} key {shown.key!r} succeeded again after it was shown; nothing "
        "was changed",
        hint=f"run `n8nlock forget --workflow-key {shown.workflow_key} --key {shown.key}` again "
        "to see it as it is now",
    )
