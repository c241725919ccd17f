"""Commands that operate the locks in Redis: locks, release, reap, stats, forget."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from n8n_lockkit.cli.common_options import (
    AppContext,
    F,
    dry_run_option,
    env_option,
    one_env,
    output_option,
    pass_app,
    redis_url_option,
    scope_filter_option,
)
from n8n_lockkit.cli.completion import workflow_keys
from n8n_lockkit.cli.output import echo_json, progress, show_lines, warn
from n8n_lockkit.errors import LockkitError

if TYPE_CHECKING:
    from n8n_lockkit.ops.snapshot import Lane, Scan
    from n8n_lockkit.ops.store import LockStore
    from n8n_lockkit.workspace.envconfig import EnvFile


def redis_options(f: F) -> F:
    """Which env's Redis and n8n the operator commands use, and where to reach that Redis."""
    f = redis_url_option(
        "Reach Redis here instead of at the env file's redis: record (the CLI may reach it "
        "under another name than n8n does), e.g. redis://:password@host:6379/0."
    )(f)
    return env_option("Env whose Redis and n8n to use")(f)


@contextmanager
def lock_store(env: EnvFile, redis_url: str | None) -> Iterator[LockStore]:
    from n8n_lockkit.ops.redis_access import open_redis, target_for
    from n8n_lockkit.ops.store import LockStore
    from n8n_lockkit.primitives import keys

    with open_redis(target_for(env, redis_url)) as client:
        yield LockStore(client, keys.KeySchema(env.key_prefix))


def warn_foreign(scan: Scan) -> None:
    for key in scan.foreign:
        warn(f"{key.key} is {key.kind}; n8nlock did not write it and leaves it alone")


@click.command("locks")
@redis_options
@scope_filter_option
@output_option()
@pass_app
def locks_command(
    app: AppContext, env_name: str | None, redis_url: str | None, scope: str | None, fmt: str
) -> None:
    """List every held lock: scope, lane (of a --max-concurrent semaphore), holder workflow
    and execution (with its link in n8n), lock id, fence (the holder's ticket), how long it
    has been held and when it expires.

    Keys are found with SCAN, never KEYS. WAITING counts the callers in line for the scope:
    tickets drawn and not yet served, minus the holders (a caller that died counts until the
    caller behind it skips it). A record without TTL is flagged, and so are locks of the
    format before engine v2 that are still held.

    Then every add-debounce key with events waiting in its open burst (--scope matches
    <workflow key>:<key>): how many, their tickets, whether the burst's waiter looks (alive;
    stale after 6 s, and the key's next event takes the burst over), the burst's age (its
    first waiting event) and how long the key has been quiet (its last).

    \b
    Example:
        n8nlock locks
        n8nlock locks --scope 'order-*' -o json
    """
    from n8n_lockkit.ops import debounce, locks, report

    env = one_env(app.workspace(), env_name)
    with lock_store(env, redis_url) as store:
        scan = locks.checked_scan(store, scope)
        bursts = debounce.open_bursts(store, scope)
    warn_foreign(scan)
    if scan.v1_held:
        warn(locks.v1_warning(scan.v1_held))
    n8n_url = str(env.data["n8n"]["url"])
    if fmt == "json":
        document = locks.locks_document(scan, n8n_url)
        document["debounces"] = [burst.as_dict() for burst in bursts]
        echo_json(document)
        return
    held = locks.held_lanes(scan)
    lock_lines = report.locks_lines(scan, n8n_url)
    show_lines(lock_lines)
    if bursts:
        show_lines(([""] if lock_lines else []) + report.debounce_lines(bursts))
    if held:
        click.echo(f"{len(held)} lock(s) held. {report.WAITING_NOTE}.", err=True)
    else:
        click.echo("no lock is held", err=True)
    if bursts:
        waiting = sum(len(burst.waiting) for burst in bursts)
        click.echo(f"{waiting} debounced event(s) waiting on {len(bursts)} key(s)", err=True)


def stdin_is_terminal() -> bool:
    return sys.stdin.isatty()


def pause(seconds: float) -> None:
    time.sleep(seconds)


