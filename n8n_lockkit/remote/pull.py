"""`n8nlock pull`: write workflows from n8n into the workspace, as a user would have written them.

Each workflow becomes the file of its key (`workflows/<key>.template.json` when new; see
docs/concepts.md#workflow-files for the rule, and pull_convert for what is dropped and
what becomes a placeholder), its key → id goes into the env file, and the sync state records
the file. A local file is replaced only when it is unchanged since it was last pushed or
pulled (`.n8nlock/synced.json`), or with `force`: a file that differs both from that and from
n8n holds work nobody has sent, and pull stops before writing anything.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from n8n_lockkit.errors import ExitCode, LockkitError
from n8n_lockkit.primitives.render import dump_workflow
from n8n_lockkit.remote.n8n_client import N8nClient, N8nNotFound
from n8n_lockkit.remote.pull_convert import (
    FILE_FIELDS,
    EnvIds,
    UnknownCredential,
    derive_key,
    foreign_references,
    merge_local,
    template_of,
)
from n8n_lockkit.remote.sync_state import SyncState, file_digest
from n8n_lockkit.workspace.envconfig import EnvFile
from n8n_lockkit.workspace.layout import Workspace, check_name
from n8n_lockkit.workspace.plan import FileChange, Plan, read_text_or_none

_LOOKS_LIKE_ID = re.compile(r"^[A-Za-z0-9]+$")


class PullConflict(LockkitError):
    """A local file changed since it was synced, and n8n holds something else."""

    exit_code = ExitCode.CONFLICT


@dataclass(frozen=True)
class Request:
    """What to pull: workflows by id, name or registered key; every one; or the env's own."""

    selectors: tuple[str, ...] = ()
    pull_all: bool = False
    key: str | None = None
    force: bool = False
    record_credentials: bool = False

    def command(self, env: str, *extra: str) -> str:
        """This pull as a command line, with `extra` flags: for hints."""
        words = ["n8nlock", "pull", "--env", env, *self.selectors]
        if self.pull_all:
            words.append("--all")
        if self.key:
            words += ["--key", self.key]
        return shlex.join([*words, *extra])


@dataclass(frozen=True)
class Pulled:
    key: str
    workflow_id: str
    name: str
    action: str  # create | update | identical: what happens to the file
    path: Path
    forced: bool = False  # it replaced local changes (--force)


