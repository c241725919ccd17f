"""add-debounce: run a workflow's body once per burst of events on a key."""

from __future__ import annotations

import click

from n8n_lockkit.cli.common_options import (
    AppContext,
    Count,
    apply_plan,
    dry_run_option,
    output_option,
    pass_app,
)
from n8n_lockkit.cli.wrap_commands import workflow_key_option


@click.command("add-debounce")
@workflow_key_option
@click.option(
    "--key-expression",
    metavar="EXPR",
    help="What makes events one burst: a literal, an n8n expression "
    "(={{ $json.body.chatId }}) or a template (=chat-{{ $json.body.chatId }}). Needed for a "
    "new debounce.",
)
@click.option(
    "--quiet-seconds",
    type=Count(resettable=False),
    metavar="SECONDS",
    help="The body runs once the key has had no event for this long. Needed for a new debounce.",
)
@click.option(
    "--max-wait-seconds",
    type=Count(),
    metavar="SECONDS",
    help="The body runs at the latest this long after the burst's first event. Default: 60.",
)
@click.option(
    "--max-items",
    type=Count(),
    metavar="N",
    help="The body runs at once when the burst has N events (later ones start the next "
    "burst). Default: 100.",
)
@dry_run_option
@output_option()
@pass_app
def add_debounce(
    app: AppContext,
    workflow_key: str,
    key_expression: str | None,
    quiet_seconds: int | None,
    max_wait_seconds: int | str | None,
    max_items: int | str | None,
    dry_run: bool,
    fmt: str,
) -> None:
    """Run a workflow's body once per burst of events on a key (debounce).

    Events (executions of the trigger) with the same key less than --quiet-seconds apart
    form a burst. The body runs once per burst, with every event's items in arrival order,
    in one of the burst's executions: when the key has been quiet for --quiet-seconds, at
    the latest --max-wait-seconds after the first event, or at once at --max-items events.
    Every caller is answered at once: a webhook with 200 {"buffered": true, "key": ...,
    "position": ...} (a webhook that answers with its last node gets a Respond to Webhook
    node for it), other triggers end with that item. One execution per burst stays awake to
    wait. Run again, it changes only what is given (`default` puts a value back to its
    default); `unwrap` takes it off and restores the file exactly. A duplicate guard
    (add-dedupe) goes in front of the debounce; a rate limit (--on-denied wait) and a lock
    (--on-busy wait) run once per burst, in the runner's execution, on the burst's items.

    \b
    Example:
        n8nlock add-debounce --workflow-key chat-answer \\
            --key-expression "={{ $json.body.chatId }}" --quiet-seconds 5
        n8nlock add-debounce --workflow-key crm-sync --key-expression "={{ $json.body.id }}" \\
            --quiet-seconds 2 --max-wait-seconds 30 --max-items 50
    """
    from n8n_lockkit.rewrite.plans.debounce_plans import DebounceOptions, plan_add_debounce

    workspace = app.workspace()
    given = DebounceOptions(key_expression, quiet_seconds, max_wait_seconds, max_items)
    plan = plan_add_debounce(workspace, workflow_key, given)
    apply_plan(workspace, plan, dry_run=dry_run, fmt=fmt)
