"""Plans for add-lock-to-workflow, add-dedupe, add-rate-limit and unwrap: the workflow file
and the env files change together, or not at all. Each plan carries the settings the workflow
has after it, and what it changed (`options.py` has the rule for running a command again)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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
from n8n_lockkit.rewrite.plans.debounce_plans import debounce_settings, plan_unwrap_debounce
from n8n_lockkit.rewrite.plans.lock_scopes import scope_in_use, static_scope
from n8n_lockkit.rewrite.plans.options import (
    GuardOptions,
    LockOptions,
    RateLimitOptions,
    guard_settings,
    lock_settings,
    merged_guard,
    merged_lock,
    merged_rate,
    rate_settings,
    setting_changes,
)
from n8n_lockkit.rewrite.plans.own_error_workflow import runs_cleanup
from n8n_lockkit.rewrite.wrapping.compose import BURST_ITEMS, compose, read_layers
from n8n_lockkit.rewrite.wrapping.configs import Rates
from n8n_lockkit.rewrite.wrapping.debounce_wrap import DebounceConfig
from n8n_lockkit.rewrite.wrapping.scope import parse_scope
from n8n_lockkit.rewrite.wrapping.wrap import LockConfig, RateLimitConfig, rate_limits
from n8n_lockkit.workspace import workflow_json
from n8n_lockkit.workspace.envconfig import EnvFile
from n8n_lockkit.workspace.layout import Workspace
from n8n_lockkit.workspace.plan import FileChange, Plan, SettingChange


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


@dataclass(frozen=True)
class _Wrapped:
    """A workflow file, what n8nlock wrapped it with, and its body without that."""

    path: Path
    text: str
    lock: LockConfig | None
    rate: Rates
    guard: LockConfig | None
    body: dict[str, Any]
    debounce: DebounceConfig | None = None  # in front of the lock and rate limits (compose.py)


def _load_wrapped(workspace: Workspace, key: str) -> _Wrapped:
    path, text, workflow = load_workflow(workspace, key)
    layers = read_layers(workflow)
    return _Wrapped(
        path, text, layers.lock, layers.rate, layers.guard, layers.body, layers.debounce
    )


def _settings(
    key: str,
    lock: LockConfig | None,
    rate: Rates,
    guard: LockConfig | None,
    debounce: DebounceConfig | None = None,
) -> dict[str, Any]:
    """What -o json shows: the lock, guard and rate limits the workflow has after the run
    (and its debounce, when it has one)."""
    return {
        "workflow": key,
        "lock": lock_settings(lock),
        "dedupe": guard_settings(guard),
        "rate_limits": [rate_settings(r) for r in rate_limits(rate)],
        **({"debounce": debounce_settings(debounce)} if debounce else {}),
    }


def burst_message(before: _Wrapped, had: bool) -> list[str]:
    """What a debounced workflow's new lock or rate limit reads (once, when it is new)."""
    if before.debounce is None or had:
        return []
    trigger = next((e.node for e in graph.entries(before.body)), "Webhook")
    return [BURST_ITEMS.format(trigger=trigger)]


def _changes(
    key: str, before: _Wrapped, lock: LockConfig | None, rate: Rates, guard: LockConfig | None
) -> list[SettingChange]:
    """Setting by setting, what the run changes in the workflow."""
    changes = setting_changes(f"{key}: lock", lock_settings(before.lock), lock_settings(lock))
    changes += setting_changes(
        f"{key}: dedupe", guard_settings(before.guard), guard_settings(guard)
    )
    olds, news = rate_limits(before.rate), rate_limits(rate)
    for index in range(max(len(olds), len(news))):
        old = olds[index] if index < len(olds) else None
        new = news[index] if index < len(news) else None
        scope = next(r.scope for r in (new, old) if r is not None)
        changes += setting_changes(
            f"{key}: rate limit {scope!r}",
            rate_settings(old) if old else None,
            rate_settings(new) if new else None,
        )
    return changes


def _lock_scopes(
    workspace: Workspace,
    key: str,
    envs: Sequence[EnvFile],
    scopes: tuple[str | None, str | None],
    wrapped: tuple[LockConfig | None, LockConfig | None],
) -> tuple[list[SettingChange], bool]:
    """Register the new static scope in the envs, take the old one out when no workflow
    locks it any more; the envs' changes, and whether the old one was taken out."""
    old, new = scopes
    before = {env.name: env.lock_scopes() for env in envs}
    dropped = old is not None and old != new and not scope_in_use(workspace, old, key, *wrapped)
    for env in envs:
        if new is not None:
            env.add_lock_scope(new)
        if dropped and old is not None:
            env.remove_lock_scope(old)
    changes = [
        SettingChange(
            f"{workspace.relative(env.document.path)}:", "lockScopes", before[env.name], after
        )
        for env in envs
        if (after := env.lock_scopes()) != before[env.name]
    ]
    return changes, dropped


