"""`n8nlock push`: hydrate workflows for one env and create, update and publish them on n8n.

Order matters: a workflow goes after every workflow its placeholders reference (so the
primitives go first, the cleanup handler before the workflows whose errorWorkflow names it),
and n8n 2.x only publishes a caller once its sub-workflows are published.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from n8n_lockkit import graph, placeholders
from n8n_lockkit.envconfig import EnvFile
from n8n_lockkit.errors import LockkitError, PlaceholderError, RemoteError, WorkflowFileError
from n8n_lockkit.n8n_client import N8nClient, N8nNotFound, N8nRejected
from n8n_lockkit.workspace import Workspace, workflow_key

# What the public API accepts on create and update; everything else in a file is dropped.
SENT_FIELDS = ("name", "nodes", "connections", "settings", "staticData")
_WORKFLOW_REFERENCE = re.compile(r"\{\{@:?env:workflows\.([A-Za-z0-9_-]+)\.id\}\}")
NEW_ID = "<new>"


@dataclass(frozen=True)
class PushItem:
    key: str
    path: Path
    text: str
    workflow: dict[str, Any]

    @property
    def depends_on(self) -> tuple[str, ...]:
        keys = dict.fromkeys(_WORKFLOW_REFERENCE.findall(self.text))
        return tuple(k for k in keys if k != self.key)


@dataclass(frozen=True)
class Step:
    key: str
    action: str  # create | update | identical | recreate
    workflow_id: str
    activated: bool = False


@dataclass
class PushResult:
    steps: list[Step] = field(default_factory=list)


Progress = Callable[[str, str], None]


def load_items(workspace: Workspace, keys: Sequence[str]) -> list[PushItem]:
    """The workflow files to push: the named keys, or every file in workflows/."""
    paths = [workspace.workflow_path(k) for k in keys] if keys else workspace.workflow_files()
    items = []
    for path in paths:
        display = workspace.relative(path)
        if not path.is_file():
            raise WorkflowFileError(
                f"{display}: no such workflow file",
                hint="list the keys in workflows/, or run create-lock first",
            )
        text = path.read_text(encoding="utf-8")
        try:
            workflow = json.loads(text)
        except json.JSONDecodeError as err:
            raise WorkflowFileError(
                f"{display}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})",
                hint="run `n8nlock validate` and fix the file; nothing was sent",
            ) from err
        items.append(PushItem(workflow_key(path), path, text, workflow))
    return items


def order_items(items: Sequence[PushItem]) -> list[PushItem]:
    """Dependencies first; ties keep file order. A cycle cannot be pushed."""
    by_key = {item.key: item for item in items}
    ordered: list[PushItem] = []
    state: dict[str, str] = {}

    def visit(item: PushItem, trail: tuple[str, ...]) -> None:
        if state.get(item.key) == "done":
            return
        if state.get(item.key) == "visiting":
            raise LockkitError(
                f"workflows reference each other in a cycle: {' -> '.join((*trail, item.key))}",
                hint="break the cycle; n8n needs each id before it is referenced",
            )
        state[item.key] = "visiting"
        for dependency in item.depends_on:
            if dependency in by_key:
                visit(by_key[dependency], (*trail, item.key))
        state[item.key] = "done"
        ordered.append(item)

    for item in items:
        visit(item, ())
    return ordered


def preflight(workspace: Workspace, items: Iterable[PushItem], env: Mapping[str, Any]) -> None:
    """Stop before anything is sent if a placeholder cannot resolve."""
    pushed = {item.key for item in items}
    for item in items:
        for problem in placeholders.unresolved(item.text, env, require_ids=True):
            match = re.fullmatch(r"workflows\.([A-Za-z0-9_-]+)\.id", problem.path)
            if match and match.group(1) in pushed:
                continue  # its id will exist by the time this workflow is sent
            raise PlaceholderError(
                f"{workspace.relative(item.path)}: {{{{@:env:{problem.path}}}}} {problem.reason}",
                hint=_placeholder_hint(problem.path),
            )


def _placeholder_hint(path: str) -> str:
    if path.startswith("credentials.redis"):
        return "run `n8nlock redis-credential --env …` to create or link the Redis credential"
    if path.startswith("workflows."):
        return "push that workflow too (name its key), or fill its id in the env file"
    return "add the key to the env file; nothing was sent"


def request_body(item: PushItem, env: Mapping[str, Any], name: str) -> dict[str, Any]:
    hydrated = json.loads(placeholders.resolve_text(item.text, env))
    body = {k: hydrated[k] for k in SENT_FIELDS if k in hydrated}
    body["name"] = name
    body.setdefault("settings", {"executionOrder": "v1"})
    return body


def is_subset(expected: Any, actual: Any) -> bool:
    """Whether n8n holds everything we would send (it may add defaults of its own)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and is_subset(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(is_subset(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


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
    ) -> None:
        self.workspace, self.env, self.client = workspace, env, client
        self.activate, self.dry_run, self.recreate_missing = activate, dry_run, recreate_missing
        self.progress, self.save_env = progress, save_env
        self.ids: dict[str, str] = {}

    def run(self, keys: Sequence[str]) -> PushResult:
        items = order_items(load_items(self.workspace, keys))
        preflight(self.workspace, items, self.env.data)
        result = PushResult()
        for item in items:
            result.steps.append(self.push_one(item))
        return result

    def _env_data(self) -> dict[str, Any]:
        """The env as placeholders see it, with the ids this push has minted so far."""
        data = self.env.data
        workflows = dict(data.get("workflows") or {})
        for key, workflow_id in self.ids.items():
            workflows[key] = {**workflows.get(key, {"name": key}), "id": workflow_id}
        data["workflows"] = workflows
        return data

    def _registered(self, key: str) -> tuple[str, str]:
        entry = (self.env.data.get("workflows") or {}).get(key) or {}
        return str(entry.get("id") or ""), str(entry.get("name") or "")

    def push_one(self, item: PushItem) -> Step:
        workflow_id, name = self._registered(item.key)
        body = request_body(
            item, self._env_data(), name or str(item.workflow.get("name", item.key))
        )
        remote = self._remote(item.key, workflow_id)
        if remote is None:
            action = "recreate" if workflow_id else "create"
            workflow_id, remote = self._create(item.key, body)
        elif is_subset(body, {k: remote.get(k) for k in body}):
            action = "identical"
        else:
            action = "update"
            if not self.dry_run:
                self.client.update_workflow(workflow_id, body)
        self.progress(action, f"{item.key} ({workflow_id})")
        activated = self._maybe_activate(item, workflow_id, remote, action != "identical")
        return Step(item.key, action, workflow_id, activated)

    def _remote(self, key: str, workflow_id: str) -> dict[str, Any] | None:
        if not workflow_id:
            return None
        try:
            return self.client.get_workflow(workflow_id)
        except N8nNotFound as err:
            if self.recreate_missing:
                return None
            raise RemoteError(
                f"workflow {key} has id {workflow_id} in envs/{self.env.name}.yml, but n8n has "
                "no workflow with that id",
                hint="run push again with --recreate-missing to create it anew and record "
                "the new id",
            ) from err

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

    def _maybe_activate(
        self, item: PushItem, workflow_id: str, remote: dict[str, Any] | None, changed: bool
    ) -> bool:
        # An active workflow stays active: n8n republishes it on update by itself.
        if not self.activate or not activatable(item.workflow):
            return False
        if remote is not None and remote.get("active"):
            return False
        if only_internal_triggers(item.workflow) and not changed:
            # n8n 1.x runs these unpublished and refuses to activate them; trying on every
            # push would send a write each time. 2.x got its publish when this was created.
            return False
        self.progress("publish", f"{item.key} ({workflow_id})")
        if self.dry_run:
            return True
        try:
            self.client.activate_workflow(workflow_id)
        except N8nRejected:
            # n8n 2.x runs only published sub-workflows and error workflows, so we publish
            # them; 1.x runs them unpublished and refuses to activate a workflow whose only
            # trigger is an Execute Workflow or Error Trigger.
            if not only_internal_triggers(item.workflow):
                raise
            self.progress("skip", f"{item.key}: this n8n runs it without publishing")
            return False
        for path, method in webhooks(item.workflow):
            self.client.wait_for_webhook(path, method)
        return True


# Triggers a user starts by hand: n8n has nothing to activate for them.
PASSIVE_TRIGGERS = frozenset({"n8n-nodes-base.manualTrigger", "n8n-nodes-base.start"})
INTERNAL_TRIGGERS = frozenset(
    {"n8n-nodes-base.errorTrigger", "n8n-nodes-base.executeWorkflowTrigger"}
)


def webhooks(workflow: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(path, method) of every enabled Webhook node."""
    return [
        (str(node["parameters"]["path"]), str(node["parameters"].get("httpMethod", "GET")))
        for node in workflow.get("nodes", [])
        if node.get("type") == "n8n-nodes-base.webhook"
        and not node.get("disabled")
        and node.get("parameters", {}).get("path")
    ]


def only_internal_triggers(workflow: Mapping[str, Any]) -> bool:
    """Started only by n8n itself: as a sub-workflow or as an error workflow."""
    triggers = {str(node.get("type")) for node in graph.triggers(workflow)}
    return bool(triggers) and triggers <= INTERNAL_TRIGGERS


def activatable(workflow: Mapping[str, Any]) -> bool:
    """Whether n8n can activate (publish) the workflow: it has a trigger that is not passive."""
    return any(node.get("type") not in PASSIVE_TRIGGERS for node in graph.triggers(workflow))