@click.command("release")
@click.argument("scope")
@click.option("--force", is_flag=True, help="Required: free the lock whoever holds it.")
@click.option("--yes", is_flag=True, help="Do not ask before freeing it (for scripts).")
@click.option(
    "--lane",
    type=click.IntRange(0),
    metavar="K",
    help="The lane to free when several lanes of a --max-concurrent scope are held.",
)
@redis_options
@dry_run_option
@output_option()
@pass_app
def release_command(
    app: AppContext,
    scope: str,
    force: bool,
    yes: bool,
    lane: int | None,
    env_name: str | None,
    redis_url: str | None,
    dry_run: bool,
    fmt: str,
) -> None:
    """Free the lock on SCOPE whatever its holder is doing.

    Shows the holder, asks (unless --yes), then releases the lock as its holder would: its
    record is marked released and the next caller in line enters at once. That happens only
    if the record still names the holder shown; a lock that changed hands meanwhile is left
    alone (exit 4). Counted as force_released in `n8nlock stats`. The holder's execution is
    not stopped. To free only locks whose execution has ended, use `n8nlock reap`.
    --dry-run shows the holder and what the release would change, and changes nothing
    (without --force too); -o json prints {dry_run, lock, outcome, message}, outcome being
    released, dry-run, declined, or released-, withdrawn- or expired-meanwhile.

    \b
    Example:
        n8nlock release order-42 --dry-run
        n8nlock release order-42 --force
        n8nlock release order-42 --force --yes -o json
        n8nlock release pool --force --lane 2
    """
    from n8n_lockkit.ops import locks, release, report

    if not dry_run:
        release.require_force(scope, force)
    env = one_env(app.workspace(), env_name)
    n8n_url = str(env.data["n8n"]["url"])
    with lock_store(env, redis_url) as store:
        shown = release.inspect(store, scope, lane)
        if fmt != "json":
            show_lines(report.release_lines(shown, n8n_url))
        outcome, message = _release(store, shown, dry_run=dry_run, yes=yes)
    if fmt == "json":
        lock = locks.lock_as_dict(shown, n8n_url, 0)
        del lock["waiting"]  # release reads one lane, not the line
        echo_json({"dry_run": dry_run, "lock": lock, "outcome": outcome, "message": message})
    elif outcome == "released":
        progress("release", shown.key)
    else:
        click.echo(message, err=True)


def _release(store: LockStore, shown: Lane, *, dry_run: bool, yes: bool) -> tuple[str, str]:
    """Ask (unless --yes), then release: (outcome, what happened)."""
    from n8n_lockkit.ops import release

    if dry_run:
        return "dry-run", "dry run, nothing changed: release --force would free this lock"
    if not yes:
        if not stdin_is_terminal():
            release.refuse_unconfirmed()
        if not click.confirm("Free this lock?", default=False, err=True):
            return "declined", "nothing was changed"
    released = release.force_release(store, shown)
    if released.done:
        return "released", f"released {shown.key}: the next caller in line enters"
    return released.outcome, f"{released.why_not}: nothing was changed"


@click.command("reap")
@redis_options
@scope_filter_option
@dry_run_option
@click.option(
    "--grace",
    "grace_seconds",
    type=click.IntRange(5, 3600),
    default=30,
    show_default=True,
    metavar="SECONDS",
    help="A record with no holder to ask about and no TTL is deleted only if it is unchanged "
    "after this long; --idle forgets a scope only this long after its last release.",
)
@click.option(
    "--idle",
    is_flag=True,
    help="Also delete the ticket and lane counters of scopes nobody holds or waits for.",
)
@output_option()
@pass_app
def reap_command(
    app: AppContext,
    env_name: str | None,
    redis_url: str | None,
    scope: str | None,
    dry_run: bool,
    grace_seconds: int,
    idle: bool,
    fmt: str,
) -> None:
    """Free every lock whose holder execution is no longer running or waiting.

    Each holder is looked up in n8n (GET /api/v1/executions/{id}): ended (success, error,
    crashed, canceled) or gone, its lock is released as the holder would have released it
    and the next caller in line enters; new, running or waiting, it is kept. The release
    compares the lock id, so a lock taken meanwhile is left alone. A record without TTL that
    holds nothing is deleted when it is still the same after --grace seconds. A caller in
    line that never takes its turn is skipped by the caller behind it, not by reap.

    Engine v2 keeps two counters per scope (its ticket, and one per lane) without TTL; --idle
    deletes them for scopes nobody holds or waits for, checked atomically against a caller
    arriving. Deleting them restarts the scope's fence at 1. --dry-run goes the same way and
    changes nothing.

    \b
    Example:
        n8nlock reap --dry-run
        n8nlock reap --grace 60
        n8nlock reap --idle
    """
    from n8n_lockkit.ops import locks, reap, report
    from n8n_lockkit.remote import connection

    env = one_env(app.workspace(), env_name)
    client = connection.client_for(env)  # no API key: stop before anything is read
    try:
        with lock_store(env, redis_url) as store:
            scan = locks.checked_scan(store, scope)
            warn_foreign(scan)
            reaper = reap.Reaper(
                store,
                client,
                grace_seconds=grace_seconds,
                dry_run=dry_run,
                sleep=pause,
                announce=lambda message: click.echo(message, err=True),
                idle=idle,
            )
            decisions = reaper.run(scan.states)
    finally:
        client.close()
    freed = sum(d.action == "freed" for d in decisions)
    forgot = sum(d.action == "forgot" for d in decisions)
    if fmt == "json":
        echo_json(
            {
                "dry_run": dry_run,
                "grace_seconds": grace_seconds,
                "freed": freed,
                "forgot": forgot,
                "locks": [d.as_dict() for d in decisions],
            }
        )
        return
    show_lines(report.reap_lines(decisions))
    summary = f"{freed} lock(s) freed, {sum(d.action == 'kept' for d in decisions)} kept"
    if idle:
        summary += f", {forgot} idle scope(s) forgotten"
    click.echo(f"dry run, nothing changed: {summary}" if dry_run else summary, err=True)