def _scope_change(previous: LockConfig | None, config: LockConfig, dropped: bool) -> list[str]:
    """What a changed scope (or guard key) means for the executions that hold the old one."""
    if previous is None or previous.scope == config.scope:
        return []
    if config.dedupe:
        message = (
            f"the duplicate guard's key changes from {previous.dedupe_key!r} to "
            f"{config.dedupe_key!r}: an execution still running with the old key keeps it until "
            "it ends and is no duplicate of a caller with the new one; successes of the old "
            "key turn nothing away any more"
        )
    else:
        message = (
            f"the lock's scope changes from {previous.scope!r} to {config.scope!r}: an "
            f"execution that holds {previous.scope!r} keeps it until it ends, and a caller "
            "of the new scope does not wait for it"
        )
    if dropped:
        message += f"; {static_scope(previous.scope)!r} leaves lockScopes, no workflow locks it"
    return [message]


# What a TTL taken from the workflow's default means, for a lock and for a guard (dedupe).
_TTL_ADVICE = {
    False: "a body that runs longer must renew the lock (--renew-before NODE) or pass "
    "--ttl-seconds",
    True: "a duplicate that arrives while a body runs longer than that runs too; pass "
    "--ttl-seconds",
}


def _plan_lock(
    workspace: Workspace,
    key: str,
    before: _Wrapped,
    config: LockConfig,
    envs: Sequence[EnvFile],
    ttl_note: str,
) -> Plan:
    """The workflow with `config` as its lock (or, for a guard's config, its guard);
    `ttl_note` says where its TTL came from when the workflow's default gave it."""
    body = before.body
    messages = [f"{ttl_note}: {_TTL_ADVICE[config.dedupe]}"] if ttl_note else []
    parse_scope(config.scope)
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
    previous = before.guard if config.dedupe else before.lock
    lock, guard = (before.lock, config) if config.dedupe else (config, before.guard)
    own_cleanup = runs_cleanup(workspace, body)
    wrapped = compose(body, key, lock, before.rate, guard, before.debounce, own_cleanup=own_cleanup)
    messages += _unknown_entries(body)
    messages += [] if config.dedupe else burst_message(before, before.lock is not None)
    if graph.as_dict(body.get("settings")).get("executionOrder") != "v1":
        messages.append(
            "the workflow stated no execution order, so n8n would run it in its legacy order; "
            "n8nlock set settings.executionOrder to v1 (what n8n's editor sets since 1.0), "
            "which the lock's single release relies on"
        )
    scopes = (static_scope(previous.scope) if previous else None, static_scope(config.scope))
    env_changes, dropped = _lock_scopes(workspace, key, envs, scopes, (lock, guard))
    messages += _scope_change(previous, config, dropped)
    if not config.lock_on_error and not config.dedupe and guard is None:
        messages.append(
            f"without --lock-on-error, an execution that fails while holding scope "
            f"{config.scope} leaves it locked until its TTL ({config.ttl_seconds} s) runs out; "
            "add --lock-on-error to have the cleanup handler free every lock it holds within "
            "seconds (`n8nlock reap` frees those of crashed executions)"
        )
    changes = (
        FileChange(before.path, before.text, dump_workflow(wrapped)),
        *(e.change() for e in envs),
    )
    return Plan(
        changes,
        tuple(messages),
        settings=_settings(key, lock, before.rate, guard, before.debounce),
        setting_changes=(*_changes(key, before, lock, before.rate, guard), *env_changes),
    )


def plan_add_lock(
    workspace: Workspace, key: str, given: LockOptions, envs: Sequence[EnvFile]
) -> Plan:
    """The workflow under a lock: an option not given keeps what the lock has (the default for
    a new lock; the TTL's default is `default_ttl`), `default` takes the default."""
    before = _load_wrapped(workspace, key)
    config, ttl_note = merged_lock(before.lock, given, lambda: default_ttl(before.body), key)
    return _plan_lock(workspace, key, before, config, envs, ttl_note)


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
    workspace: Workspace, key: str, given: GuardOptions, envs: Sequence[EnvFile]
) -> Plan:
    """The workflow with a duplicate guard: a lock on the key's scope whose busy callers are
    skipped (or fail), and whose successes turn the key away for the window. A failed
    execution frees its key through the cleanup handler (the workflow's error workflow).
    Options not given keep what the guard has."""
    before = _load_wrapped(workspace, key)
    config, ttl_note = merged_guard(
        before.guard,
        given,
        lambda: default_ttl(before.body),
        key,
        lambda key_expression: dedupe_scope(key, key_expression),
    )
    return _plan_lock(workspace, key, before, config, envs, ttl_note)


