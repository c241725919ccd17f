"""Commands that talk to n8n: push, redis-credential."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import click

from n8n_lockkit.cli.common_options import (
    AppContext,
    dry_run_option,
    env_option,
    one_env,
    output_option,
    pass_app,
    redis_url_option,
)
from n8n_lockkit.cli.completion import workflow_keys
from n8n_lockkit.cli.output import progress, show_credential, show_push
from n8n_lockkit.workspace.layout import Workspace

if TYPE_CHECKING:
    from n8n_lockkit.workspace.envconfig import EnvFile


def _saver(workspace: Workspace, env: EnvFile) -> Callable[[], None]:
    from n8n_lockkit.workspace import plan

    def save() -> None:
        plan.apply(plan.Plan((env.change(),)), workspace.root)

    return save


@click.command("push")
@click.argument("keys", nargs=-1, metavar="[KEY]...", shell_complete=workflow_keys)
@env_option("Env to push to")
@click.option(
    "--activate/--no-activate",
    default=False,
    help="--activate publishes each workflow that has a trigger, and what it references. "
    "Without it (or with --no-activate, the default) nothing new goes live: new workflows "
    "stay unpublished, published ones stay published.",
)
@click.option(
    "--recreate-missing",
    is_flag=True,
    help="Create anew a workflow whose recorded id no longer exists on n8n.",
)
@click.option(
    "--fail-fast",
    is_flag=True,
    help="Stop at the first workflow n8n refuses (default: push the others).",
)
@redis_url_option(
    "Where to check that no caller of an older lock format, or of another key namespace, "
    "still holds or waits when the push replaces one on n8n (docs/upgrading.md), instead of "
    "the env file's redis: record."
)
@click.option(
    "--no-drain-check",
    "skip_drain_check",
    is_flag=True,
    help="Push without that check (for when no caller of the older format or namespace can "
    "still run, e.g. n8n was restarted).",
)
@dry_run_option
@output_option()
@pass_app
def push_command(
    app: AppContext,
    keys: Sequence[str],
    env_name: str | None,
    activate: bool,
    recreate_missing: bool,
    fail_fast: bool,
    redis_url: str | None,
    skip_drain_check: bool,
    dry_run: bool,
    fmt: str,
) -> None:
    """Create, update and publish workflows on the env's n8n instance.

    Placeholders are filled from the env file; new ids are recorded in it. A workflow
    goes after the workflows it references. Pushing twice sends no write the second time.
    The API key is read from the variable the env's n8n.apiKeyEnv names.

    Nothing starts that was not live: a new workflow is created unpublished unless
    --activate, and a published one stays published (n8n republishes it on update).
    Whenever a workflow goes live, the sub-workflows and error workflow it references are
    published first. A workflow n8n refuses does not stop the others (unless --fail-fast);
    those that reference it are skipped. Each failure is shown with n8n's message, and the
    push then exits 4. A push that replaces, on n8n, a lock of an older format than 3, or
    one in another key namespace than the env's keyPrefix, first checks Redis (where the
    env's redis: record, or --redis-url, says it is) that none of its callers still holds or
    waits: while one does, it is refused with exit 6 and nothing is sent (docs/upgrading.md).

    \b
    Example:
        export N8N_API_KEY=...
        n8nlock push --env dev --dry-run
        n8nlock push --env dev
        n8nlock push --env dev --activate orders
    """
    from n8n_lockkit.remote import connection, push

    workspace = app.workspace()
    env = one_env(workspace, env_name)
    check = None
    if not skip_drain_check:
        from n8n_lockkit.ops import drain

        def check(replaced: push.Replacements) -> None:
            drain.check_before_push(env, replaced, redis_url)

    client = connection.client_for(env)
    pusher = push.Pusher(
        workspace,
        env,
        client,
        activate=activate,
        dry_run=dry_run,
        recreate_missing=recreate_missing,
        fail_fast=fail_fast,
        progress=progress,
        save_env=_saver(workspace, env),
        before_send=check,
    )
    try:
        result = pusher.run(keys)
    finally:
        client.close()
    show_push(result, dry_run=dry_run, fmt=fmt)
    push.raise_for_failures(result)


@click.command("redis-credential")
@env_option("Env to record the credential in")
@click.option(
    "--host",
    help="Redis host as n8n reaches it (required unless --link; with --link, it records "
    "where Redis is for the operator commands).",
)
@click.option(
    "--port", type=click.IntRange(1, 65535), default=6379, show_default=True, help="Redis port."
)
@click.option(
    "--database",
    type=click.IntRange(0, 15),
    default=0,
    show_default=True,
    help="Redis database number.",
)
@click.option("--user", default="", help="Redis ACL user (blank for password-only auth).")
@click.option(
    "--password-env",
    metavar="VAR",
    help="Environment variable holding the Redis password (never a file).",
)
@click.option("--ssl", is_flag=True, help="Connect with TLS.")
@click.option(
    "--name",
    "display_name",
    default="n8nlock redis",
    show_default=True,
    help="Credential name in n8n.",
)
@click.option(
    "--link",
    "link_id",
    metavar="ID",
    help="Record an existing credential id instead of creating one.",
)
@click.option("--replace", is_flag=True, help="Create a new one even if the env has an id.")
@dry_run_option
@output_option()
@pass_app
def redis_credential(
    app: AppContext,
    env_name: str | None,
    host: str | None,
    port: int,
    database: int,
    user: str,
    password_env: str | None,
    ssl: bool,
    display_name: str,
    link_id: str | None,
    replace: bool,
    dry_run: bool,
    fmt: str,
) -> None:
    """Create (or link) the Redis credential the primitives use.

    The fields are shaped by n8n's own schema for the credential type; the id and name
    are recorded under credentials.redis in the env file. The address (host, port,
    database, TLS, user and the name of the password variable, never the password) is
    recorded under redis: for `n8nlock locks`, `release`, `reap` and `stats`. With --link,
    pass the same --host/--port/... options to record it too. Running it again changes
    nothing; --dry-run decides the same way and sends and writes nothing.

    \b
    Example:
        export REDIS_PASSWORD=...
        n8nlock redis-credential --env dev --host redis.internal --password-env REDIS_PASSWORD
        n8nlock redis-credential --env prod --link 7fQx2AbCdEf --name "Redis prod" \\
            --host redis.prod --password-env REDIS_PASSWORD
        n8nlock redis-credential --env prod --host redis.prod --dry-run -o json
    """
    from n8n_lockkit.remote import connection, credentials

    if not link_id and not host:
        raise click.UsageError("--host is required to create a credential (or use --link ID)")
    workspace = app.workspace()
    env = one_env(workspace, env_name)
    settings = credentials.RedisSettings(host or "", port, database, user, password_env, ssl)
    planned = credentials.plan_redis(env, display_name, settings, link_id=link_id, replace=replace)
    planned = credentials.check_link(env, planned, connect=connection.client_for)
    if not dry_run:
        planned = credentials.apply_redis(env, planned, connect=connection.client_for)
        if planned.changed:
            _saver(workspace, env)()
    # Shown once applied: the id of a created credential is n8n's answer.
    show_credential(planned, f"envs/{env.name}.yml", dry_run=dry_run, fmt=fmt)
