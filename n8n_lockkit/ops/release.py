"""`n8nlock release SCOPE --force`: delete one lock whatever its holder is doing.

The operator is shown the keys first; they are deleted only if they are still exactly what was
shown, so a lock that was released and taken by someone else meanwhile is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from n8n_lockkit.errors import ExitCode, LockkitError
from n8n_lockkit.ops.store import ForeignKey, LockState, LockStore

FORCE_RELEASED = "force_released"


class ForceRequired(LockkitError):
    """`release` without --force."""

    exit_code = ExitCode.USAGE


class UnknownScope(LockkitError):
    """No lock (neither counter nor record) under that scope."""


class NotALock(LockkitError):
    """The scope's key exists but n8nlock did not write it."""


class ConfirmationNeeded(LockkitError):
    """No terminal to ask, and no --yes."""


class LockChanged(LockkitError):
    """The lock changed between being shown and being deleted; nothing was deleted."""

    exit_code = ExitCode.REMOTE


def require_force(scope: str, force: bool) -> None:
    if not force:
        raise ForceRequired(
            f"release deletes the lock on {scope!r} whatever its holder is doing, so it "
            "needs --force",
            hint=f"run `n8nlock release {scope} --force`: it shows the holder and asks before "
            "it deletes; to free only locks whose execution has ended, run `n8nlock reap`",
        )


def inspect(store: LockStore, scope: str) -> LockState:
    """The lock on `scope` as it is now; refuses an unknown scope or a key n8nlock did not write."""
    found = store.read(scope)
    if isinstance(found, ForeignKey):
        raise NotALock(
            f"{found.key} is {found.kind}: n8nlock did not write it",
            hint="nothing was deleted; n8nlock only deletes its own lock keys",
        )
    if not found.keys_present:
        raise UnknownScope(
            f"no lock on scope {scope!r} (no key {found.key})",
            hint="`n8nlock locks` lists the held locks and their scopes",
        )
    return found


def refuse_unconfirmed() -> None:
    raise ConfirmationNeeded(
        "release --force needs a confirmation, and there is no terminal to ask",
        hint="pass --yes to confirm in a script; nothing was deleted",
    )


@dataclass(frozen=True)
class Released:
    deleted: list[str]  # empty when the lock was released by its holder meanwhile


def force_release(store: LockStore, shown: LockState) -> Released:
    """Delete exactly the keys that were shown, if they are unchanged; count `force_released`."""
    if store.delete_if_unchanged(shown, FORCE_RELEASED):
        return Released(shown.keys_present)
    now = store.read(shown.scope)
    if isinstance(now, LockState) and not now.keys_present:
        return Released([])
    raise LockChanged(
        f"the lock on {shown.scope!r} changed after it was shown (a new holder, or a renewal); "
        "nothing was deleted",
        hint=f"run `n8nlock release {shown.scope} --force` again to see who holds it now",
    )
