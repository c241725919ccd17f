"""The command line: parse options, call one library function, print. Nothing else."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from n8n_lockkit import (
    __version__,
    connection,
    credentials,
    envconfig,
    installer,
    output,
    plan,
    push,
    rewrite,
    scaffold,
    validate,
)
from n8n_lockkit.errors import ExitCode, LockkitError
from n8n_lockkit.primitives import PRIMITIVES, get_primitive
from n8n_lockkit.render import RenderOptions
from n8n_lockkit.rules import RULES
from n8n_lockkit.workspace import Workspace
from n8n_lockkit.wrap import ON_DENIED, LockConfig, RateLimitConfig

F = TypeVar("F", bound=Callable[..., Any])


class LockkitGroup(click.Group):
    """The one place where our errors become a message, a hint and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LockkitError as error:
            output.show_error(error)
            ctx.exit(int(error.exit_code))


@dataclass
class AppContext:
    workspace_option: Path | None

    def workspace(self) -> Workspace:
        if self.workspace_option is not None:
            return Workspace.at(self.workspace_option)
        return Workspace.find(Path.cwd())


pass_app = click.make_pass_decorator(AppContext)


def env_option(f: F) -> F:
    return click.option(
        "--env",
        "envs",
        multiple=True,
        metavar="NAME",
        help="Env to register in (repeatable). Optional when the workspace has exactly one.",
    )(f)


def dry_run_option(f: F) -> F:
    return click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")(f)


def format_option(f: F) -> F:
    return click.option(
        "-o",
        "--output",
        "fmt",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="text for people, json for CI (on stdout).",
    )(f)


def force_option(f: F) -> F:
    return click.option(
        "--force-overwrite",
        is_flag=True,
        help="Replace primitive files that differ from what n8nlock ships.",
    )(f)


def poll_option(f: F) -> F:
    return click.option(
        "--poll-interval-seconds",
        type=click.FloatRange(0.1, 60),
        default=1.0,
        show_default=True,
        help="How often a waiting lock_acquisition polls Redis.",
    )(f)


def _apply(workspace: Workspace, change_plan: plan.Plan, *, dry_run: bool, fmt: str) -> None:
    output.show_plan(workspace, change_plan, dry_run=dry_run, fmt=fmt)
    if not dry_run:
        plan.apply(change_plan, workspace.root)


@click.group(cls=LockkitGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="n8nlock")
@click.option(
    "-w",
    "--workspace",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Workspace folder (default: the nearest folder above the current one with envs/).",
)
@click.pass_context
def main(ctx: click.Context, workspace: Path | None) -> None:
    """Safe coordination for n8n workflows: Redis locks and rate limits.

    \b
    Example:
        n8nlock init my-automations --env dev
        cd my-automations
        n8nlock create-lock --include-error-handler
        n8nlock validate
    """
    ctx.obj = AppContext(workspace)


@main.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), default=".")
@click.option(
    "--env",
    "envs",
    multiple=True,
    metavar="NAME",
    help="Env file to create (repeatable).  [default: dev]",
)
@click.option(
    "--url",
    default=scaffold.DEFAULT_URL,
    show_default=True,
    help="Base URL of the n8n instance the new env files point at.",
)
@dry_run_option
@format_option
def init(directory: Path, envs: Sequence[str], url: str, dry_run: bool, fmt: str) -> None:
    """Create a workspace: envs/<env>.yml and workflows/.

    Existing files are kept, so running it again only adds missing envs.

    \b
    Example:
        n8nlock init my-automations --env dev --env prod
    """
    root = directory.resolve()
    _apply(
        Workspace(root), scaffold.plan_init(root, envs or ["dev"], url), dry_run=dry_run, fmt=fmt
    )


@main.command("create-lock")
@env_option
@click.option(
    "--include-error-handler",
    is_flag=True,
    help="Also install error_handler_lock_cleanup and ensure lockScopes exists.",
)
@click.option("--include-rate-limit", is_flag=True, help="Also install rate_limit_check.")
@force_option
@poll_option
@dry_run_option
@format_option
@pass_app
def create_lock(
    app: AppContext,
    envs: Sequence[str],
    include_error_handler: bool,
    include_rate_limit: bool,
    force_overwrite: bool,
    poll_interval_seconds: float,
    dry_run: bool,
    fmt: str,
) -> None:
    """Install the lock primitives and register them in the env(s).

    Writes workflows/lock_acquisition.template.json and lock_release.template.json
    (and the handler and rate limit when asked) and adds each key to the env's
    `workflows:` map. Running it again changes nothing.

    \b
    Example:
        n8nlock create-lock --include-error-handler --include-rate-limit --env dev
    """
    workspace = app.workspace()
    selected = envconfig.select_envs(workspace, envs)
    primitives = installer.lock_primitives(
        include_error_handler=include_error_handler, include_rate_limit=include_rate_limit
    )
    change_plan = installer.plan_create_lock(
        workspace,
        selected,
        primitives,
        force_overwrite=force_overwrite,
        options=RenderOptions(poll_interval_seconds=poll_interval_seconds),
    )
    _apply(workspace, change_plan, dry_run=dry_run, fmt=fmt)


