"""Plans for add-lock-to-workflow and add-rate-limit: the workflow file and the env files
change together, or not at all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from n8n_lockkit.errors import LockkitError
from n8n_lockkit.primitives import keys
from n8n_lockkit.primitives.catalogue import (
    ERROR_HANDLER,
    LOCK_ACQUISITION,
    LOCK_RELEASE,
    LOCK_RENEW,
)
from n8n_lockkit.primitives.render import dump_workflow
from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.plans.own_error_workflow import runs_cleanup
from n8n_lockkit.rewrite.wrapping.scope import parse_scope
from n8n_lockkit.rewrite.wrapping.unwrap import read_configs, read_guard, unwrap
from n8n_lockkit.rewrite.wrapping.wrap import LockConfig, RateLimitConfig, rate_limits, wrap
from n8n_lockkit.workspace import workflow_json
from n8n_lockkit.workspace.envconfig import EnvFile
from n8n_lockkit.workspace.layout import Workspace
from n8n_lockkit.workspace.plan import FileChange, Plan


def load_workflow(workspace: Workspace, key: str) -> tuple[Path, str, dict[str, Any]]:
    path = workspace.existing_workflow_path(key)
    text = path.read_text(encoding="utf-8")
    return path, text, parse_workflow(workspace, path, text)


def parse_workflow(workspace: Workspace, path: Path, text: str) -> dict[str, Any]:
    """A workflow file's JSON, or one error that says where it is broken."""
    return workflow_json.parse(
        text, workspace.relative(path), hint="fix the file at that place; nothing changed"
    )


def _require(workspace: Workspace, envs: Sequence[EnvFile], keys: Sequence[str], how: str) -> None:
    for key in keys:
        if not workspace.workflow_path(key).is_file():
            raise LockkitError(f"primitive {key} is not in this workspace", hint=f"run `{how}`")
        for env in envs:
            if key not in (env.data.get("workflows") or {}):
                raise LockkitError(
                    f"primitive {key} is not registered in env {env.name}",
                    hint=f"run `{how} --env {env.name}`",
                )


def _unknown_entries(workflow: dict[str, Any]) -> list[str]:
    """Warnings for nodes taken as triggers only because nothing leads into them."""
    by_name = {n["name"]: n for n in graph.nodes(workflow)}
    return [
        f"node {name!r} has type {by_name[name].get('type')!r}, which n8n does not ship (a "
        "community node?); nothing leads into it, so n8nlock treats it as a trigger and "
        "guards what follows it"
        for name in dict.fromkeys(e.node for e in graph.entries(workflow) if not e.known)
    ]


def _at_least_one(**values: int) -> None:
    for name, value in values.items():
        if value < 1:
            raise LockkitError(f"--{name.replace('_', '-')} must be at least 1, not {value}")


# Without a timeout to go by: long enough for most bodies, short enough that a lock left by a
# crash heals within the hour even without `reap`. Longer bodies renew (--renew-before).
DEFAULT_TTL_SECONDS = 3600
TIMEOUT_MARGIN_SECONDS = 60


def default_ttl(workflow: dict[str, Any]) -> tuple[int, str]:
    """The TTL for a lock around this workflow when none is given, and where it came from.

    n8n stops an execution after `settings.executionTimeout` seconds, so the lock need not
    outlive that (plus a margin for the release to run)."""
    timeout = graph.as_dict(workflow.get("settings")).get("executionTimeout")
    if isinstance(timeout, int) and not isinstance(timeout, bool) and timeout > 0:
        ttl = timeout + TIMEOUT_MARGIN_SECONDS
        return ttl, f"settings.executionTimeout ({timeout} s) + {TIMEOUT_MARGIN_SECONDS} s"
    return DEFAULT_TTL_SECONDS, "the default (the workflow sets no executionTimeout)"


