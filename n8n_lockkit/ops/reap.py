"""`n8nlock reap`: free the locks no running execution holds any more.

- A lock whose record names an execution that has ended (success, error, crashed, canceled)
  or no longer exists is freed at once: n8n's API (`GET /executions/{id}`, asked per id,
  since the list endpoint has left out waiting executions, n8n issue #14748) is the proof.
- A counter without a record (a crash between INCR and SET, W2), or a record without a TTL
  left behind without its counter (W11), has no holder to ask about. Reap looks twice, `grace`
  seconds apart, and frees it only if it was orphaned both times and did not change.

Every delete is the store's compare-and-delete: a lock that changed since it was read (a new
holder, a renewal) is left alone. Nothing else is deleted: the report lists every decision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from n8n_lockkit.ops.store import LockState, LockStore
from n8n_lockkit.remote.n8n_client import N8nNotFound

REAPED = "reaped"
FINISHED = frozenset({"success", "error", "crashed", "canceled"})
ALIVE = frozenset({"new", "running", "waiting"})


class Executions(Protocol):
    def get_execution(self, execution_id: str) -> dict[str, Any]: ...

    def get_workflow(self, workflow_id: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Decision:
    scope: str
    action: str  # freed | would-free | kept | changed
    reason: str
    meta: dict[str, Any] | None

    def as_dict(self) -> dict[str, Any]:
        meta = self.meta or {}
        return {
            "scope": self.scope,
            "action": self.action,
            "reason": self.reason,
            "workflow_id": meta.get("workflow_id"),
            "execution_id": meta.get("execution_id"),
        }


@dataclass(frozen=True)
class Verdict:
    free: bool
    reason: str


def orphan_reason(state: LockState) -> str | None:
    """Why a scope has no holder to ask about, or None when its record names one."""
    if state.held and state.meta is None:
        return "no meta (holder unknown)" if state.meta_raw is None else "unreadable meta"
    if not state.held and state.meta_raw is not None and state.meta_pttl_ms == -1:
        return "a record without its counter and without TTL"
    return None


class HolderCheck:
    """Asks n8n about each holder once."""

    def __init__(self, executions: Executions) -> None:
        self._executions = executions
        self._workflows: dict[str, bool] = {}

    def verdict(self, meta: dict[str, Any]) -> Verdict:
        execution_id = str(meta.get("execution_id", ""))
        workflow_id = str(meta.get("workflow_id", ""))
        if not execution_id.isdigit():
            return Verdict(False, f"execution id {execution_id!r} cannot be looked up in n8n")
        try:
            execution = self._executions.get_execution(execution_id)
        except N8nNotFound:
            return self._gone(execution_id, workflow_id)
        owner = str(execution.get("workflowId", ""))
        if workflow_id and owner and owner != workflow_id:
            # Execution ids restart on every n8n instance; this one is not the holder.
            return Verdict(
                False,
                f"execution {execution_id} here belongs to workflow {owner}, not {workflow_id}: "
                "the lock is another n8n instance's",
            )
        status = str(execution.get("status", "unknown"))
        if status in FINISHED:
            return Verdict(True, f"execution {execution_id} ended: {status}")
        if status in ALIVE:
            return Verdict(False, f"execution {execution_id} is {status}")
        return Verdict(False, f"execution {execution_id} has status {status}")

    def _gone(self, execution_id: str, workflow_id: str) -> Verdict:
        if workflow_id not in self._workflows:
            try:
                self._executions.get_workflow(workflow_id)
                self._workflows[workflow_id] = True
            except N8nNotFound:
                self._workflows[workflow_id] = False
        if self._workflows[workflow_id]:
            return Verdict(True, f"execution {execution_id} no longer exists in n8n")
        return Verdict(
            False,
            f"workflow {workflow_id} is not on this n8n instance: the lock is another "
            "instance's, or its workflow was deleted",
        )


@dataclass
class Reaper:
    store: LockStore
    executions: Executions
    grace_seconds: float
    dry_run: bool
    sleep: Callable[[float], None]
    announce: Callable[[str], None]

    def run(self, states: list[LockState]) -> list[Decision]:
        check = HolderCheck(self.executions)
        decisions: list[Decision] = []
        orphans: list[tuple[LockState, str]] = []
        for state in states:
            reason = orphan_reason(state)
            if reason is not None:
                orphans.append((state, reason))
            elif state.held and state.meta is not None:
                verdict = check.verdict(state.meta)
                decisions.append(self._decide(state, verdict))
        if orphans:
            decisions.extend(self._second_look(orphans))
        return sorted(decisions, key=lambda d: d.scope)

    def _decide(self, state: LockState, verdict: Verdict) -> Decision:
        reason = verdict.reason
        if not verdict.free:
            if state.has_no_ttl:
                reason += "; its lock has no TTL, so it is freed only when that execution ends"
            return Decision(state.scope, "kept", reason, state.meta)
        if self.dry_run:
            return Decision(state.scope, "would-free", reason, state.meta)
        if self.store.delete_if_unchanged(state, REAPED):
            return Decision(state.scope, "freed", reason, state.meta)
        changed = f"{reason}, but it changed since it was read: left alone"
        return Decision(state.scope, "changed", changed, state.meta)

    def _second_look(self, orphans: list[tuple[LockState, str]]) -> list[Decision]:
        self.announce(
            f"{len(orphans)} lock key(s) without a holder to ask about: looking again in "
            f"{self.grace_seconds:g} s"
        )
        self.sleep(self.grace_seconds)
        decisions = []
        for first, reason in orphans:
            again = self.store.read(first.scope)
            if not isinstance(again, LockState) or not again.same_as(first):
                changed = f"{reason}, but it changed within the grace period"
                decisions.append(Decision(first.scope, "kept", changed, first.meta))
                continue
            verdict = Verdict(True, f"{reason} for {self.grace_seconds:g} s")
            decisions.append(self._decide(first, verdict))
        return decisions