@main.command("copy-primitive")
@click.argument("name", required=False)
@click.option("--list", "list_only", is_flag=True, help="List the primitives and exit.")
@force_option
@poll_option
@dry_run_option
@format_option
@pass_app
def copy_primitive(
    app: AppContext,
    name: str | None,
    list_only: bool,
    force_overwrite: bool,
    poll_interval_seconds: float,
    dry_run: bool,
    fmt: str,
) -> None:
    """Copy one primitive into workflows/ without registering it anywhere.

    \b
    Example:
        n8nlock copy-primitive --list
        n8nlock copy-primitive rate_limit_check
    """
    if list_only or name is None:
        output.show_lines(f"{p.key:<28} {p.summary}" for p in PRIMITIVES.values())
        if name is None and not list_only:
            raise click.UsageError("name a primitive to copy (see the list above)")
        return
    workspace = app.workspace()
    change_plan = installer.plan_copy_primitive(
        workspace,
        get_primitive(name),
        force_overwrite=force_overwrite,
        options=RenderOptions(poll_interval_seconds=poll_interval_seconds),
    )
    _apply(workspace, change_plan, dry_run=dry_run, fmt=fmt)


@main.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--env",
    "env_name",
    metavar="NAME",
    help="Also check that every {{@:env:…}} placeholder resolves in this env.",
)
@format_option
@pass_app
def validate_command(
    app: AppContext, paths: Sequence[Path], env_name: str | None, fmt: str
) -> None:
    """Check workflow files; exit 1 on any problem (for CI).

    Checks every workflow file of the workspace, or the given files and folders.
    `n8nlock rules` lists the rules.

    \b
    Example:
        n8nlock validate
        n8nlock validate workflows/orders.template.json --env prod -o json
    """
    workspace = app.workspace()
    env = envconfig.load_env(workspace, env_name).data if env_name else None
    report = validate.validate_files(workspace, [p.absolute() for p in paths], env)
    output.show_report(report, fmt)
    if not report.ok:
        raise SystemExit(int(ExitCode.FINDINGS))


@main.command("rules")
def rules_command() -> None:
    """List the rules `n8nlock validate` applies.

    \b
    Example:
        n8nlock rules
    """
    output.show_lines(f"{rule.id:<30} {rule.summary}" for rule in RULES)


def _one_env(workspace: Workspace, env_name: str | None) -> envconfig.EnvFile:
    return envconfig.select_envs(workspace, [env_name] if env_name else [])[0]


def _saver(workspace: Workspace, env: envconfig.EnvFile) -> Callable[[], None]:
    def save() -> None:
        plan.apply(plan.Plan((env.change(),)), workspace.root)

    return save


@main.command("push")
@click.argument("keys", nargs=-1, metavar="[KEY]...")
@click.option(
    "--env",
    "env_name",
    metavar="NAME",
    help="Env to push to. Optional when the workspace has exactly one.",
)
@click.option(
    "--activate/--no-activate",
    default=True,
    show_default=True,
    help="Publish workflows that have a trigger (sub-workflows before their callers).",
)
@click.option(
    "--recreate-missing",
    is_flag=True,
    help="Create anew a workflow whose recorded id no longer exists on n8n.",
)
@dry_run_option
@format_option
@pass_app
def push_command(
    app: AppContext,
    keys: Sequence[str],
    env_name: str | None,
    activate: bool,
    recreate_missing: bool,
    dry_run: bool,
    fmt: str,
) -> None:
    """Create, update and publish workflows on the env's n8n instance.

    Placeholders are filled from the env file; new ids are recorded in it. A workflow
    goes after the workflows it references. Pushing twice sends no write the second time.
    The API key is read from the variable the env's n8n.apiKeyEnv names.

    \b
    Example:
        export N8N_API_KEY=...
        n8nlock push --env dev --dry-run
        n8nlock push --env dev lock_acquisition lock_release
    """
    workspace = app.workspace()
    env = _one_env(workspace, env_name)
    client = connection.client_for(env)
    pusher = push.Pusher(
        workspace,
        env,
        client,
        activate=activate,
        dry_run=dry_run,
        recreate_missing=recreate_missing,
        progress=output.progress,
        save_env=_saver(workspace, env),
    )
    try:
        result = pusher.run(keys)
    finally:
        client.close()
    output.show_push(result, dry_run=dry_run, fmt=fmt)


