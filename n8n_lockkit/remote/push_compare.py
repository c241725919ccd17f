"""Whether n8n already holds a workflow, allowing for what n8n itself rewrites on save.

Measured on n8n 2.41.1 and 1.123.81 (tests/e2e/test_push_activation.py proves it there): n8n
adds node ids and defaults, rewrites credential references, mints webhook ids for empty ones
and drops settings left at their default. Comparing naively would send an update on every
push; comparing as n8n stores keeps a second push write-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from n8n_lockkit.primitives import formats
from n8n_lockkit.primitives.catalogue import (
    ERROR_HANDLER,
    LOCK_ACQUISITION,
    LOCK_RELEASE,
    LOCK_RENEW,
)

# What n8n itself writes while a workflow runs: a schedule or polling trigger keeps its state
# in staticData, so an export's `"staticData": null` differs from n8n's copy after the first
# run. It is sent on create only; an update must not reset the trigger's state.
RUNTIME_FIELDS = frozenset({"staticData"})


def is_subset(expected: Any, actual: Any) -> bool:
    """Whether n8n holds everything we would send (it may add defaults of its own)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and is_subset(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(is_subset(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


def holds(body: Mapping[str, Any], remote: Mapping[str, Any]) -> bool:
    """Whether n8n already holds `body`, as n8n stores what it is sent.

    n8n adds node ids and defaults, rewrites credential references and drops settings left
    at their default, so a plain comparison would send an update on every push.
    """
    for key, value in body.items():
        actual = remote.get(key)
        if key in RUNTIME_FIELDS:
            continue
        if key == "nodes":
            same = _nodes_match(value, actual)
        elif key == "settings":
            same = isinstance(actual, dict) and all(
                setting_matches(k, v, actual) for k, v in value.items()
            )
        else:
            same = is_subset(value, actual)
        if not same:
            return False
    return True


def _nodes_match(expected: Any, actual: Any) -> bool:
    if not isinstance(expected, list) or not isinstance(actual, list):
        return is_subset(expected, actual)
    return len(expected) == len(actual) and all(
        node_matches(e, a) for e, a in zip(expected, actual, strict=True)
    )


def node_matches(expected: Any, actual: Any) -> bool:
    if not isinstance(expected, dict) or not isinstance(actual, dict):
        return is_subset(expected, actual)
    for key, value in expected.items():
        if key == "credentials" and isinstance(value, dict):
            same = credentials_match(value, actual.get(key))
        elif key == "webhookId" and value == "":
            same = True  # n8n mints a webhook id for an empty one, anew on every save
        else:
            same = key in actual and is_subset(value, actual[key])
        if not same:
            return False
    return True


def credentials_match(expected: Mapping[str, Any], actual: Any) -> bool:
    stored = actual if isinstance(actual, dict) else {}
    return all(
        kind in stored and credential_matches(ref, stored[kind]) for kind, ref in expected.items()
    )


def credential_matches(sent: Any, stored: Any) -> bool:
    """Whether n8n's stored credential reference is what it makes of the one we send.

    n8n keeps a known id and takes the name from its own record; it looks up a bare name
    (the old `"type": "Name"` form, or `{"id": null, …}`) or an id it does not know, and
    stores the one credential of that name, or `{"id": null, "name": …}` when it finds none.
    """
    sent_id = sent.get("id") if isinstance(sent, dict) else None
    if sent_id is not None and isinstance(stored, dict) and stored.get("id") == sent_id:
        return True
    return _credential_name(sent) is not None and _credential_name(sent) == _credential_name(stored)


def _credential_name(ref: Any) -> str | None:
    if isinstance(ref, str):
        return ref
    name = ref.get("name") if isinstance(ref, dict) else None
    return name if isinstance(name, str) else None


# Settings n8n drops when an update leaves them at their default ("DEFAULT", or the
# instance's execution timeout, -1 unless EXECUTIONS_TIMEOUT is set).
DEFAULT_SETTINGS = {"errorWorkflow": "DEFAULT", "timezone": "DEFAULT", "executionTimeout": -1}


def setting_matches(key: str, value: Any, actual: Mapping[str, Any]) -> bool:
    if DEFAULT_SETTINGS.get(key, object()) == value:
        return bool(actual.get(key, value) == value)
    return key in actual and is_subset(value, actual[key])


def is_live(remote: Mapping[str, Any] | None) -> bool:
    return bool(remote and remote.get("active"))


def draft_pending(remote: Mapping[str, Any]) -> bool:
    """n8n 2.x: the saved version is not the published one (a refused republish left it)."""
    active_version = remote.get("activeVersionId")
    return bool(active_version) and active_version != remote.get("versionId")


_LOCK_PRIMITIVES = frozenset(
    p.key for p in (LOCK_ACQUISITION, LOCK_RELEASE, LOCK_RENEW, ERROR_HANDLER)
)
_LOCK_ROLES = ("lock", "dedupe")


def replaced_namespace(
    key: str, local: Mapping[str, Any], remote: Mapping[str, Any] | None, namespace: str
) -> str | None:
    """The key namespace of the lock n8n holds in `remote`, when pushing `local` (whose lock
    writes in the env's `namespace`) moves it to another one: its callers still running hold
    and wait in the old namespace, where the new lock does not look. Else None."""
    if remote is None or formats.workflow_format(dict(local)) is None:
        return None
    if not (key in _LOCK_PRIMITIVES or _has_lock_nodes(remote)):
        return None
    found = formats.lock_namespace(dict(remote))
    return found if found is not None and found != namespace else None


def _has_lock_nodes(workflow: Mapping[str, Any]) -> bool:
    return any(
        (formats.role_of(node) or "").startswith(_LOCK_ROLES)
        for node in workflow.get("nodes") or []
        if isinstance(node, Mapping)
    )


def replaced_lock_format(
    key: str, local: Mapping[str, Any], remote: Mapping[str, Any] | None
) -> int | None:
    """The format of the lock n8n holds in `remote`, when pushing `local` replaces it with a
    lock of a format the engine sees natively and that one is older (the drain check is
    needed first: formats.needs_drain); else None. A lock primitive on n8n without a stamp
    was written before format stamps: format 1, or engine v2 before its stamps."""
    pushed = formats.workflow_format(dict(local))
    if remote is None or pushed is None or formats.needs_drain(pushed):
        return None
    stamp = formats.primitive_stamp(dict(remote))
    found = stamp[1] if stamp else formats.workflow_format(dict(remote))
    if found is None and key in _LOCK_PRIMITIVES:
        found = formats.LEGACY_FORMAT
    has_lock = key in _LOCK_PRIMITIVES or _has_lock_nodes(remote)
    return found if has_lock and formats.needs_drain(found) else None