def plan_add_lock(
    workspace: Workspace, key: str, config: LockConfig, envs: Sequence[EnvFile]
) -> Plan:
    """The workflow wrapped in `config`'s lock; a `ttl_seconds` of None takes `default_ttl`."""
    path, text, workflow = load_workflow(workspace, key)
    lock, rate = read_configs(workflow)
    guard = read_guard(workflow)
    existing = guard if config.dedupe else lock
    body = unwrap(workflow)
    messages: list[str] = []
    ttl = config.ttl_seconds
    if ttl is None and existing is not None:
        ttl = existing.ttl_seconds  # a re-run keeps what the workflow has
    elif ttl is None:
        ttl, source = default_ttl(body)
        messages.append(
            f"duplicate guard TTL {ttl} s, from {source}: a duplicate that arrives while a body "
            "runs longer than that runs too; pass --ttl-seconds"
            if config.dedupe
            else f"lock TTL {ttl} s, from {source}: a body that runs longer must renew the lock "
            "(--renew-before NODE) or pass --ttl-seconds"
        )
    config = replace(config, ttl_seconds=ttl)
    _at_least_one(ttl_seconds=ttl or 0, max_wait_seconds=config.max_wait_seconds)
    scope = parse_scope(config.scope)
    # The inline form needs no primitive; the sub-workflow form calls two.
    needed = [LOCK_ACQUISITION.key, LOCK_RELEASE.key] if config.via_subworkflow else []
    how = "n8nlock create-lock"
    if config.lock_on_error:
        needed.append(ERROR_HANDLER.key)
        how += " --include-error-handler"
    if config.renew_before:
        needed.append(LOCK_RENEW.key)
        how += " --include-renew"
    _require(workspace, envs, needed, how)
    if config.dedupe:
        wrapped = wrap(body, key, lock, rate, config, own_cleanup=runs_cleanup(workspace, body))
    else:
        wrapped = wrap(body, key, config, rate, guard, own_cleanup=runs_cleanup(workspace, body))
    messages += _unknown_entries(body)
    if graph.as_dict(body.get("settings")).get("executionOrder") != "v1":
        messages.append(
            "the workflow stated no execution order, so n8n would run it in its legacy order; "
            "n8nlock set settings.executionOrder to v1 (what n8n's editor sets since 1.0), "
            "which the lock's single release relies on"
        )
    if scope.static is not None:
        for env in envs:
            env.add_lock_scope(scope.static)
    if not config.lock_on_error and not config.dedupe and guard is None:
        messages.append(
            f"without --lock-on-error, an execution that fails while holding scope "
            f"{config.scope} leaves it locked until its TTL ({config.ttl_seconds} s) runs out; "
            "add --lock-on-error to have the cleanup handler free every lock it holds within "
            "seconds (`n8nlock reap` frees those of crashed executions)"
        )
    changes = (FileChange(path, text, dump_workflow(wrapped)), *(e.change() for e in envs))
    return Plan(changes, tuple(messages))


def dedupe_scope(workflow: str, key_expression: str) -> str:
    """The scope of a duplicate guard's lock: the key's, in the workflow's own namespace, in
    the form the key was given (literal, expression or template)."""
    try:
        parse_scope(key_expression)
    except LockkitError as err:  # the user gave a key, not a scope
        message = err.message.replace("scope expression", "key expression")
        hint = (err.hint or "").replace("--scope-expression", "--key-expression")
        raise LockkitError(message, hint=hint or None) from err
    prefix = keys.dedupe_scope(workflow, "")
    if key_expression.startswith("="):
        return "=" + prefix + key_expression[1:]
    return prefix + key_expression


def plan_add_dedupe(
    workspace: Workspace,
    key: str,
    key_expression: str,
    window_seconds: int,
    on_duplicate: str,
    ttl_seconds: int | None,
    envs: Sequence[EnvFile],
) -> Plan:
    """The workflow with a duplicate guard: a lock on the key's scope whose busy callers are
    skipped (or fail), and whose successes turn the key away for `window_seconds`. A failed
    execution frees its key through the cleanup handler (the workflow's error workflow)."""
    _at_least_one(window_seconds=window_seconds)
    config = LockConfig(
        scope=dedupe_scope(key, key_expression),
        ttl_seconds=ttl_seconds,
        on_busy="error" if on_duplicate == "error" else "skip",
        lock_on_error=True,
        dedupe_window_seconds=window_seconds,
        dedupe_key=key_expression,
    )
    return plan_add_lock(workspace, key, config, envs)