@main.command("redis-credential")
@click.option(
    "--env",
    "env_name",
    metavar="NAME",
    help="Env to record the credential in. Optional with exactly one env.",
)
@click.option("--host", help="Redis host as n8n reaches it (required unless --link).")
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
) -> None:
    """Create (or link) the Redis credential the primitives use.

    The fields are shaped by n8n's own schema for the credential type; the id and name
    are recorded under credentials.redis in the env file.

    \b
    Example:
        export REDIS_PASSWORD=...
        n8nlock redis-credential --env dev --host redis.internal --password-env REDIS_PASSWORD
        n8nlock redis-credential --env prod --link 7fQx2AbCdEf --name "Redis prod"
    """
    workspace = app.workspace()
    env = _one_env(workspace, env_name)
    current = ((env.data.get("credentials") or {}).get("redis") or {}).get("id")
    if link_id:
        credential_id = link_id
    elif current and not replace:
        output.progress("identical", f"credentials.redis in envs/{env.name}.yml ({current})")
        return
    elif not host:
        raise click.UsageError("--host is required to create a credential (or use --link ID)")
    else:
        settings = credentials.RedisSettings(host, port, database, user, password_env, ssl)
        settings.password()  # a missing variable stops us before anything is sent
        client = connection.client_for(env)
        try:
            credential_id = credentials.create_redis(client, display_name, settings)
        finally:
            client.close()
    env.record_credential("redis", credential_id, display_name)
    _saver(workspace, env)()
    output.progress("record", f"credentials.redis = {credential_id} in envs/{env.name}.yml")


def workflow_key_option(f: F) -> F:
    return click.option(
        "--workflow-key",
        required=True,
        metavar="KEY",
        help="The workflow to change: workflows/KEY.template.json.",
    )(f)


def scope_option(what: str) -> Callable[[F], F]:
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


@main.command("add-lock-to-workflow")
@workflow_key_option
@scope_option("the lock is on; executions with the same scope run one at a time")
@click.option(
    "--ttl-seconds",
    type=click.IntRange(1),
    default=86400,
    show_default=True,
    help="How long a lock lives if its holder never releases it.",
)
@click.option(
    "--max-wait-seconds",
    type=click.IntRange(1),
    default=86400,
    show_default=True,
    help="How long an execution waits for the lock before it fails.",
)
@click.option("--fail-fast", is_flag=True, help="Fail at once instead of waiting for the lock.")
@click.option(
    "--lock-on-error",
    is_flag=True,
    help="Set the workflow's error workflow to error_handler_lock_cleanup.",
)
@env_option
@dry_run_option
@format_option
@pass_app
def add_lock_to_workflow(
    app: AppContext,
    workflow_key: str,
    scope: str,
    ttl_seconds: int,
    max_wait_seconds: int,
    fail_fast: bool,
    lock_on_error: bool,
    envs: Sequence[str],
    dry_run: bool,
    fmt: str,
) -> None:
    """Run a workflow's body under a lock, released once at the end.

    Inserts Lock Acquire after each trigger and a single Lock Release after every branch
    of the body has finished; the body sees the trigger's items as before. A static scope
    is added to lockScopes of the env(s). Running it again changes nothing; other flags
    update the lock in place.

    \b
    Example:
        n8nlock add-lock-to-workflow --workflow-key orders \\
            --scope-expression "={{ 'order-' + $json.body.orderId }}" --ttl-seconds 300
    """
    workspace = app.workspace()
    selected = envconfig.select_envs(workspace, envs)
    config = LockConfig(scope, ttl_seconds, max_wait_seconds, fail_fast, lock_on_error)
    _apply(
        workspace,
        rewrite.plan_add_lock(workspace, workflow_key, config, selected),
        dry_run=dry_run,
        fmt=fmt,
    )


@main.command("add-rate-limit")
@workflow_key_option
@scope_option("is counted; each scope has its own budget")
@click.option(
    "--limit",
    type=click.IntRange(1),
    required=True,
    help="Executions allowed per scope and window.",
)
@click.option(
    "--window-seconds", type=click.IntRange(1), required=True, help="Length of the fixed window."
)
@click.option(
    "--on-denied",
    type=click.Choice(ON_DENIED),
    default="passthrough",
    show_default=True,
    help="passthrough: end with {allowed: false, …} as output; stop: end quietly; "
    "error: fail the execution with the denial message.",
)
@dry_run_option
@format_option
@pass_app
def add_rate_limit(
    app: AppContext,
    workflow_key: str,
    scope: str,
    limit: int,
    window_seconds: int,
    on_denied: str,
    dry_run: bool,
    fmt: str,
) -> None:
    """Gate a workflow with a fixed-window rate limit.

    Inserts Rate Limit after each trigger; calls over the limit take the --on-denied path
    and the body does not run. With a lock too, the rate limit comes first. Running it
    again changes nothing; other flags update it in place.

    \b
    Example:
        n8nlock add-rate-limit --workflow-key enrich --scope-expression "=api-{{ $json.userId }}" \\
            --limit 10 --window-seconds 60 --on-denied error
    """
    workspace = app.workspace()
    config = RateLimitConfig(scope, limit, window_seconds, on_denied)
    _apply(
        workspace,
        rewrite.plan_add_rate_limit(workspace, workflow_key, config),
        dry_run=dry_run,
        fmt=fmt,
    )
