"""A duplicate guard in front of a rate limit and a lock, in a real n8n with a real Redis.

The guard runs first (a duplicate spends no rate budget and never waits for the lock); a call
that a later step turns away without the body (the rate limit denies it, the lock skips it)
must free its key unused, so that its retry runs.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

from tests.e2e.lockbed import Call, LockBed, held_lanes, run_cli
from tests.e2e.test_dedupe import _failing, call, skipped
from tests.e2e.test_lock_engine import most_at_once, spans

WINDOW = "60"  # seconds a success turns its key away: longer than any test here
# The lock's scope comes with each call: a static scope would be registered in the shared env's
# lockScopes, and the cleanup handler on n8n would then differ from the workspace's.
LOCK_SCOPE = "={{ $json.body.lock }}"


def install(bed: LockBed, name: str, *steps: tuple[str, ...]) -> str:
    """The test body with a guard on `body.scope`, then each of `steps` (n8nlock commands
    given the workflow key), validated and pushed."""
    key = f"{name}_{uuid.uuid4().hex[:6]}"
    path = bed.root / "workflows" / f"{key}.template.json"
    path.write_text(json.dumps(_failing(key), indent=2))
    guard = ("add-dedupe", "--key-expression", "={{ $json.body.scope }}",
             "--window-seconds", WINDOW, "--ttl-seconds", "60")  # fmt: skip
    for command, *flags in (guard, *steps):
        run_cli(bed.root, command, "--workflow-key", key, *flags)
    run_cli(bed.root, "validate", "--env", "e2e")
    run_cli(bed.root, "push", "--env", "e2e", "--activate", key)
    return key


def test_a_guard_in_front_of_a_lock_runs_each_key_once_and_the_bodies_one_at_a_time(
    lockbed: LockBed, unique_name: str
) -> None:
    scope = f"composed-{unique_name}"
    workflow = install(
        lockbed, "guard_lock",
        ("add-lock-to-workflow", "--scope-expression", LOCK_SCOPE, "--ttl-seconds", "60"),
    )  # fmt: skip
    keys = [f"{unique_name}-{k}" for k in range(3)]
    calls: list[tuple[str, Call]] = []
    threads = [
        threading.Thread(
            target=lambda k=k, i=i: calls.append(
                (k, call(lockbed, workflow, k, i, hold_ms=400, lock=scope))
            )
        )
        for i, k in enumerate(keys * 2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [c.status for _, c in calls] == [200] * 6, [c.body for _, c in calls]
    ran = {k: spans(lockbed, k) for k in keys}
    assert all(len(ran[k]) == 1 for k in keys), ran
    duplicates = skipped([c for _, c in calls])
    assert sorted(c.body["key"] for c in duplicates) == sorted(keys), [c.body for _, c in calls]
    assert all(c.body["reason"] == "duplicate" for c in duplicates)
    assert most_at_once([s for k in keys for s in ran[k].values()]) == 1, ran
    assert held_lanes(lockbed.redis, scope) == []
    assert held_lanes(lockbed.redis, f"dedupe-{workflow}-*") == []


def test_a_call_the_lock_skips_frees_its_key_so_that_its_retry_runs(
    lockbed: LockBed, unique_name: str
) -> None:
    scope = f"composed-skip-{unique_name}"
    workflow = install(
        lockbed, "guard_skip",
        ("add-lock-to-workflow", "--scope-expression", LOCK_SCOPE, "--on-busy", "skip",
         "--ttl-seconds", "60"),
    )  # fmt: skip
    first, second = f"{unique_name}-first", f"{unique_name}-second"
    holder = threading.Thread(
        target=call, args=(lockbed, workflow, first, 1), kwargs={"hold_ms": 2500, "lock": scope}
    )
    holder.start()
    time.sleep(1.0)
    busy = call(lockbed, workflow, second, 2, lock=scope)
    holder.join()
    assert busy.status == 200 and busy.body["skipped"] is True, busy.body
    assert busy.body["reason"] == "busy" and busy.body["scope"] == scope, busy.body
    retry = call(lockbed, workflow, second, 3, lock=scope)
    assert retry.status == 200 and not skipped([retry]), retry.body
    assert list(spans(lockbed, second)) == [3]
    # The skipped call never held the lock, so its release left the lock's line alone.
    assert held_lanes(lockbed.redis, scope) == []
    assert held_lanes(lockbed.redis, f"dedupe-{workflow}-*") == []
    # …and the retry's success uses the key up.
    again = call(lockbed, workflow, second, 4, lock=scope)
    assert again.body["reason"] == "duplicate", again.body


def test_a_call_the_rate_limit_denies_frees_its_key_so_that_its_retry_runs(
    lockbed: LockBed, unique_name: str
) -> None:
    workflow = install(
        lockbed, "guard_rate",
        ("add-rate-limit", "--scope-expression", f"composed-rate-{unique_name}", "--limit", "1",
         "--window-seconds", "3"),
    )  # fmt: skip
    first, second = f"{unique_name}-first", f"{unique_name}-second"
    assert not skipped([call(lockbed, workflow, first, 1)])
    denied = call(lockbed, workflow, second, 2)
    assert denied.status == 200 and denied.body["allowed"] is False, denied.body
    # A duplicate of a used key is turned away by the guard, before the rate limit.
    assert call(lockbed, workflow, first, 3).body["reason"] == "duplicate"
    # Retried until the limit lets it in (the denied call's count leaves the sliding window
    # with its bucket, up to a bucket after 3 s): never turned away as a duplicate.
    deadline = time.monotonic() + 15
    while True:
        time.sleep(1)
        retry = call(lockbed, workflow, second, 4)
        assert retry.status == 200 and not skipped([retry]), retry.body
        if retry.body.get("allowed") is not False or time.monotonic() > deadline:
            break
    assert list(spans(lockbed, second)) == [4], retry.body
    assert held_lanes(lockbed.redis, f"dedupe-{workflow}-*") == []
