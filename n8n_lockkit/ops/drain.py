"""The drain a push needs when it replaces, on n8n, a lock whose callers the engine it brings
cannot see: until they are gone, none of them may still hold or wait.

- **An older format** than the engine sees natively (`formats.NATIVE_CALLERS_FORMAT`). The
  engine decides on format 3's keys alone (keys.py), so it sees none of their callers: a
  holder, or a caller still waiting (an old one would enter beside a new holder as soon as
  its own lock looks free). compat.py says what those formats wrote and finds their holders
  and lines; they had no key namespace, so they are looked for in the keys without one.
- **Another key namespace** (`keyPrefix`, changed in the env since n8n got the workflow): its
  callers still running hold and wait in the old namespace, where the new lock never looks.
  Every held lane and every line in the old namespace blocks the push.

`n8nlock push` runs the check (through `check_before_push`) once it has read what n8n holds,
and only when it replaces such a workflow; `n8nlock locks` shows the same holders.

Example:
    >>> from n8n_lockkit.ops.drain import OldFormatActivity
    >>> OldFormatActivity(holders=[], waiting={}).drained
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import redis

from n8n_lockkit.errors import ExitCode, LockkitError
from n8n_lockkit.ops import compat
from n8n_lockkit.ops.redis_access import (
    URL_VARIABLE,
    NoRedisAddress,
    RedisUnreachable,
    open_redis,
    target_for,
)
from n8n_lockkit.ops.store import LockStore
from n8n_lockkit.primitives import formats, keys
from n8n_lockkit.remote.push import Replacements
from n8n_lockkit.workspace.envconfig import EnvFile

# How many holders and scopes a refusal names; `n8nlock locks` lists them all.
SHOWN = 5
WHY = (
    "push replaces {replaced} on n8n; callers of an older lock format, or of another key "
    "namespace, that still hold or wait are invisible to the lock it brings, so push first "
    "checks Redis for them (docs/upgrading.md)"
)


class OldFormatWaiters(LockkitError):
    """Callers of an older format still hold or wait; pushing the new engine now is unsafe."""

    exit_code = ExitCode.DRAIN


class DrainCheckImpossible(LockkitError):
    """The drain check is needed, and nobody said where Redis is."""


@dataclass(frozen=True)
class OldHolder:
    """A caller of an older format that holds a scope, from its own record."""

    scope: str
    format: int
    record: dict[str, Any] = field(default_factory=dict)

    def described(self) -> str:
        record = self.record
        who = f"{record.get('workflow_name') or 'a workflow'!r}"
        ids = ", ".join(
            f"{label} {record[name]}"
            for label, name in (("workflow", "workflow_id"), ("execution", "execution_id"))
            if record.get(name)
        )
        since = f" since {record['locked_at']}" if record.get("locked_at") else ""
        return (
            f"{self.scope} held by {who}{f' ({ids})' if ids else ''}{since}, format {self.format}"
        )


@dataclass(frozen=True)
class OldFormatActivity:
    holders: list[OldHolder]  # holders of an older format (compat)
    waiting: dict[str, int]  # scope -> callers waiting for it, counted by compat.format1_waiting
    v2_waiting: dict[str, int] = field(default_factory=dict)  # compat.format2_lines

    moved: list[str] = field(default_factory=list)  # held lanes and lines of an old namespace

    @property
    def held(self) -> list[str]:
        """The scopes a lock of compat.FORMAT1 holds."""
        return [h.scope for h in self.holders if h.format == compat.FORMAT1]

    @property
    def blocking_holders(self) -> list[OldHolder]:
        return list(self.holders)

    @property
    def drained(self) -> bool:
        return not (self.waiting or self.v2_waiting or self.holders or self.moved)


def old_format_activity(client: redis.Redis) -> OldFormatActivity:
    """Every caller of an older format than the engine sees natively: holders and waiters."""
    holders = [OldHolder(s, compat.FORMAT1, r) for s, r in compat.format1_holders(client)]
    waiting = compat.format1_waiting(client)
    states = LockStore(client).scan("*").states
    holders += [OldHolder(s, compat.FORMAT2, r) for s, r in compat.format2_holders(states)]
    return OldFormatActivity(holders, waiting, compat.format2_lines(states))


def _record_format(record: dict[str, Any] | None) -> int:
    """The format a holder's record says it is of (the current one when it says none)."""
    found = (record or {}).get("format")
    return found if isinstance(found, int) else formats.FORMAT


