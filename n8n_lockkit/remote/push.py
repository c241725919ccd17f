"""`n8nlock push`: hydrate workflows for one env and create, update and publish them on n8n.

Order matters: a workflow goes after every workflow its placeholders reference (so the
primitives go first, the cleanup handler before the workflows whose errorWorkflow names it),
and n8n 2.x publishes a caller only once the sub-workflows it calls are published.

Push never starts a trigger nobody asked for: a new workflow stays unpublished unless
`activate`, and a published one stays published (n8n 2.x republishes it on update). What a
live workflow references is published with it, since n8n 2.x runs only published
sub-workflows. One workflow that fails does not stop the others; those that reference it
are skipped, and every failure is reported with n8n's own message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from n8n_lockkit.errors import RemoteError, WorkflowFileError
from n8n_lockkit.remote.n8n_client import (
    N8nClient,
    N8nNotFound,
    N8nRejected,
    N8nServerError,
    WebhookNotLive,
)
from n8n_lockkit.remote.push_compare import (
    RUNTIME_FIELDS,
    draft_pending,
    holds,
    is_live,
    replaced_lock_format,
    replaced_namespace,
)
from n8n_lockkit.remote.push_items import (
    PushItem,
    activatable,
    load_items,
    only_internal_triggers,
    order_items,
    preflight,
    request_body,
    webhooks,
)
from n8n_lockkit.remote.sync_state import SyncState
from n8n_lockkit.workspace import plan
from n8n_lockkit.workspace.envconfig import EnvFile
from n8n_lockkit.workspace.layout import Workspace

NEW_ID = "<new>"
# How n8n 1.x refuses to activate a workflow n8n itself starts (it runs it unpublished).
NO_TRIGGER_REFUSAL = "has no node to start the workflow"
# n8n refusals that concern one workflow; anything else (auth, unreachable) stops the push.
WorkflowRefusal = (N8nRejected, N8nNotFound, N8nServerError, WebhookNotLive)


@dataclass(frozen=True)
class Outcome:
    """What push did to one workflow, and what it left undone (`error`, n8n's words)."""

    key: str
    # create | recreate | update | identical | skip, or none: not in this push, only
    # published because a workflow it publishes references it
    action: str
    workflow_id: str
    status: str = "ok"  # ok | failed | skipped
    published: bool = False  # this push published it
    error: str = ""
    hint: str = ""


@dataclass
class PushResult:
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def skipped(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "skipped"]


class PushFailed(RemoteError):
    """Some workflows failed (or were skipped because of one); the others were pushed."""


Progress = Callable[[str, str], None]


@dataclass
class _Target:
    """One workflow this push sends, or only publishes because a workflow it publishes needs it."""

    item: PushItem
    pushed: bool
    workflow_id: str
    remote: dict[str, Any] | None
    # Why n8n's copy could not be read (the recorded id is gone, and not to be recreated):
    # the error and the hint this workflow fails with.
    unreadable: tuple[str, str] | None = None

    @property
    def key(self) -> str:
        return self.item.key


@dataclass(frozen=True)
class Replacements:
    """What a push replaces on n8n that the drain check must look at first: locks of a format
    older than the engine sees natively ((key, format) each), and locks whose key namespace the
    push changes ((key, old namespace) each)."""

    formats: list[tuple[str, int]] = field(default_factory=list)
    namespaces: list[tuple[str, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.formats or self.namespaces)


class Pusher:
    """Runs one push; `dry_run` follows the same path and sends no write."""

    def __init__(
        self,
        workspace: Workspace,
        env: EnvFile,
        client: N8nClient,
        *,
        activate: bool,
        dry_run: bool,
        recreate_missing: bool,
        progress: Progress,
        save_env: Callable[[], None],
        fail_fast: bool = False,
        before_send: Callable[[Replacements], None] | None = None,
    ) -> None:
        self.workspace, self.env, self.client = workspace, env, client
        self.activate, self.dry_run, self.recreate_missing = activate, dry_run, recreate_missing
        self.fail_fast = fail_fast
        # Called, before anything is sent, with what n8n holds that needs the drain check
        # first: locks of an older format (formats.needs_drain), or of another key namespace.
        self.before_send = before_send
        self.progress, self.save_env = progress, save_env
        self.ids: dict[str, str] = {}
        self.named = False
        self.targets: dict[str, _Target] = {}
        self.outcomes: dict[str, Outcome] = {}
        self.settled: set[str] = set()  # published, or run unpublished by this n8n

    def run(self, keys: Sequence[str]) -> PushResult:
        items = order_items(load_items(self.workspace, keys))
        preflight(self.workspace, items, self.env.data)
        self.named = bool(keys)
        self.targets = {item.key: self._fetch(item, pushed=True) for item in items}
        if self.before_send is not None:
            self.before_send(self._replacing_older_locks(items))
        for item in items:
            self._record(self._next(self.targets[item.key]))
        result = PushResult(list(self.outcomes.values()))
        if not self.dry_run:
            self._remember_synced(result)
        return result

    def _replacing_older_locks(self, items: Sequence[PushItem]) -> Replacements:
        replaced = Replacements()
        for item in items:
            remote = self.targets[item.key].remote
            found = replaced_lock_format(item.key, item.workflow, remote)
            if found is not None:
                replaced.formats.append((item.key, found))
            moved = replaced_namespace(item.key, item.workflow, remote, self.env.key_prefix)
            if moved is not None:
                replaced.namespaces.append((item.key, moved))
        return replaced

    def _remember_synced(self, result: PushResult) -> None:
        """Record each file n8n now holds, so a later pull can tell local edits from n8n's."""
        state = SyncState(self.workspace)
        for outcome in result.outcomes:
            target = self.targets.get(outcome.key)
            if target and target.pushed and outcome.status == "ok" and outcome.action in _SENT:
                state.record(self.env.name, outcome.key, outcome.workflow_id, target.item.workflow)
        plan.apply(plan.Plan((state.change(),)), self.workspace.root)

    def _record(self, outcome: Outcome) -> None:
        self.outcomes[outcome.key] = outcome  # a dependency's entry keeps its place

    def _broken(self) -> list[str]:
        return [key for key, outcome in self.outcomes.items() if outcome.status != "ok"]

    def _next(self, target: _Target) -> Outcome:
        """Push (and publish) one workflow, or skip it because of an earlier failure."""
        broken = self._broken()
        upstream = [key for key in target.item.depends_on if key in broken]
        if not upstream and not (self.fail_fast and broken):
            return self._apply(target)
        why = (
            f"it references {', '.join(upstream)}, which failed"
            if upstream
            else f"--fail-fast stopped the push at {broken[0]}"
        )
        self.progress("skip", f"{target.key}: {why}")
        return Outcome(target.key, "skip", target.workflow_id, "skipped", error=why)

    def _fetch(self, item: PushItem, *, pushed: bool) -> _Target:
        workflow_id, _ = self._registered(item.key)
        if not workflow_id:
            return _Target(item, pushed, "", None)
        target = _Target(item, pushed, workflow_id, None)
        try:
            target.remote = self.client.get_workflow(workflow_id)
        except N8nNotFound:
            if not (pushed and self.recreate_missing):
                target.unreadable = self._vanished(target)
        except N8nRejected as err:
            target.unreadable = (f"not sent: {_message(err)}", err.hint or "")
        return target

    def _target(self, key: str) -> _Target:
        """A referenced workflow; one outside this push is judged by what n8n holds."""
        if key not in self.targets:
            path = self.workspace.workflow_path(key)
            try:
                item = load_items(self.workspace, [key])[0]
            except WorkflowFileError:
                item = PushItem(key, path, "", {})
            target = self._fetch(item, pushed=False)
            if target.remote is not None:
                # Its triggers as n8n holds them; the file's text still names its references.
                target.item = PushItem(key, path, item.text, target.remote)
            self.targets[key] = target
        return self.targets[key]

    def _registered(self, key: str) -> tuple[str, str]:
        entry = (self.env.data.get("workflows") or {}).get(key) or {}
        return str(entry.get("id") or ""), str(entry.get("name") or "")

    def _apply(self, target: _Target) -> Outcome:
        if target.unreadable:
            return self._fail(target, "update", *target.unreadable)
        workflow_id, name = self._registered(target.key)
        # A nameless or blank-named export takes its key: n8n refuses an empty name (400).
        name = name or str(target.item.workflow.get("name") or "").strip() or target.key
        body = request_body(target.item, self._env_data(), name)
        if target.remote is None:
            action = "recreate" if workflow_id else "create"
        else:
            action = "identical" if holds(body, target.remote) else "update"
        if action == "update" and is_live(target.remote):
            # n8n 2.x republishes a live workflow on update, and refuses if what it calls
            # is not published.
            problem = self._publish_references(target)
            if problem:
                return self._fail(target, action, f"not updated: {problem}", "")
        try:
            self._send(target, action, body)
        except WorkflowRefusal as err:
            error = self._refusal(target, action, body, err)
            return self._fail(target, action, error, err.hint or "")
        self.progress(action, f"{target.key} ({target.workflow_id})")
        if not self._wants_publish(target, action):
            return Outcome(target.key, action, target.workflow_id)
        return self._publish_with_references(target, action)

    def _send(self, target: _Target, action: str, body: dict[str, Any]) -> None:
        if action in ("create", "recreate"):
            target.workflow_id, target.remote = self._create(target.key, body)
        elif action == "update" and not self.dry_run:
            sent = {k: v for k, v in body.items() if k not in RUNTIME_FIELDS}
            target.remote = self.client.update_workflow(target.workflow_id, sent)

    def _refusal(self, target: _Target, action: str, body: dict[str, Any], err: RemoteError) -> str:
        """What n8n refused, and what it kept anyway."""
        if action == "update" and is_live(target.remote):
            # n8n 2.x saves the update of a published workflow as a draft before it
            # republishes; when the republish is refused, the previous version stays live.
            try:
                now = self.client.get_workflow(target.workflow_id)
            except WorkflowRefusal:
                now = {}
            if holds(body, now):
                target.remote = now
                return f"saved as a draft, the previous version stays published: {_message(err)}"
        return f"not {_PAST.get(action, action)}: {_message(err)}"

    def _create(self, key: str, body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        if self.dry_run:
            self.ids[key] = NEW_ID
            return NEW_ID, None
        created = self.client.create_workflow(body)
        workflow_id = str(created["id"])
        self.ids[key] = workflow_id
        self.env.record_workflow(key, workflow_id, body["name"])
        self.save_env()  # record each id at once: a later failure must not orphan it
        return workflow_id, created

    def _env_data(self) -> dict[str, Any]:
        """The env as placeholders see it, with the ids this push has minted so far."""
        data = self.env.data
        workflows = dict(data.get("workflows") or {})
        for key, workflow_id in self.ids.items():
            workflows[key] = {**workflows.get(key, {"name": key}), "id": workflow_id}
        data["workflows"] = workflows
        return data

    def _wants_publish(self, target: _Target, action: str) -> bool:
        if is_live(target.remote):
            # Live already: n8n republished an update itself, unless it refused to before.
            return draft_pending(target.remote or {})
        if not (self.activate and activatable(target.item.workflow)):
            return False
        # n8n 1.x refuses to activate a workflow started only by n8n itself (it runs it
        # unpublished); asking again on every push would be a write each time. Such a
        # workflow is published when it changes, when named, or when a caller needs it.
        return not (
            only_internal_triggers(target.item.workflow)
            and action == "identical"
            and not self.named
        )

    def _publish_with_references(self, target: _Target, action: str) -> Outcome:
        problem = self._publish_references(target)
        if problem:
            return self._fail(target, action, f"{_not_published(action)}: {problem}", "")
        try:
            published = self._publish(target)
        except WebhookNotLive as err:
            failed = self._fail(target, action, f"published, but {err.message}", err.hint or "")
            return replace(failed, published=True)
        except WorkflowRefusal as err:
            error = f"{_not_published(action)}: {_message(err)}"
            return self._fail(target, action, error, self._publish_hint(err))
        return Outcome(target.key, action, target.workflow_id, published=published)

    def _publish_references(self, target: _Target) -> str:
        """Publish what `target` calls or names as error workflow; returns what went wrong."""
        for key in target.item.depends_on:
            dependency = self._target(key)
            if key in self.settled or is_live(dependency.remote):
                continue
            if dependency.unreadable:
                self._record(self._fail(dependency, self._action_of(key), *dependency.unreadable))
                return f"it references {key}, which failed"
            if not only_internal_triggers(dependency.item.workflow):
                continue  # it has a live trigger: published only on request (n8n will say)
            self.settled.add(key)
            problem = self._publish_references(dependency)
            if not problem:
                try:
                    published = self._publish(dependency)
                except WorkflowRefusal as err:
                    problem = _message(err)
            if problem:
                action = self._action_of(key)
                error = f"{_not_published(action)}: {problem}"
                self._record(self._fail(dependency, action, error, ""))
                return f"it references {key}, which n8n did not publish"
            previous = self.outcomes.get(key, Outcome(key, "none", dependency.workflow_id))
            self._record(replace(previous, published=published))
        return ""

    def _action_of(self, key: str) -> str:
        return self.outcomes[key].action if key in self.outcomes else "none"

    def _publish(self, target: _Target) -> bool:
        self.progress("publish", f"{target.key} ({target.workflow_id})")
        self.settled.add(target.key)
        if self.dry_run:
            return True
        try:
            self.client.activate_workflow(target.workflow_id)
        except N8nRejected as err:
            # n8n 1.x refuses to activate a workflow whose only trigger is an Error Trigger
            # or a version 1 Execute Workflow Trigger, and runs it unpublished.
            internal = only_internal_triggers(target.item.workflow)
            if not (internal and NO_TRIGGER_REFUSAL in err.server_message):
                raise
            self.progress("skip", f"{target.key}: this n8n runs it without publishing")
            return False
        for path, methods in webhooks(target.item.workflow):
            self.client.wait_for_webhook(path, methods)
        return True

    def _publish_hint(self, err: RemoteError) -> str:
        message = _message(err)
        if "not published" in message:
            keys = " ".join(self._keys_named_in(message)) or "KEY"
            return (
                f"publish the workflow it references too: `n8nlock push --activate {keys}` "
                "(push publishes a referenced workflow by itself only when it has no trigger "
                "of its own)"
            )
        return err.hint or ""

    def _keys_named_in(self, message: str) -> list[str]:
        workflows = self._env_data()["workflows"]
        return [
            key
            for key, entry in workflows.items()
            if isinstance(entry, dict) and entry.get("id") and f" {entry['id']} " in message
        ]

    def _vanished(self, target: _Target) -> tuple[str, str]:
        error = (
            f"not sent: envs/{self.env.name}.yml records id {target.workflow_id}, but n8n has "
            "no workflow with that id"
        )
        return error, (
            f"push it again with --recreate-missing (`n8nlock push --recreate-missing "
            f"{target.key}`) to create it anew and record the new id"
        )

    def _fail(self, target: _Target, action: str, error: str, hint: str) -> Outcome:
        self.progress("failed", f"{target.key} ({target.workflow_id or 'no id'}): {error}")
        return Outcome(target.key, action, target.workflow_id, "failed", error=error, hint=hint)


# Actions after which n8n holds the file as it is.
_SENT = frozenset({"create", "recreate", "update", "identical"})
_PAST = {"create": "created", "recreate": "recreated", "update": "updated"}


def _not_published(action: str) -> str:
    return f"{_PAST[action]}, not published" if action in _PAST else "not published"


def _message(err: RemoteError) -> str:
    """n8n's own words on one line (its publish refusals span several)."""
    text = err.server_message if isinstance(err, N8nRejected) else err.message
    return " ".join(text.split())


def raise_for_failures(result: PushResult) -> None:
    """One Error/Hint pair for a push that left something undone; each line said what."""
    failed, skipped = result.failed, result.skipped
    if not failed and not skipped:
        return
    names = ", ".join(o.key for o in failed) or "none"
    message = f"{len(failed)} of {len(result.outcomes)} workflow(s) failed: {names}"
    if skipped:
        message += f"; {len(skipped)} skipped: {', '.join(o.key for o in skipped)}"
    if len(failed) == 1 and failed[0].hint:
        hint = failed[0].hint
    else:
        hint = (
            "each `failed` line above gives n8n's message; fix those and push again "
            "(what was pushed is not sent again)"
        )
    raise PushFailed(message, hint=hint)
