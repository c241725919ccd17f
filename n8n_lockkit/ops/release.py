"""`n8nlock release SCOPE --force`: free one lane whatever its holder is doing.

The operator is shown the holder first; the lane is then released as its holder would release
it (its `served` advanced to the holder's ticket, its record marked released: format 3, the
ticket's own `holder:<t>` and the lane's copy when it is that ticket's; so the next ticket in
line enters at once), in one Lua script, and only if the record still names the holder that
was shown: a lane that changed hands meanwhile is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from n8n_lockkit.errors import ExitCode, LockkitError
from n8n_lockkit.ops.snapshot import ForeignKey, Lane
from n8n_lockkit.ops.store import LockStore

FORCE_RELEASED = "force_released"


class ForceRequired(LockkitError):
    """`release` without --force."""

    exit_code = ExitCode.USAGE


class UnknownScope(LockkitError):
    """No lane of that scope is held."""


class LaneNeeded(LockkitError):
    """Several lanes of the scope are held, or --lane names one that is not."""


class NotALock(LockkitError):
    """The scope's key exists but n8nlock did not write it."""


class ConfirmationNeeded(LockkitError):
    """No terminal to ask, and no --yes."""


class LockChanged(LockkitError):
    """The lane changed hands between being shown and being released; nothing was changed."""

    exit_code = ExitCode.REMOTE


def require_force(scope: str, force: bool) -> None:
    if not force:
        raise ForceRequired(
            f"release frees the lock on {scope!r} whatever its holder is doing, so it "
            "needs --force",
            hint=f"run `n8nlock release {scope} --force`: it shows the holder and asks before "
            "it frees the lock; to free only locks whose execution has ended, run `n8nlock reap`",
        )


def inspect(store: LockStore, scope: str, lane: int | None = None) -> Lane:
    """The held lane of `scope` as it is now (`lane` picks one when several are held)."""
    found = store.read(scope)
    if isinstance(found, ForeignKey):
        raise NotALock(
            f"{found.key} is {found.kind}: n8nlock did not write it",
            hint="nothing was changed; n8nlock only changes its own lock keys",
        )
    held = found.held if found is not None else []
    if not held:
        raise UnknownScope(
            f"no lock held on scope {scope!r}",
            hint="`n8nlock locks` lists the held locks and their scopes",
        )
    numbers = ", ".join(str(h.lane) for h in held)
    if lane is None and len(held) > 1:
        raise LaneNeeded(
            f"scope {scope!r} is held on {len(held)} lanes ({numbers})",
            hint=f"pick one with --lane, e.g. `n8nlock release {scope} --force --lane "
            f"{held[0].lane}`",
        )
    chosen = held[0] if lane is None else next((h for h in held if h.lane == lane), None)
    if chosen is None:
        raise LaneNeeded(
            f"lane {lane} of scope {scope!r} is not held (held: {numbers})",
            hint="`n8nlock locks --scope` shows the lanes that are held",
        )
    return chosen


def refuse_unconfirmed() -> None:
    raise ConfirmationNeeded(
        "release --force needs a confirmation, and there is no terminal to ask",
        hint="pass --yes to confirm in a script; nothing was changed",
    )


@dataclass(frozen=True)
class Released:
    done: bool
    why_not: str  # empty when done
    # released, or why nothing changed: released-meanwhile, withdrawn-meanwhile, expired-meanwhile
    outcome: str = "released"


# Why nothing changed, by the release script's answer.
NOT_RELEASED = {
    "released": "its holder released it meanwhile",
    "withdrawn": "it withdrew meanwhile (it had been skipped while it stalled, and held nothing)",
    "gone": "its record expired meanwhile (the lock's TTL ran out)",
}


_MEANWHILE = {
    "released": "released-meanwhile",
    "withdrawn": "withdrawn-meanwhile",
    "gone": "expired-meanwhile",
}


def force_release(store: LockStore, shown: Lane) -> Released:
    """Release the lane if its record still names the holder shown; count `force_released`."""
    outcome = store.release_if_holder(shown, FORCE_RELEASED)
    if outcome == "done":
        return Released(True, "")
    if outcome in NOT_RELEASED:
        return Released(False, NOT_RELEASED[outcome], _MEANWHILE[outcome])
    raise LockChanged(
        f"lane {shown.lane} of {shown.scope!r} changed hands after it was shown; nothing was "
        "changed",
        hint=f"run `n8nlock release {shown.scope} --force` again to see who holds it now",
    )