@click.command("stats")
@redis_options
@scope_filter_option
@click.option(
    "--hours",
    type=click.IntRange(1, 192),
    default=24,
    show_default=True,
    help="Sum the last N hours (the counters are kept 8 days).",
)
@output_option("text", "json", "prometheus")
@pass_app
def stats_command(
    app: AppContext,
    env_name: str | None,
    redis_url: str | None,
    scope: str | None,
    hours: int,
    fmt: str,
) -> None:
    """Per scope: acquisitions, waits, timeouts, fail-fast refusals, force releases, reaps and
    heals over the last N hours, with wait-time percentiles.

    The primitives count each event in an hourly Redis counter; this sums them. Acquisitions
    are the callers that arrived minus those that gave up (busy, timeout). A wait is counted
    in one bucket of 0.1, 0.5, 1, 2, 5, 10, 30, 60 or 300 s (or above); an acquisition that
    did not wait is in the first. A percentile is an upper-bound estimate: the bound of the
    bucket it falls in.

    Then per add-debounce key (--scope matches <workflow key>:<key>): the events it stored
    and the bursts it cut, read from the debounce's own keys, which live a day: so over the
    last N hours, at most 24. An event that drew its ticket again counts twice.

    \b
    Example:
        n8nlock stats
        n8nlock stats --scope 'order-*' --hours 1 -o json
        n8nlock stats -o prometheus > /var/lib/node_exporter/n8nlock.prom
    """
    from n8n_lockkit.ops import debounce, prometheus, report, stats

    with lock_store(one_env(app.workspace(), env_name), redis_url) as store:
        now_ms = store.now_ms()
        found = stats.collect(store, scope, hours, now_ms)
        debounced = debounce.collect(store, scope, hours, now_ms)
    if fmt == "prometheus":
        click.echo(prometheus.exposition(found, hours, debounced), nl=False)
    elif fmt == "json":
        echo_json(
            {
                "hours": hours,
                "scopes": [entry.as_dict() for entry in found],
                "debounce_hours": debounce.window_hours(hours),
                "debounces": [entry.as_dict() for entry in debounced],
            }
        )
        return
    if found:
        show_lines(report.stats_lines(found))
    else:
        click.echo(f"no lock activity counted in the last {hours} h", err=True)
    if debounced:
        show_lines(([""] if found else []) + report.debounce_stats_lines(debounced))
        click.echo(
            f"debounce: events stored and bursts cut in the last {debounce.window_hours(hours)} h",
            err=True,
        )


@click.command("forget")
@click.option(
    "--workflow-key",
    required=True,
    metavar="KEY",
    help="The workflow add-dedupe guards: the key of its file in workflows/.",
    shell_complete=workflow_keys,
)
@click.option(
    "--key",
    "key_value",
    required=True,
    metavar="VALUE",
    help="The key as the guard's answers name it (\"key\"): its key expression's value.",
)
@redis_options
@dry_run_option
@output_option()
@pass_app
def forget_command(
    app: AppContext,
    workflow_key: str,
    key_value: str,
    env_name: str | None,
    redis_url: str | None,
    dry_run: bool,
    fmt: str,
) -> None:
    """Let one key of a duplicate guard run again before its window ends.

    After a success, add-dedupe turns the key's duplicates away for --window-seconds.
    forget shows that success (its execution, when, how long it still counts) and deletes
    its mark, so the next execution with the key runs its body: for an event that must be
    processed again (a fix deployed, a replay). The mark is deleted only if it is still the
    one shown. An execution of the key that runs now is left alone (`n8nlock release` frees
    its lock). Running it again changes nothing; --dry-run only shows.

    \b
    Example:
        n8nlock forget --workflow-key stripe-events --key evt_1MqQ2x --dry-run
        n8nlock forget --workflow-key stripe-events --key evt_1MqQ2x -o json
    """
    from n8n_lockkit.ops import forget
    from n8n_lockkit.rewrite.plans import wrap_plans as plans
    from n8n_lockkit.rewrite.wrapping import unwrap

    workspace = app.workspace()
    _, _, workflow = plans.load_workflow(workspace, workflow_key)
    if unwrap.read_guard(workflow) is None:
        raise LockkitError(
            f"workflow {workflow_key!r} has no duplicate guard, so it marks no key",
            hint=f"add one with `n8nlock add-dedupe --workflow-key {workflow_key} …`",
        )
    env = one_env(workspace, env_name)
    with lock_store(env, redis_url) as store:
        shown = forget.inspect(store, workflow_key, key_value)
        outcome = "dry-run" if dry_run or shown.done is None else forget.forget(store, shown)
    if fmt == "json":
        echo_json({**shown.as_dict(), "dry_run": dry_run, "outcome": outcome})
        return
    show_lines(shown.lines())
    if shown.done is None:
        return
    messages = {
        "dry-run": "dry run, nothing changed: forget would delete this mark",
        "forgotten": "forgot it: the next execution with this key runs its body",
        "expired": "its window ended meanwhile: the next execution with this key runs its body",
    }
    click.echo(messages[outcome], err=True)