DEFAULT_ALGORITHM = "sliding"


def _check_rate_numbers(config: RateLimitConfig) -> None:
    _at_least_one(
        limit=config.limit,
        window_seconds=config.window_seconds,
        max_wait_seconds=config.max_wait_seconds,
    )
    cost = config.cost.strip()
    if cost.startswith("="):
        parse_scope(cost)  # an expression n8n can evaluate; its value is checked at run time
        return
    if not cost.isdigit() or int(cost) < 1:
        raise LockkitError(
            f"--cost-expression {config.cost!r} is neither a whole number >= 1 nor an expression",
            hint="pass a number (3) or an n8n expression (={{ $input.all().length }})",
        )
    if int(cost) > config.limit:
        raise LockkitError(
            f"--cost-expression {cost} is more than --limit {config.limit}: such a call could "
            "never pass",
            hint="lower the cost or raise the limit",
        )


def plan_add_rate_limit(
    workspace: Workspace, key: str, config: RateLimitConfig, *, algorithm: str | None = None
) -> Plan:
    """The workflow with `config`'s limit added, or its limit of the same scope replaced in
    place: each scope is one limit, and all of them are checked by one chain, before any lock.

    `algorithm` None keeps the algorithm of that scope's limit (so a workflow wrapped before
    the sliding window existed stays fixed), and is DEFAULT_ALGORITHM for a new scope."""
    _check_rate_numbers(config)
    parse_scope(config.scope)
    path, text, workflow = load_workflow(workspace, key)
    lock, rate = read_configs(workflow)
    guard = read_guard(workflow)
    limits = list(rate_limits(rate))
    same = next((i for i, r in enumerate(limits) if r.scope == config.scope), None)
    kept = limits[same].algorithm if same is not None else DEFAULT_ALGORITHM
    config = replace(config, algorithm=algorithm or kept)
    if same is None:
        limits.append(config)
    else:
        limits[same] = config
    body = unwrap(workflow)
    wrapped = wrap(body, key, lock, tuple(limits), guard, own_cleanup=runs_cleanup(workspace, body))
    return Plan((FileChange(path, text, dump_workflow(wrapped)),), tuple(_unknown_entries(body)))


def plan_unwrap(workspace: Workspace, key: str, only: str | None = None) -> Plan:
    """The workflow without what n8nlock added: everything, or `only` one part (the lock, the
    rate limits, or the duplicate guard; the others stay). A workflow n8nlock never wrapped
    stays as it is."""
    path, text, workflow = load_workflow(workspace, key)
    lock, rate = read_configs(workflow)
    guard = read_guard(workflow)
    if lock is None and rate is None and guard is None:
        return Plan((), (f"{path.name}: n8nlock added nothing to it; nothing to remove",))
    parts = {"lock": lock, "rate-limit": rate, "dedupe": guard}
    if only is not None and parts[only] is None:
        has = ", ".join(f"--only {name}" for name, part in parts.items() if part is not None)
        return Plan((), (f"{path.name} has no {only} to take off; it has: {has}",))
    keep_lock = lock if only not in (None, "lock") else None
    keep_rate = rate if only not in (None, "rate-limit") else None
    keep_guard = guard if only not in (None, "dedupe") else None
    body = unwrap(workflow)
    messages: list[str] = []
    scope = parse_scope(lock.scope).static if lock and keep_lock is None else None
    if scope is not None:
        messages.append(
            f"lockScopes still lists {scope!r} in the env files; `n8nlock locks` and `reap` "
            "keep watching it until you take it out"
        )
    own_cleanup = runs_cleanup(workspace, body)
    result = wrap(body, key, keep_lock, keep_rate, keep_guard, own_cleanup=own_cleanup)
    return Plan((FileChange(path, text, dump_workflow(result)),), tuple(messages))
