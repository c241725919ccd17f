"""What an env file means: its schema, env selection, and the edits commands make to it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import jsonschema
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from n8n_lockkit.errors import EnvError, EnvSelectionError
from n8n_lockkit.jsonpath import json_path
from n8n_lockkit.workspace.layout import Workspace, check_key_prefix
from n8n_lockkit.workspace.plan import FileChange
from n8n_lockkit.workspace.yamlfile import YamlDocument, to_plain


def _schema() -> dict[str, Any]:
    text = resources.files("n8n_lockkit").joinpath("schemas/env.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@dataclass
class EnvFile:
    """One `envs/<env>.yml`, validated, kept as a round-trip document for edits."""

    name: str
    document: YamlDocument

    @property
    def data(self) -> dict[str, Any]:
        plain: dict[str, Any] = to_plain(self.document.data)
        return plain

    def change(self) -> FileChange:
        return FileChange(self.document.path, self.document.original, self.document.dumps())

    def register_workflow(self, key: str, display_name: str) -> None:
        """Add `workflows.<key>: {id: "", name: …}` unless the key is already there."""
        workflows = self.document.get(("workflows",))
        if not isinstance(workflows, dict):
            workflows = CommentedMap()
            self.document.set(("workflows",), workflows)
        if key not in workflows:
            entry = CommentedMap(id="", name=display_name)
            entry.fa.set_flow_style()
            workflows[key] = entry

    def record_workflow(self, key: str, workflow_id: str, display_name: str) -> None:
        """Set the id (and name) n8n gave a workflow, keeping the entry's place and style."""
        self.register_workflow(key, display_name)
        entry = self.document.get(("workflows", key))
        entry["id"] = workflow_id
        entry["name"] = display_name

    def workflow_ids(self) -> dict[str, str]:
        """Key → id of every workflow this env has on n8n (registered with an id)."""
        workflows = self.data.get("workflows") or {}
        return {
            str(key): str(entry["id"])
            for key, entry in workflows.items()
            if isinstance(entry, dict) and entry.get("id")
        }

    def credential(self, name: str) -> dict[str, Any]:
        """`credentials.<name>` (`{id, name}`), or an empty dict when the env has none."""
        entry = (self.data.get("credentials") or {}).get(name)
        return dict(entry) if isinstance(entry, dict) else {}

    def credential_ids(self) -> dict[str, str]:
        """Credential id → the name the env file gives it (`credentials.<name>.id`)."""
        credentials = self.data.get("credentials") or {}
        return {
            str(entry["id"]): str(name)
            for name, entry in credentials.items()
            if isinstance(entry, dict) and entry.get("id")
        }

    def record_credential(self, name: str, credential_id: str, display_name: str) -> None:
        """Set `credentials.<name>: {id, name}`; `redis` is the one the primitives use."""
        credentials = self.document.get(("credentials",))
        if not isinstance(credentials, dict):
            credentials = CommentedMap()
            self.document.set(("credentials",), credentials)
        entry = credentials.get(name)
        if not isinstance(entry, dict):
            entry = CommentedMap()
            entry.fa.set_flow_style()
            credentials[name] = entry
        entry["id"] = credential_id
        entry["name"] = display_name

    def redis_address(self) -> dict[str, Any] | None:
        """The `redis:` record (host, port, database, ssl, user, passwordEnv), if any."""
        record = self.data.get("redis")
        return dict(record) if isinstance(record, dict) else None

    def record_redis_address(self, record: Mapping[str, Any]) -> bool:
        """Set `redis:` to `record` (one flow-style line after `credentials:`); True if changed."""
        if self.redis_address() == dict(record):
            return False
        entry = CommentedMap(record)
        entry.fa.set_flow_style()
        data = self.document.data
        if "redis" in data:
            data["redis"] = entry
        else:
            keys = list(data)
            position = keys.index("credentials") + 1 if "credentials" in keys else len(keys)
            data.insert(position, "redis", entry)
        return True

    def ensure_lock_scopes(self) -> None:
        if not isinstance(self.document.get(("lockScopes",)), list):
            scopes = CommentedSeq()
            scopes.fa.set_flow_style()
            self.document.set(("lockScopes",), scopes)

    def add_lock_scope(self, scope: str) -> bool:
        """Append a static scope once; returns whether it was new."""
        self.ensure_lock_scopes()
        scopes = self.document.get(("lockScopes",))
        if scope in scopes:
            return False
        scopes.append(scope)
        return True

    @property
    def key_prefix(self) -> str:
        """The env's key namespace (`keyPrefix:`): empty, the keys of an env without one."""
        prefix = self.data.get("keyPrefix")
        return prefix if isinstance(prefix, str) else ""

    def lock_scopes(self) -> list[str]:
        scopes = self.data.get("lockScopes")
        return [str(s) for s in scopes] if isinstance(scopes, list) else []

    def remove_lock_scope(self, scope: str) -> bool:
        """Take a static scope out of `lockScopes` (the list and its comments stay); returns
        whether it was there."""
        scopes = self.document.get(("lockScopes",))
        if not isinstance(scopes, list) or scope not in scopes:
            return False
        del scopes[scopes.index(scope)]
        return True


def validate_env(name: str, document: YamlDocument, display_path: str) -> None:
    prefix = document.get(("keyPrefix",))
    if isinstance(prefix, str):
        check_key_prefix(prefix, f"{display_path}::$.keyPrefix")
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(to_plain(document.data)), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise EnvError(
            f"{display_path}::{json_path(list(first.path))}: {first.message}{more}",
            hint="fix the env file; `n8nlock init` shows the expected shape",
        )
    declared = document.get(("name",))
    if declared != name:
        raise EnvError(
            f"{display_path}::$.name: says {declared!r} but the file is named {name}.yml",
            hint=f"set `name: {name}` or rename the file",
        )


def load_env(workspace: Workspace, name: str) -> EnvFile:
    path = workspace.env_path(name)
    if not path.is_file():
        raise EnvSelectionError(
            f"unknown env {name!r}: {workspace.relative(path)} does not exist",
            hint=_available(workspace),
        )
    display = workspace.relative(path)
    document = YamlDocument.load(path, display)
    validate_env(name, document, display)
    return EnvFile(name, document)


def _available(workspace: Workspace) -> str:
    names = workspace.env_names()
    if not names:
        return "this workspace has no env yet: run `n8nlock init --env dev`"
    return "available envs: " + ", ".join(names)


def select_envs(workspace: Workspace, requested: Sequence[str]) -> list[EnvFile]:
    """The envs a registering command acts on: the named ones, or the only one."""
    if requested:
        return [load_env(workspace, name) for name in dict.fromkeys(requested)]
    names = workspace.env_names()
    if len(names) == 1:
        return [load_env(workspace, names[0])]
    if not names:
        raise EnvSelectionError(
            f"no env files in {workspace.relative(workspace.envs_dir)}/",
            hint="run `n8nlock init --env dev` to create one",
        )
    raise EnvSelectionError(
        f"this workspace has several envs ({', '.join(names)}) and none was chosen",
        hint="name the env(s) to register in with --env, e.g. --env " + names[0],
    )
