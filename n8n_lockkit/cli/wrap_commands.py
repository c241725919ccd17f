"""Commands that rewrite workflows: add-lock-to-workflow, add-rate-limit, unwrap."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import click

from n8n_lockkit.cli.common_options import (
    AppContext,
    F,
    apply_plan,
    dry_run_option,
    env_option,
    output_option,
    pass_app,
)
from n8n_lockkit.cli.completion import workflow_keys

# primitives.overlap.ON_BUSY, spelled out so that --help need not import the primitives.
ON_BUSY = ("wait", "error", "skip", "buffer-one")
# rewrite.wrap.ON_DENIED and ALGORITHMS, spelled out so that --help need not import the
# rewriter (a test keeps them equal).
ON_DENIED = ("passthrough", "stop", "error", "wait")
ALGORITHMS = ("sliding", "fixed")


def workflow_key_option(f: F) -> F:
    return click.option(
        "--workflow-key",
        required=True,
        metavar="KEY",
        help="The workflow to change: the key of its file in workflows/ (orders.json and "
        "orders.template.json are orders).",
        shell_complete=workflow_keys,
    )(f)


def scope_expression_option(what: str) -> Callable[[F], F]:
    def decorate(f: F) -> F:
        return click.option(
            "--scope-expression",
            "scope",
            required=True,
            metavar="EXPR",
            help=f"What {what}: a literal (orders), an expression "
            "(={{ 'order-' + $json.body.orderId }}) or a template (=api-{{ $json.userId }}).",
        )(f)

    return decorate


def max_wait_option(default: int, help_text: str) -> Callable[[F], F]:
    return click.option(
        "--max-wait-seconds",
        type=click.IntRange(1),
        default=default,
        show_default=True,
        help=help_text,
    )


@click.command("add-lock-to-workflow")
@workflow_key_option
@scope_expression_option("the lock is on; executions with the same scope run one at a time")
@click.option(
    "--ttl-seconds",
    type=click.IntRange(1),
    default=None,
    help="How long a lock lives if its holder never releases it. Default: the workflow's "
    "settings.executionTimeout + 60 s, else 3600 s.",
)
@max_wait_option(86400, "How long an execution waits for the lock before it fails.")
@click.option(
    "--on-busy",
    type=click.Choice(ON_BUSY),
    default=None,
    help="What an execution does when the scope is busy: wait for its turn (default), error "
    "(fail at once), skip (end at once with a skipped answer), or buffer-one (wait only when "
    "nobody else waits: run once more after the current run, skip the rest).  [default: wait]",
)
@click.option("--fail-fast", is_flag=True, help="Same as --on-busy error.")
@click.option(
    "--lock-on-error",
    is_flag=True,
    help="Set the workflow's error workflow to error_handler_lock_cleanup, which frees every "
    "lock a failed execution holds within seconds.",
)
@click.option(
    "--renew-before",
    "renew_before",
    multiple=True,
    metavar="NODE",
    help="Renew the lock (to a full TTL) each time NODE is about to run; stop the execution "
    "if the lock is no longer its own. Repeatable; name a node inside a loop for long loops.",
)
@click.option(
    "--max-concurrent",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="How many executions may hold the scope at once (a semaphore); waiters are served "
    "in arrival order.",
)
@click.option(
    "--via-subworkflow",
    is_flag=True,
    help="Call the lock_acquisition / lock_release primitives instead of putting the lock's "
    "nodes into the workflow (slower: two sub-workflow calls, about 65-90 ms each).",
)
@env_option("Env to register in", multiple=True)
@dry_run_option
@output_option()
@pass_app
def add_lock_to_workflow(
    app: AppContext,
    workflow_key: str,
    scope: str,
    ttl_seconds: int | None,
    max_wait_seconds: int,
    on_busy: str | None,
    fail_fast: bool,
    lock_on_error: bool,
    renew_before: Sequence[str],
    max_concurrent: int,
    via_subworkflow: bool,
    envs: Sequence[str],
    dry_run: bool,
    fmt: str,
) -> None:
    """Run a workflow's body under a lock, released once at the end.

    Puts the lock's nodes after each trigger (waiters are served in arrival order and
    sleep until their turn) and a single release after every branch of the body has
    finished; the body sees the trigger's items as before. A static scope is added to
    lockScopes of the env(s). Running it again changes nothing; other flags update the lock
    in place, and --via-subworkflow switches to (or back from) calling the primitives.

    \b
    Example:
        n8nlock add-lock-to-workflow --workflow-key orders \\
            --scope-expression "={{ 'order-' + $json.body.orderId }}" --ttl-seconds 300
        n8nlock add-lock-to-workflow --workflow-key sync --scope-expression sync \\
            --ttl-seconds 120 --renew-before "Handle Batch" --lock-on-error
        n8nlock add-lock-to-workflow --workflow-key enrich --scope-expression openai \\
            --max-concurrent 3
        n8nlock add-lock-to-workflow --workflow-key nightly --scope-expression nightly \\
            --on-busy buffer-one
    """
    from n8n_lockkit.rewrite.plans import wrap_plans as rewrite
    from n8n_lockkit.rewrite.wrapping.wrap import LockConfig
    from n8n_lockkit.workspace import envconfig

    workspace = app.workspace()
    selected = envconfig.select_envs(workspace, envs)
    if fail_fast and on_busy not in (None, "error"):
        raise click.UsageError(f"--fail-fast (--on-busy error) contradicts --on-busy {on_busy}")
    config = LockConfig(
        scope,
        ttl_seconds,
        max_wait_seconds,
        "error" if fail_fast else on_busy or "wait",
        lock_on_error,
        tuple(renew_before),
        max_concurrent,
        via_subworkflow,
    )
    apply_plan(
        workspace,
        rewrite.plan_add_lock(workspace, workflow_key, config, selected),
        dry_run=dry_run,
        fmt=fmt,
    )


@click.command("add-dedupe")
@workflow_key_option
@click.option(
    "--key-expression",
    required=True,
    help="What makes two executions duplicates: a literal, an n8n expression "
    "(={{ $json.body.eventId }}) or a template (=order-{{ $json.body.id }}).",
)
@click.option(
    "--window-seconds",
    type=click.IntRange(1),
    required=True,
    help="How long after a success its key still turns duplicates away.",
)
@click.option(
    "--on-duplicate",
    type=click.Choice(("skip", "error")),
    default="skip",
    show_default=True,
    help="skip: a duplicate ends at once with a skipped answer (HTTP 200 for a webhook); "
    "error: its execution fails with a message that names the key.",
)
@click.option(
    "--ttl-seconds",
    type=click.IntRange(1),
    default=None,
    help="How long a key stays taken by an execution that never ends. Default: the "
    "workflow's settings.executionTimeout + 60 s, else 3600 s.",
)
@env_option("Env to check the error handler in", multiple=True)
@dry_run_option
@output_option()
@pass_app
def add_dedupe(
    app: AppContext,
    workflow_key: str,
    key_expression: str,
    window_seconds: int,
    on_duplicate: str,
    ttl_seconds: int | None,
    envs: Sequence[str],
    dry_run: bool,
    fmt: str,
) -> None:
    """Run a workflow's body once per key: a guard against duplicate executions.

    The first execution with a key runs the body; another with that key that starts while
    it runs, or within --window-seconds after it succeeded, does not: it ends at once with
    {"skipped": true, "reason": "duplicate", "key": ..., "first_execution_id": ...} (or
    fails, with --on-duplicate error). Of simultaneous duplicates exactly one runs. A failed
    execution frees its key within seconds (the cleanup handler becomes the workflow's error
    workflow: `create-lock --include-error-handler` first). With add-rate-limit's limits and
    add-lock-to-workflow's lock on the same workflow the guard runs first: a duplicate spends
    no rate budget and never waits for the lock; a call the rate limit denies or the lock
    skips frees its key unused. Running it again changes nothing; `unwrap --only dedupe`
    takes it off.

    \b
    Example:
        n8nlock add-dedupe --workflow-key stripe-events \\
            --key-expression "={{ $json.body.id }}" --window-seconds 86400
        n8nlock add-dedupe --workflow-key nightly --key-expression nightly \\
            --window-seconds 600 --on-duplicate error
    """
    from n8n_lockkit.rewrite.plans import wrap_plans as rewrite
    from n8n_lockkit.workspace import envconfig

    workspace = app.workspace()
    selected = envconfig.select_envs(workspace, envs)
    plan = rewrite.plan_add_dedupe(
        workspace, workflow_key, key_expression, window_seconds, on_duplicate, ttl_seconds, selected
    )
    apply_plan(workspace, plan, dry_run=dry_run, fmt=fmt)


@click.command("add-rate-limit")
@workflow_key_option
@scope_expression_option("is counted; each scope has its own budget")
@click.option(
    "--limit",
    type=click.IntRange(1),
    required=True,
    help="Units (executions, or --cost-expression each) allowed per scope and window.",
)
@click.option(
    "--window-seconds", type=click.IntRange(1), required=True, help="Length of the window."
)
@click.option(
    "--algorithm",
    type=click.Choice(ALGORITHMS),
    default=None,
    help="sliding: never more than --limit in any window-long interval; fixed: per "
    "clock-aligned window (up to twice the limit across a window boundary). Default: what "
    "the scope's limit has, else sliding.",
)
@click.option(
    "--on-denied",
    type=click.Choice(ON_DENIED),
    default="passthrough",
    show_default=True,
    help="passthrough: end with {allowed: false, …} as output; stop: end quietly; "
    "error: fail the execution with the denial message; wait: wait for a place, then run.",
)
@max_wait_option(300, "With --on-denied wait: fail the execution when its place would come later.")
@click.option(
    "--cost-expression",
    "cost",
    default="1",
    show_default=True,
    metavar="EXPR",
    help="Units one execution spends: a number, or an expression (={{ $input.all().length }}).",
)
@dry_run_option
@output_option()
@pass_app
def add_rate_limit(
    app: AppContext,
    workflow_key: str,
    scope: str,
    limit: int,
    window_seconds: int,
    algorithm: str | None,
    on_denied: str,
    max_wait_seconds: int,
    cost: str,
    dry_run: bool,
    fmt: str,
) -> None:
    """Gate a workflow with a rate limit: a sliding or fixed window, refusing or waiting.

    Inserts the rate limit after each trigger; calls over the limit take the --on-denied path
    and the body does not run (with wait, they run once a place is free). With a lock too,
    the rate limit comes first. Each scope is its own limit: running it with another scope
    adds a second limit (a call one limit refuses counts in none); with the same scope it
    updates that limit in place. Running it again changes nothing.

    \b
    Example:
        n8nlock add-rate-limit --workflow-key enrich --scope-expression "=api-{{ $json.userId }}" \\
            --limit 10 --window-seconds 60 --on-denied error
        n8nlock add-rate-limit --workflow-key enrich --scope-expression openai \\
            --limit 500 --window-seconds 60 --on-denied wait \\
            --cost-expression "={{ $input.all().length }}"
    """
    from n8n_lockkit.rewrite.plans import wrap_plans as rewrite
    from n8n_lockkit.rewrite.wrapping.wrap import RateLimitConfig

    workspace = app.workspace()
    config = RateLimitConfig(
        scope,
        limit,
        window_seconds,
        on_denied,
        cost=cost,
        max_wait_seconds=max_wait_seconds,
    )
    apply_plan(
        workspace,
        rewrite.plan_add_rate_limit(workspace, workflow_key, config, algorithm=algorithm),
        dry_run=dry_run,
        fmt=fmt,
    )


@click.command("unwrap")
@workflow_key_option
@click.option(
    "--only",
    type=click.Choice(("lock", "rate-limit", "dedupe")),
    default=None,
    help="Take off only the lock, only the rate limits, or only the duplicate guard (the "
    "others stay). Default: all of them.",
)
@dry_run_option
@output_option()
@pass_app
def unwrap_workflow(
    app: AppContext, workflow_key: str, only: str | None, dry_run: bool, fmt: str
) -> None:
    """Take off what add-lock-to-workflow, add-rate-limit and add-dedupe added, notes and all.

    The workflow comes back as it was before: its nodes where they were, its settings as
    they were. Running it again changes nothing.

    \b
    Example:
        n8nlock unwrap --workflow-key orders
        n8nlock unwrap --workflow-key enrich --only rate-limit --dry-run
        n8nlock unwrap --workflow-key stripe-events --only dedupe
    """
    from n8n_lockkit.rewrite.plans import wrap_plans as rewrite

    workspace = app.workspace()
    apply_plan(
        workspace, rewrite.plan_unwrap(workspace, workflow_key, only), dry_run=dry_run, fmt=fmt
    )