def namespace_activity(client: redis.Redis, namespace: str) -> list[str]:
    """Every held lane and every line of callers in key namespace `namespace`, described."""
    found = []
    for state in LockStore(client, keys.KeySchema(namespace)).scan("*").states:
        for lane in state.held:
            found.append(OldHolder(state.scope, _record_format(lane.meta),
                                   lane.meta or {}).described())  # fmt: skip
        if state.waiting:
            found.append(f"{state.scope}: {state.waiting} caller(s) in line")
    where = f"namespace {namespace!r}" if namespace else "the keys without a namespace"
    return [f"{item} (in {where})" for item in found]


def _listed(items: list[str]) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return "; ".join(items[:SHOWN]) + more


def require_drained(activity: OldFormatActivity) -> None:
    """Raise when an older format's callers still hold or wait: who holds what, and how many
    wait where."""
    if activity.drained:
        return
    holder_of = {h.scope: h for h in activity.holders if h.format == compat.FORMAT1}
    items = [
        f"{scope}: {n} caller(s) of format {compat.FORMAT1} waiting"
        + (f", behind {holder_of[scope].described()}" if scope in holder_of else "")
        for scope, n in activity.waiting.items()
    ]
    items += [holder.described() for holder in activity.blocking_holders]
    items += [
        f"{scope}: {n} caller(s) in line beside format {compat.FORMAT2}"
        for scope, n in activity.v2_waiting.items()
    ]
    items += activity.moved
    raise OldFormatWaiters(
        f"callers the pushed lock cannot see still hold or wait: {_listed(items)}; pushing "
        "now could let one of them in beside a new holder; nothing was sent",
        hint="push again once they are served or time out (`n8nlock locks` shows them); if "
        "their executions are gone (n8n restarted), `n8nlock push --no-drain-check` skips this",
    )


def _why(replaced: Replacements) -> str:
    named = [f"{key} (format {number})" for key, number in replaced.formats]
    named += [f"{key} (keys in {old!r})" for key, old in replaced.namespaces]
    return WHY.format(replaced=_listed(named))


def check_before_push(
    env: EnvFile, replaced: Replacements, redis_url: str | None
) -> OldFormatActivity | None:
    """The drain check of a push that replaces, on n8n, the locks `replaced`: of formats
    older than the engine sees natively, or in another key namespace than the env's now.
    Raise while their callers hold or wait, or when the check cannot run. None when the push
    replaces nothing that needs it."""
    if not replaced:
        return None
    why = _why(replaced)
    skip = "`n8nlock push --no-drain-check` skips the check when none can still run"
    try:
        target = target_for(env, redis_url)
        with open_redis(target) as client:
            activity = (
                old_format_activity(client) if replaced.formats else OldFormatActivity([], {})
            )
            for namespace in dict.fromkeys(old for _, old in replaced.namespaces):
                activity.moved.extend(namespace_activity(client, namespace))
    except NoRedisAddress as err:
        raise DrainCheckImpossible(
            f"{why}; {err.message}, so it cannot check; nothing was sent",
            hint=f"pass --redis-url redis://host:port/db (or set {URL_VARIABLE}), record it "
            f"with `n8nlock redis-credential --env {env.name} --link ID --host H`, or {skip}",
        ) from err
    except RedisUnreachable as err:
        raise RedisUnreachable(
            f"{why}; {err.message}; nothing was sent",
            hint=f"pass --redis-url with an address this machine reaches (n8n may reach Redis "
            f"under another name), or {skip}",
        ) from err
    require_drained(activity)
    return activity
