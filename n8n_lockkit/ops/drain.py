"""The drain a push needs when it replaces, on n8n, a lock whose callers the engine it brings
cannot see: until they are gone, none of them may still hold or wait.

- **An older format** than the engine sees natively (`formats.NATIVE_CALLERS_FORMAT`). The
  engine decides on format 3's keys alone (keys.py), so it sees none of these:
  - a format-1 holder (the old counter `n8n-lock-<scope>` and its record at `:meta`) or a
    format-1 caller still *waiting*: it loops inside the old lock_acquisition and would enter
    as soon as the old counter is free, beside a new holder. Format 1 counted its waiters:
    `n8nlock:arrived:<scope>` on joining the line, `n8nlock:left:<scope>` on leaving it;
  - a format-2 holder (its record is the lane's `meta:<k>`, without a `format` field, not
    released) and the callers in line behind one. A format-2 release leaves a released record
    at `meta:<k>` only, where format 3 also writes one at `holder:<t>`: such a record says
    format 2 is still around.
  Those formats had no key namespace: they are looked for in the keys without one.
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

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from n8n_lockkit.errors import ExitCode, LockkitError
from n8n_lockkit.ops.redis_access import (
    URL_VARIABLE,
    NoRedisAddress,
    RedisUnreachable,
    open_redis,
    target_for,
)
from n8n_lockkit.ops.snapshot import Lane, ScopeState
from n8n_lockkit.ops.store import LockStore
from n8n_lockkit.primitives import formats, keys
from n8n_lockkit.remote.push import Replacements
from n8n_lockkit.workspace.envconfig import EnvFile

SCAN_COUNT = 500
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
    holders: list[OldHolder]  # format-1 and format-2 holders
    waiting: dict[str, int]  # scope -> format-1 callers waiting for it
    v2_waiting: dict[str, int] = field(default_factory=dict)  # scope -> in line near format 2

    moved: list[str] = field(default_factory=list)  # held lanes and lines of an old namespace

    @property
    def held(self) -> list[str]:
        """The scopes a format-1 lock holds."""
        return [h.scope for h in self.holders if h.format == formats.LEGACY_FORMAT]

    @property
    def blocking_holders(self) -> list[OldHolder]:
        return list(self.holders)

    @property
    def drained(self) -> bool:
        return not (self.waiting or self.v2_waiting or self.holders or self.moved)


def _count(value: bytes | str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def _record(raw: bytes | str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _format1(client: redis.Redis) -> tuple[list[OldHolder], dict[str, int]]:
    """Format-1 holders (`n8n-lock-<scope>:meta`; engine v2's records end in a number and never
    match) and waiters (arrived - left), found with SCAN, never KEYS."""
    names = sorted(
        client.scan_iter(match=f"{keys.LOCK_PREFIX}*{keys.META_SUFFIX}", count=SCAN_COUNT)
    )
    records = client.mget(names) if names else []
    holders = [
        OldHolder(
            name.removeprefix(keys.LOCK_PREFIX).removesuffix(keys.META_SUFFIX),
            formats.LEGACY_FORMAT,
            _record(raw),
        )
        for name, raw in zip(names, records, strict=True)
    ]
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
    return holders, dict(sorted(waiting.items()))


def _format2_record(lane: Lane) -> bool:
    """The lane's record is format 2's: a holder's (no `format`, not released), or a
    released one that no format-3 record of its ticket (`holder:<t>`) stands beside."""
    if lane.format == 2:
        return True
    copy = lane.copy
    if copy is None or "format" in copy or not copy.get("released"):
        return False
    return lane.last_record is None or lane.last_record.raw is None


def _format2(states: Sequence[ScopeState]) -> tuple[list[OldHolder], dict[str, int]]:
    holders: list[OldHolder] = []
    waiting: dict[str, int] = {}
    for state in states:
        holders += [
            OldHolder(state.scope, 2, lane.meta or {}) for lane in state.lanes if lane.format == 2
        ]
        if state.waiting and any(_format2_record(lane) for lane in state.lanes):
            waiting[state.scope] = state.waiting
    return holders, waiting


def old_format_activity(client: redis.Redis) -> OldFormatActivity:
    """Every caller of an older format than the engine sees natively: holders and waiters."""
    v1_holders, v1_waiting = _format1(client)
    v2_holders, v2_waiting = _format2(LockStore(client).scan("*").states)
    return OldFormatActivity([*v1_holders, *v2_holders], v1_waiting, v2_waiting)


def namespace_activity(client: redis.Redis, namespace: str) -> list[str]:
    """Every held lane and every line of callers in key namespace `namespace`, described."""
    found = []
    for state in LockStore(client, keys.KeySchema(namespace)).scan("*").states:
        for lane in state.held:
            found.append(OldHolder(state.scope, lane.format or formats.FORMAT,
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
    v1_holder = {h.scope: h for h in activity.holders if h.format == formats.LEGACY_FORMAT}
    items = [
        f"{scope}: {n} caller(s) of format 1 waiting"
        + (f", behind {v1_holder[scope].described()}" if scope in v1_holder else "")
        for scope, n in activity.waiting.items()
    ]
    items += [holder.described() for holder in activity.blocking_holders]
    items += [
        f"{scope}: {n} caller(s) in line beside format 2"
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
