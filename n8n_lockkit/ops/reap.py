"""`n8nlock reap`: free the lanes no running execution holds any more.

- A lane whose holder's record (the ticket's own `holder:<t>`, not the lane's copy; or the
  lane's `meta:<k>` when that holds by itself, compat.py) names an execution that has ended
  (success, error, crashed, canceled) or no longer exists is released at once, as its holder
  would have released it: n8n's API (`GET /executions/{id}`, asked per id, since the list
  endpoint has left out waiting executions, n8n issue #14748) is the proof. The release is
  one Lua script that compares the record's lock_id and ticket, so a lane that changed hands
  meanwhile is left alone.
- A lane record without TTL that holds nothing (a released or an unreadable one, or a stale
  copy of a format-3 record) has no holder to ask about. Reap looks twice, `grace` seconds
  apart, and deletes it only if it did not change.
- A lane whose head neither holds nor waits is the engine's matter: the caller behind it skips
  it (keys.SKIP_GRACE_SECONDS). Reap leaves it alone.
- With `idle`, a scope with no holder, no caller in line and no `gone` mark left loses its
  scalars (ticket, served, hold average, fast-path value): engine v2 leaves two per scope
  behind (`:ticket` and one `:served:<k>` per lane) until then, since they must not expire
  while a caller is in line. A `gone` mark keeps the scope until it expires (a day at least):
  a caller skipped while it stalled may still write its record and must find its mark.

The report lists every decision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from n8n_lockkit.ops.snapshot import Lane, ScopeState, describe_copy
from n8n_lockkit.ops.store import LockStore
from n8n_lockkit.primitives import keys
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
    lane: int | None  # None: the scope as a whole (--idle)
    action: str  # freed | would-free | kept | changed | forgot | would-forget | busy
    reason: str
    meta: dict[str, Any] | None
    slots: int = 1

    def as_dict(self) -> dict[str, Any]:
        meta = self.meta or {}
        return {
            "scope": self.scope,
            "lane": self.lane,
            "action": self.action,
            "reason": self.reason,
            "workflow_id": meta.get("workflow_id"),
            "execution_id": meta.get("execution_id"),
        }


@dataclass(frozen=True)
class Verdict:
    free: bool
    reason: str


def orphan_reason(lane: Lane) -> str | None:
    """Why a lane's record (`meta:<k>`) has no holder to ask about and never expires, or
    None."""
    if lane.meta_raw is None or lane.meta_pttl_ms != -1 or lane.held:
        return None
    if lane.copy is None:
        return "unreadable meta without TTL"
    if lane.copy.get("released"):
        return "released record without TTL"
    return f"stale copy ({describe_copy(lane.copy)}) without TTL"


def idle_reason(state: ScopeState, quiet_seconds: float) -> str | None:
    """Why `state` is not idle, or None when it is: the condition of the forget script in
    scripts.py, on the snapshot (a dry run shows it; the script decides again atomically, and
    also reads the records of the tickets the lanes' copies name)."""
    if state.ticket is None:
        return "no ticket"
    for lane in state.lanes:
        if lane.held or (lane.meta_raw is not None and lane.copy is None):
            return f"lane {lane.lane} is held"
        head = lane.head
        while head in state.gone:
            head += state.slots
        if state.ticket >= head:
            return f"ticket {head} is in line in lane {lane.lane}"
    if state.gone:
        return (
            f"ticket {min(state.gone)} gave up or was skipped: kept until its mark expires (a "
            "caller skipped while it stalled may still wake)"
        )
    # `release.js` gives the hold average its full TTL at every release.
    if keys.HOLD_TTL_SECONDS - state.hold_pttl_ms / 1000 < quiet_seconds:
        return "released too recently"
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


# Why a release changed nothing, by the release script's answer.
_UNCHANGED = {
    "released": "its holder released it meanwhile",
    "withdrawn": "it withdrew meanwhile (it had been skipped while it stalled)",
    "gone": "its record expired meanwhile",
}


@dataclass
class Reaper:
    store: LockStore
    executions: Executions
    grace_seconds: float
    dry_run: bool
    sleep: Callable[[float], None]
    announce: Callable[[str], None]
    idle: bool = False

    def run(self, states: list[ScopeState]) -> list[Decision]:
        check = HolderCheck(self.executions)
        decisions: list[Decision] = []
        orphans: list[tuple[Lane, str, ScopeState]] = []
        for state in states:
            for lane in state.lanes:
                reason = orphan_reason(lane)
                if reason is not None:
                    orphans.append((lane, reason, state))
                elif lane.held and lane.meta is not None:
                    decisions.append(self._decide(lane, check.verdict(lane.meta)))
        if orphans:
            decisions.extend(self._second_look(orphans))
        if self.idle:
            decisions.extend(self._forget(states))
        return sorted(decisions, key=lambda d: (d.scope, -1 if d.lane is None else d.lane))

    def _decide(self, lane: Lane, verdict: Verdict) -> Decision:
        reason = verdict.reason
        if not verdict.free:
            if lane.record_pttl_ms == -1:
                reason += "; its record has no TTL, so it is freed only when that execution ends"
            return self._about(lane, "kept", reason)
        if self.dry_run:
            return self._about(lane, "would-free", reason)
        if lane.ticket is None:
            why = f"{reason}, but its record names no ticket to release: left to its TTL"
            return self._about(lane, "kept", why)
        outcome = self.store.release_if_holder(lane, REAPED)
        if outcome == "done":
            return self._about(lane, "freed", reason)
        why = _UNCHANGED.get(outcome, "it changed hands since it was read: left alone")
        changed = f"{reason}, but {why}"
        return self._about(lane, "changed", changed)

    def _second_look(self, orphans: list[tuple[Lane, str, ScopeState]]) -> list[Decision]:
        self.announce(
            f"{len(orphans)} record(s) without TTL and without a holder to ask about: looking "
            f"again in {self.grace_seconds:g} s"
        )
        self.sleep(self.grace_seconds)
        decisions = []
        for first, reason, state in orphans:
            again = self.store.refresh(state)
            now = _lane(again, first.lane) if isinstance(again, ScopeState) else None
            if now is None or now.meta_raw != first.meta_raw or now.meta_pttl_ms != -1:
                changed = f"{reason}, but it changed within the grace period"
                decisions.append(self._about(first, "kept", changed))
                continue
            reason = f"{reason} for {self.grace_seconds:g} s"
            if self.dry_run:
                action = "would-free"
            elif self.store.delete_if_unchanged(first, REAPED):
                action = "freed"
            else:
                action, reason = "changed", f"{reason}, but it changed since: left alone"
            decisions.append(self._about(first, action, reason))
        return decisions

    @staticmethod
    def _about(lane: Lane, action: str, reason: str) -> Decision:
        return Decision(lane.scope, lane.lane, action, reason, lane.meta, lane.slots)

    def _forget(self, states: list[ScopeState]) -> list[Decision]:
        """Idle scopes lose their scalars; a scope without holder that is not idle says why."""
        decisions = []
        for seen in states:
            state = seen if self.dry_run else self.store.refresh(seen)
            if not isinstance(state, ScopeState) or state.held or _nothing_left(state):
                continue
            reason = idle_reason(state, self.grace_seconds)
            if reason is None and self.dry_run:
                decisions.append(Decision(state.scope, None, "would-forget", "idle", None))
                continue
            if reason is None:
                forgot, detail = self.store.forget_if_idle(state, self.grace_seconds)
                if forgot:
                    why = f"idle: deleted its ticket ({detail}) and lanes"
                    decisions.append(Decision(state.scope, None, "forgot", why, None))
                    continue
                reason = detail
            decisions.append(Decision(state.scope, None, "busy", f"not idle: {reason}", None))
        return decisions


def _nothing_left(state: ScopeState) -> bool:
    """Only records on their way out (a release's, for a minute): nothing to forget."""
    return state.ticket is None and all(lane.served is None for lane in state.lanes)


def _lane(state: ScopeState, number: int) -> Lane | None:
    return state.lanes[number] if number < state.slots else None
