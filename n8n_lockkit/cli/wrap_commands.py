"""Commands that rewrite workflows: add-lock-to-workflow, add-rate-limit, unwrap."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import click

from n8n_lockkit.cli.common_options import (
    AppContext,
    Count,
    F,
    OneOf,
    apply_plan,
    dry_run_option,
    env_option,
    output_option,
    pass_app,
)
from n8n_lockkit.cli.completion import workflow_keys
from n8n_lockkit.errors import OptionError

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


def scope_expression_option(what: str, when: str) -> Callable[[F], F]:
    def decorate(f: F) -> F:
        return click.option(
            "--scope-expression",
            "scope",
            metavar="EXPR",
            help=f"What {what}: a literal (orders), an expression "
            "(={{ 'order-' + $json.body.orderId }}) or a template (=api-{{ $json.userId }}); "
            f"$json outside {{{{ }}}} is refused. {when}",
        )(f)

    return decorate


def max_wait_option(default: int, help_text: str) -> Callable[[F], F]:
    return click.option(
        "--max-wait-seconds",
        type=Count(),
        metavar="SECONDS",
        help=f"{help_text} Default: {default}.",
    )


def ttl_option(what: str) -> Callable[[F], F]:
    return click.option(
        "--ttl-seconds",
        type=Count(),
        metavar="SECONDS",
        help=f"How long {what}; at least 5 (a release refuses within 2 s of the expiry). "
        "Default: the workflow's settings.executionTimeout + 60 s, else 3600 s.",
    )


@click.command("add-lock-to-workflow")
@workflow_key_option
@scope_expression_option(
    "the lock is on; executions with the same scope run one at a time",
    "Needed for a new lock.",
)
@ttl_option("a lock lives if its holder never releases it")
@max_wait_option(86400, "How long an execution waits for the lock before it fails.")
@click.option(
    "--on-busy",
    type=OneOf(ON_BUSY, "wait"),
    help="What an execution does when the scope is busy: wait for its turn (the default), "
    "error (fail at once), skip (end at once with a skipped answer), or buffer-one (wait only "
    "when nobody else waits: run once more after the current run, skip the rest).",
)
@click.option(
    "--fail-fast/--no-fail-fast",
    default=None,
    help="Same as --on-busy error; --no-fail-fast turns error back into wait.",
)
@click.option(
    "--lock-on-error/--no-lock-on-error",
    default=None,
    help="Set the workflow's error workflow to error_handler_lock_cleanup, which frees every "
    "lock a failed execution holds within seconds.",
)
@click.option(
    "--renew-before",
    "renew_before",
    multiple=True,
    metavar="NODE",
    help="Renew the lock (to a full TTL) each time NODE is about to run; stop the execution "
    "if the lock is no longer its own. Repeatable, and replaces the renewals the lock has; "
    "name a node inside a loop for long loops.",
)
@click.option("--no-renew-before", is_flag=True, help="Take every renewal off the lock.")
@click.option(
    "--max-concurrent",
    type=Count(),
    metavar="N",
    help="How many executions may hold the scope at once (a semaphore); waiters are served "
    "in arrival order. Default: 1.",
)
@click.option(
    "--via-subworkflow/--no-via-subworkflow",
    default=None,
    help="Call the lock_acquisition / lock_release primitives instead of putting the lock's "
    "nodes into the workflow (slower: two sub-workflow calls, about 65-90 ms each).",
)
@click.option(
    "--park/--no-park",
    default=None,
    help='Waiters further back than the next in line park (a Wait "On Webhook Call") '
    "instead of sleeping: they hold no n8n concurrency slot (n8n Cloud plans, "
    "N8N_CONCURRENCY_PRODUCTION_LIMIT) and poll nothing; each release wakes the one two "
    "behind it. A webhook that answers with its last node then answers through a Respond "
    "to Webhook node (Lock Respond). Default: off. Not with --via-subworkflow; see "
    "docs/parking.md.",
)
@env_option("Env to register in", multiple=True)
@dry_run_option
@output_option()
@pass_app
def add_lock_to_workflow(
    app: AppContext,
    workflow_key: str,
    scope: str | None,
    ttl_seconds: int | str | None,
    max_wait_seconds: int | str | None,
    on_busy: str | None,
    fail_fast: bool | None,
    lock_on_error: bool | None,
    renew_before: Sequence[str],
    no_renew_before: bool,
    max_concurrent: int | str | None,
    via_subworkflow: bool | None,
    park: bool | None,
    envs: Sequence[str],
    dry_run: bool,
    fmt: str,
) -> None:
    """Run a workflow's body under a lock, released once at the end.

    Puts the lock's nodes after each trigger (waiters are served in arrival order and
    sleep until their turn, or park with --park) and a single release after every branch
    of the body has finished; the body sees the trigger's items as before.
    A static scope is added to lockScopes of the env(s), and a static scope the lock had
    leaves them when no workflow locks it any more. Run again, it changes only what is
    given: an option left out keeps what the lock has, `default` puts a value back to its
    default, --no-FLAG turns a flag off; each run prints the settings it changed
    (old → new), -o json all of them.

    \b
    Example:
        n8nlock add-lock-to-workflow --workflow-key orders \\
            --scope-expression "={{ 'order-' + $json.body.orderId }}" --ttl-seconds 300
        n8nlock add-lock-to-workflow --workflow-key sync --scope-expression sync \\
            --ttl-seconds 120 --renew-before "Handle Batch" --lock-on-error
        n8nlock add-lock-to-workflow --workflow-key enrich --scope-expression openai \\
            --max-concurrent 3
        n8nlock add-lock-to-workflow --workflow-key nightly --on-busy buffer-one
        n8nlock add-lock-to-workflow --workflow-key chat --scope-expression \\
            "={{ $json.body.chatId }}" --park
        n8nlock add-lock-to-workflow --workflow-key orders --ttl-seconds default
    """
    from n8n_lockkit.rewrite.plans import wrap_plans as rewrite
    from n8n_lockkit.rewrite.plans.options import LockOptions
    from n8n_lockkit.workspace import envconfig

    if no_renew_before and renew_before:
        raise OptionError(
            "--no-renew-before contradicts --renew-before", hint="give only one of them"
        )
    workspace = app.workspace()
    selected = envconfig.select_envs(workspace, envs)
    given = LockOptions(
        scope=scope,
        ttl_seconds=ttl_seconds,
        max_wait_seconds=max_wait_seconds,
        on_busy=on_busy,
        fail_fast=fail_fast,
        lock_on_error=lock_on_error,
        renew_before=() if no_renew_before else (tuple(renew_before) or None),
        max_concurrent=max_concurrent,
        via_subworkflow=via_subworkflow,
        park=park,
    )
    apply_plan(
        workspace,
        rewrite.plan_add_lock(workspace, workflow_key, given, selected),
        dry_run=dry_run,
        fmt=fmt,
    )


@click.command("add-dedupe")
@workflow_key_option
@click.option(
    "--key-expression",
    metavar="EXPR",
    help="What makes two executions duplicates: a literal, an n8n expression "
    "(={{ $json.body.eventId }}) or a template (=order-{{ $json.body.id }}). Needed for a "
    "new guard.",
)
@click.option(
    "--window-seconds",
    type=Count(resettable=False),
    metavar="SECONDS",
    help="How long after a success its key still turns duplicates away. Needed for a new guard.",
)
@click.option(
    "--on-duplicate",
    type=OneOf(("skip", "error", "replay"), "skip"),
    help="skip (the default): a duplicate ends at once with a skipped answer (HTTP 200 for a "
    "webhook); error: its execution fails with a message that names the key; replay (webhooks "
    "that answer with their last node or a Respond to Webhook node): it gets the first run's "
    "answer (status, content type, body), waiting for a first run that still runs (up to "
    "--max-wait-seconds, then 409).",
)
@max_wait_option(
    60,
    "With --on-duplicate replay: how long a duplicate waits for a first run that still runs; "
    "past it, it gets 409 with JSON that names the first execution.",
)
@click.option(
    "--max-answer-bytes",
    type=Count(),
    metavar="BYTES",
    help="With --on-duplicate replay: the largest answer body stored (default 65536); the "
    "duplicates of a larger one get a skipped answer that says so.",
)
@ttl_option("a key stays taken by an execution that never ends")
@env_option("Env to check the error handler in", multiple=True)
@dry_run_option
@output_option()
@pass_app
def add_dedupe(
    app: AppContext,
    workflow_key: str,
    key_expression: str | None,
    window_seconds: int | None,
    on_duplicate: str | None,
    max_wait_seconds: int | str | None,
    max_answer_bytes: int | str | None,
    ttl_seconds: int | str | None,
    envs: Sequence[str],
    dry_run: bool,
    fmt: str,
) -> None:
    """Run a workflow's body once per key: a guard against duplicate executions.

    The first execution with a key runs the body; another with that key that starts while
    it runs, or within --window-seconds after it succeeded, does not: it ends at once with
    {"skipped": true, "reason": "duplicate", "key": ..., "first_execution_id": ...} (or
    fails, with --on-duplicate error; with --on-duplicate replay it waits for the first run
    and gets its answer). Of simultaneous duplicates exactly one runs. A failed
    execution frees its key within seconds (the cleanup handler becomes the workflow's error
    workflow: `create-lock --include-error-handler` first). With add-rate-limit's limits and
    add-lock-to-workflow's lock on the same workflow the guard runs first: a duplicate spends
    no rate budget and never waits for the lock; a call the rate limit denies or the lock
    skips frees its key unused. Run again, it changes only what is given (an option left
    out keeps what the guard has, `default` puts a value back to its default) and prints
    what it changed; `unwrap --only dedupe` takes it off.

    \b
    Example:
        n8nlock add-dedupe --workflow-key stripe-events \\
            --key-expression "={{ $json.body.id }}" --window-seconds 86400
        n8nlock add-dedupe --workflow-key nightly --key-expression nightly \\
            --window-seconds 600 --on-duplicate error
        n8nlock add-dedupe --workflow-key payments \\
            --key-expression "={{ $json.headers['idempotency-key'] }}" \\
            --window-seconds 86400 --on-duplicate replay
    """
    from n8n_lockkit.rewrite.plans import wrap_plans as rewrite
    from n8n_lockkit.rewrite.plans.options import GuardOptions
    from n8n_lockkit.workspace import envconfig

    workspace = app.workspace()
    selected = envconfig.select_envs(workspace, envs)
    given = GuardOptions(
        key_expression, window_seconds, on_duplicate, ttl_seconds, max_answer_bytes,
        max_wait_seconds,
    )  # fmt: skip
    plan = rewrite.plan_add_dedupe(workspace, workflow_key, given, selected)
    apply_plan(workspace, plan, dry_run=dry_run, fmt=fmt)


@click.command("add-rate-limit")
@workflow_key_option
@scope_expression_option(
    "is counted; each scope has its own budget",
    "Names the limit to add or change; may be left out when the workflow has one.",
)
@click.option(
    "--limit",
    type=Count(resettable=False),
    metavar="N",
    help="Units (executions, or --cost-expression each) allowed per scope and window. Needed "
    "for a new limit.",
)
@click.option(
    "--window-seconds",
    type=Count(resettable=False),
    metavar="SECONDS",
    help="Length of the window. Needed for a new limit.",
)
@click.option(
    "--algorithm",
    type=OneOf(ALGORITHMS, "sliding"),
    help="sliding (the default): never more than --limit in any window-long interval; fixed: "
    "per clock-aligned window (up to twice the limit across a window boundary).",
)
@click.option(
    "--on-denied",
    type=OneOf(ON_DENIED, "passthrough"),
    help="passthrough (the default): end with {allowed: false, …} as output; stop: end "
    "quietly; error: fail the execution with the denial message; wait: wait for a place, "
    "then run.",
)
@max_wait_option(300, "With --on-denied wait: fail the execution when its place would come later.")
@click.option(
    "--cost-expression",
    "cost",
    metavar="EXPR",
    help="Units one execution spends: a number, or an expression (={{ $input.all().length }}). "
    "Default: 1.",
)
@dry_run_option
@output_option()
@pass_app
def add_rate_limit(
    app: AppContext,
    workflow_key: str,
    scope: str | None,
    limit: int | None,
    window_seconds: int | None,
    algorithm: str | None,
    on_denied: str | None,
    max_wait_seconds: int | str | None,
    cost: str | None,
    dry_run: bool,
    fmt: str,
) -> None:
    """Gate a workflow with a rate limit: a sliding or fixed window, refusing or waiting.

    Inserts the rate limit after each trigger; calls over the limit take the --on-denied path
    and the body does not run (with wait, they run once a place is free). With a lock too,
    the rate limit comes first. Each scope is its own limit: running it with another scope
    adds a second limit (a call one limit refuses counts in none); with the same scope it
    changes that limit, and only what is given (an option left out keeps what the limit has,
    `default` puts a value back to its default); each run prints what it changed.

    \b
    Example:
        n8nlock add-rate-limit --workflow-key enrich --scope-expression "=api-{{ $json.userId }}" \\
            --limit 10 --window-seconds 60 --on-denied error
        n8nlock add-rate-limit --workflow-key enrich --scope-expression openai \\
            --limit 500 --window-seconds 60 --on-denied wait \\
            --cost-expression "={{ $input.all().length }}"
        n8nlock add-rate-limit --workflow-key enrich --scope-expression openai --limit 600
    """
    from n8n_lockkit.rewrite.plans import wrap_plans as rewrite
    from n8n_lockkit.rewrite.plans.options import RateLimitOptions

    workspace = app.workspace()
    given = RateLimitOptions(
        scope=scope,
        limit=limit,
        window_seconds=window_seconds,
        algorithm=algorithm,
        on_denied=on_denied,
        max_wait_seconds=max_wait_seconds,
        cost=cost,
    )
    apply_plan(
        workspace,
        rewrite.plan_add_rate_limit(workspace, workflow_key, given),
        dry_run=dry_run,
        fmt=fmt,
    )


@click.command("unwrap")
@workflow_key_option
@click.option(
    "--only",
    type=click.Choice(("lock", "rate-limit", "dedupe", "debounce")),
    default=None,
    help="Take off only the lock, only the rate limits, only the duplicate guard (the "
    "others stay), or only the debounce. Default: all of them.",
)
@dry_run_option
@output_option()
@pass_app
def unwrap_workflow(
    app: AppContext, workflow_key: str, only: str | None, dry_run: bool, fmt: str
) -> None:
    """Take off what add-lock-to-workflow, add-rate-limit, add-dedupe and add-debounce added.

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