def _check_rate_numbers(config: RateLimitConfig) -> None:
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


def plan_add_rate_limit(workspace: Workspace, key: str, given: RateLimitOptions) -> Plan:
    """The workflow with the limit of `given.scope` added, or that limit changed in place:
    each scope is one limit, and all of them are checked by one chain, before any lock.

    An option not given keeps what the limit has (so a workflow wrapped before the sliding
    window existed stays fixed); a new limit takes the defaults."""
    before = _load_wrapped(workspace, key)
    limits = list(rate_limits(before.rate))
    index, config = merged_rate(limits, given, key)
    _check_rate_numbers(config)
    parse_scope(config.scope)
    if index is None:
        limits.append(config)
    else:
        limits[index] = config
    rate = tuple(limits)
    own_cleanup = runs_cleanup(workspace, before.body)
    wrapped = compose(
        before.body, key, before.lock, rate, before.guard, before.debounce, own_cleanup=own_cleanup
    )
    messages = [*_unknown_entries(before.body), *burst_message(before, before.rate is not None)]
    return Plan(
        (FileChange(before.path, before.text, dump_workflow(wrapped)),),
        tuple(messages),
        settings=_settings(key, before.lock, rate, before.guard, before.debounce),
        setting_changes=tuple(_changes(key, before, before.lock, rate, before.guard)),
    )


def plan_unwrap(workspace: Workspace, key: str, only: str | None = None) -> Plan:
    """The workflow without what n8nlock added: everything, or `only` one part (the lock, the
    rate limits, the duplicate guard or the debounce; the others stay). A workflow n8nlock
    never wrapped stays as it is."""
    path, text, workflow = load_workflow(workspace, key)
    layers = read_layers(workflow)
    lock, rate, guard, debounce = layers.lock, layers.rate, layers.guard, layers.debounce
    alone = lock is None and rate is None and guard is None
    if alone and only in (None, "debounce") and (debounced := plan_unwrap_debounce(workspace, key)):
        return debounced  # a debounce alone
    if only == "debounce" and debounce is None:
        return Plan((), (f"{path.name} has no debounce to take off",))
    if alone and debounce is None:
        return Plan((), (f"{path.name}: n8nlock added nothing to it; nothing to remove",))
    parts = {"lock": lock, "rate-limit": rate, "dedupe": guard, "debounce": debounce}
    if only is not None and parts[only] is None:
        has = ", ".join(f"--only {name}" for name, part in parts.items() if part is not None)
        return Plan((), (f"{path.name} has no {only} to take off; it has: {has}",))
    keep_lock = lock if only not in (None, "lock") else None
    keep_rate = rate if only not in (None, "rate-limit") else None
    keep_guard = guard if only not in (None, "dedupe") else None
    keep_debounce = debounce if only not in (None, "debounce") else None
    body = layers.body
    messages: list[str] = []
    scope = parse_scope(lock.scope).static if lock and keep_lock is None else None
    if scope is not None:
        messages.append(
            f"lockScopes still lists {scope!r} in the env files; `n8nlock locks` and `reap` "
            "keep watching it until you take it out"
        )
    own_cleanup = runs_cleanup(workspace, body)
    result = compose(
        body, key, keep_lock, keep_rate, keep_guard, keep_debounce, own_cleanup=own_cleanup
    )
    before = _Wrapped(path, text, lock, rate, guard, body, debounce)
    settings = _settings(key, keep_lock, keep_rate, keep_guard)
    changes = _changes(key, before, keep_lock, keep_rate, keep_guard)
    if debounce is not None:
        settings["debounce"] = debounce_settings(keep_debounce)
        changes += setting_changes(
            f"{key}: debounce", debounce_settings(debounce), debounce_settings(keep_debounce)
        )
    return Plan(
        (FileChange(path, text, dump_workflow(result)),),
        tuple(messages),
        settings=settings,
        setting_changes=tuple(changes),
    )