@dataclass(frozen=True)
class PullResult:
    plan: Plan
    workflows: list[Pulled]
    credentials: list[tuple[str, UnknownCredential]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Target:
    workflow_id: str
    remote: dict[str, Any]
    key: str = ""


class Puller:
    """Plans one pull; nothing is written here (the caller applies `PullResult.plan`)."""

    def __init__(self, workspace: Workspace, env: EnvFile, client: N8nClient) -> None:
        self.workspace, self.env, self.client = workspace, env, client
        self._listing: list[dict[str, Any]] | None = None

    def plan(self, request: Request) -> PullResult:
        targets = self._targets(request)
        self._assign_keys(targets, request.key)
        recorded = self._credentials(targets, request)
        registered_names = {
            key: str(entry.get("name") or "")
            for key, entry in (self.env.data.get("workflows") or {}).items()
            if isinstance(entry, dict)
        }
        for target in targets:
            self.env.record_workflow(target.key, target.workflow_id, _name(target))
        state = SyncState(self.workspace)
        ids = self._ids()
        pulled, conflicts, warnings = [], [], []
        changes: list[FileChange] = []
        for target in targets:
            change, outcome = self._file(target, ids, state, request.force, registered_names)
            if outcome is None:
                conflicts.append(change.path)
                continue
            changes.append(change)
            pulled.append(outcome)
            written = json.loads(change.after)
            state.record(self.env.name, target.key, target.workflow_id, written)
            warnings += [
                f"{target.key}: {reference}, which envs/{self.env.name}.yml does not register: "
                "pull that workflow too, or the file works on this instance only"
                for reference in foreign_references(written)
            ]
        if conflicts:
            raise self._conflict(conflicts)
        final = Plan((*changes, self.env.change(), state.change()))
        return PullResult(final, pulled, recorded, warnings)

    # which workflows

    def _targets(self, request: Request) -> list[_Target]:
        if request.key and (request.pull_all or len(request.selectors) != 1):
            raise LockkitError(
                "--key names the file of one workflow, and this pull takes several",
                hint="name one workflow (its id or name) with --key, or drop --key",
            )
        if request.pull_all:
            found = [_Target(str(w["id"]), w) for w in self._list() if not w.get("isArchived")]
        elif request.selectors:
            found = [self._find(selector) for selector in request.selectors]
        else:
            found = self._registered()
        unique = {target.workflow_id: target for target in found}
        return list(unique.values())

    def _registered(self) -> list[_Target]:
        ids = self.env.workflow_ids()
        if not ids:
            raise LockkitError(
                f"envs/{self.env.name}.yml registers no workflow with an id, so there is "
                "nothing of its own to pull",
                hint="name the workflows to pull (`n8nlock pull ID|NAME ...`), or take every "
                "one on the instance with --all",
            )
        return [self._get(workflow_id, key) for key, workflow_id in ids.items()]

    def _get(self, workflow_id: str, key: str) -> _Target:
        try:
            return _Target(workflow_id, self.client.get_workflow(workflow_id), key)
        except N8nNotFound as err:
            raise LockkitError(
                f"envs/{self.env.name}.yml records id {workflow_id} for {key}, but n8n at "
                f"{self.client.base_url} has no workflow with that id",
                hint=f"push it anew (`n8nlock push --env {self.env.name} --recreate-missing "
                f"{key}`), or remove workflows.{key} from the env file",
            ) from err

    def _find(self, selector: str) -> _Target:
        """A workflow by the key the env registers, its id, or its exact name."""
        registered = self.env.workflow_ids()
        if selector in registered:
            return self._get(registered[selector], selector)
        if _LOOKS_LIKE_ID.match(selector):
            try:
                return _Target(selector, self.client.get_workflow(selector))
            except N8nNotFound:
                pass  # not an id: perhaps a name
        named = [w for w in self._list() if w.get("name") == selector]
        if len(named) == 1:
            return _Target(str(named[0]["id"]), named[0])
        if named:
            raise LockkitError(
                f"{len(named)} workflows on n8n are named {selector!r}: "
                + ", ".join(_described(w) for w in named),
                hint=f"pull one by its id, e.g. `n8nlock pull --env {self.env.name} "
                f"{named[0]['id']}`",
            )
        names = [str(w.get("name")) for w in self._list()]
        close = difflib.get_close_matches(selector, names, n=3)
        maybe = f"did you mean {', '.join(repr(n) for n in close)}? " if close else ""
        raise LockkitError(
            f"n8n at {self.client.base_url} has no workflow with the id or name {selector!r}",
            hint=f"{maybe}`n8nlock pull --env {self.env.name} --all --dry-run` lists the "
            "workflows pull would take",
        )

    def _list(self) -> list[dict[str, Any]]:
        if self._listing is None:
            self._listing = self.client.list_workflows()
        return self._listing

    def _assign_keys(self, targets: Sequence[_Target], wanted: str | None) -> None:
        known = {workflow_id: key for key, workflow_id in self.env.workflow_ids().items()}
        taken = set(known.values())
        for target in targets:
            key = known.get(target.workflow_id)
            if wanted and key and key != wanted:
                raise LockkitError(
                    f"workflow {target.workflow_id} is registered as {key} in "
                    f"envs/{self.env.name}.yml, not as {wanted}",
                    hint=f"pull it without --key (it goes to "
                    f"{self.workspace.relative(self.workspace.workflow_path(key))})",
                )
            if wanted and not key:
                key = check_name("workflow key", wanted)
                if key in taken:
                    raise LockkitError(
                        f"envs/{self.env.name}.yml registers {key} for workflow "
                        f"{self.env.workflow_ids()[key]}, not {target.workflow_id}",
                        hint="choose another --key",
                    )
            target.key = target.key or key or derive_key(_name(target), taken)
            taken.add(target.key)

    # credentials and ids

    def _ids(self) -> EnvIds:
        workflows = {workflow_id: key for key, workflow_id in self.env.workflow_ids().items()}
        return EnvIds(workflows, self.env.credential_ids())

    def _credentials(
        self, targets: Sequence[_Target], request: Request
    ) -> list[tuple[str, UnknownCredential]]:
        """Name the credentials the env does not know, or stop and say how to record them."""
        unknown: dict[str, UnknownCredential] = {}
        users: dict[str, list[str]] = {}
        for target in targets:
            for credential in template_of(target.remote, self._ids())[1]:
                unknown.setdefault(credential.credential_id, credential)
                users.setdefault(credential.credential_id, []).append(target.key)
        if not unknown:
            return []
        if not request.record_credentials:
            described = ", ".join(
                f"{c.kind} {c.name!r} (id {c.credential_id}, in {', '.join(users[i])})"
                for i, c in unknown.items()
            )
            raise LockkitError(
                f"envs/{self.env.name}.yml does not name {len(unknown)} credential(s) these "
                f"workflows use: {described}",
                hint="record them (as credentials.<type>) and pull again: "
                f"`{request.command(self.env.name, '--record-credentials')}`",
            )
        taken = {name for name in self.env.credential_ids().values()}
        recorded = []
        for credential in unknown.values():
            name = _credential_name(credential.kind, taken)
            taken.add(name)
            self.env.record_credential(name, credential.credential_id, credential.name)
            recorded.append((name, credential))
        return recorded

    # files

    def _file(
        self,
        target: _Target,
        ids: EnvIds,
        state: SyncState,
        force: bool,
        registered_names: Mapping[str, str],
    ) -> tuple[FileChange, Pulled | None]:
        """The file's change and what it means, or None for a file pull must not replace."""
        path = self.workspace.workflow_path(target.key)
        local_text = read_text_or_none(path)
        pulled = template_of(target.remote, ids)[0]
        outcome = Pulled(target.key, target.workflow_id, _name(target), "create", path)
        if local_text is None:
            return FileChange(path, None, dump_workflow(pulled)), outcome
        local = _parsed(local_text)
        keep_name = registered_names.get(target.key) == _name(target) or (
            local is not None and local.get("name") == _name(target)
        )
        merged = merge_local(
            pulled, target.remote, local_text, self.env.data, ids, keep_name=keep_name
        )
        if local is not None and {k: local[k] for k in FILE_FIELDS if k in local} == merged:
            unchanged = FileChange(path, local_text, local_text)
            return unchanged, replace(outcome, action="identical")
        change = FileChange(path, local_text, dump_workflow(merged))
        synced = local is not None and state.digest(self.env.name, target.key) == file_digest(local)
        if not synced and not force:
            return change, None
        return change, replace(outcome, action="update", forced=not synced)

    def _conflict(self, paths: Sequence[Path]) -> PullConflict:
        shown = ", ".join(self.workspace.relative(p) for p in paths)
        return PullConflict(
            f"{shown}: changed here since the last push or pull to {self.env.name}, and n8n "
            "holds something else; nothing was written",
            hint=f"see what differs with `n8nlock diff --env {self.env.name}`; push your "
            "changes, or pull again with --force to replace them with n8n's version",
        )


def _name(target: _Target) -> str:
    return str(target.remote.get("name") or target.key or target.workflow_id)


def _described(workflow: Mapping[str, Any]) -> str:
    state = "published" if workflow.get("active") else "not published"
    updated = str(workflow.get("updatedAt") or "")[:10]
    return f"{workflow.get('id')} ({state}{', updated ' + updated if updated else ''})"


def _credential_name(kind: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_-]+", "_", kind).strip("_") or "credential"
    name, number = base, 2
    while name in taken:
        name, number = f"{base}-{number}", number + 1
    return name


def _parsed(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
