"""`{{@:env:path}}` placeholders: find them in workflow text and resolve them for one env.

Placeholders stay in the workflow files; they are resolved at push time, per env. The
form `{{@env:path}}` is accepted too when reading.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from n8n_lockkit.errors import PlaceholderError

PLACEHOLDER = re.compile(r"\{\{@:?env:([^{}\s]*)\}\}")
# Missing keys that have a safe meaning; everything else must be in the env file.
DEFAULTS: dict[str, Any] = {"lockScopes": [], "keyPrefix": ""}
# Ids that must be real before a workflow can run: empty means "not created on n8n yet".
_ID_PATHS = re.compile(r"^(credentials|workflows)\.[^.]+\.(id|name)$")


@dataclass(frozen=True)
class Unresolved:
    path: str
    reason: str


def _lookup(data: Mapping[str, Any], path: str) -> Any:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            if path in DEFAULTS:
                return DEFAULTS[path]
            raise KeyError(path)
        node = node[part]
    return node


def resolve_value(data: Mapping[str, Any], path: str) -> Any:
    """The env value a placeholder names, or PlaceholderError saying why not."""
    problem = check_path(data, path, require_ids=True)
    if problem is not None:
        raise PlaceholderError(f"{{{{@:env:{path}}}}}: {problem.reason}")
    return _lookup(data, path)


def check_path(data: Mapping[str, Any], path: str, *, require_ids: bool) -> Unresolved | None:
    """Why `path` does not resolve, or None; `require_ids` also refuses ids not yet minted."""
    if not path:
        return Unresolved(path, "empty placeholder path")
    try:
        value = _lookup(data, path)
    except KeyError:
        return Unresolved(path, "not found in the env file")
    if value is None:
        return Unresolved(path, "is empty (null) in the env file")
    if require_ids and _ID_PATHS.match(path) and value == "":
        return Unresolved(path, "is empty: the workflow or credential is not on n8n yet")
    return None


def _as_json_string_fragment(value: Any) -> str:
    # Every placeholder sits inside a JSON string: emit text that is valid there.
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return json.dumps(text, ensure_ascii=False)[1:-1]


def find_paths(text: str) -> list[str]:
    return [match.group(1) for match in PLACEHOLDER.finditer(text)]


def unresolved(text: str, data: Mapping[str, Any], *, require_ids: bool) -> list[Unresolved]:
    paths = dict.fromkeys(find_paths(text))
    problems = (check_path(data, path, require_ids=require_ids) for path in paths)
    return [p for p in problems if p is not None]


_WORKFLOW_ID = re.compile(r"workflows\.([A-Za-z0-9_-]+)\.id")
_WORKFLOW_REFERENCE = re.compile(r"\{\{@:?env:workflows\.([A-Za-z0-9_-]+)\.id\}\}")
CYCLE_HINT = "break the cycle; n8n needs each id before it is referenced"


def workflow_references(text: str, key: str) -> tuple[str, ...]:
    """The other workflows whose ids a workflow's text names, in order: push sends them first."""
    return tuple(k for k in dict.fromkeys(_WORKFLOW_REFERENCE.findall(text)) if k != key)


def cycle_through(references: Mapping[str, Sequence[str]], key: str) -> list[str] | None:
    """A cycle of references from `key` back to it (`[key, …, key]`), or None."""
    trail = [key]
    seen: set[str] = set()

    def walk(current: str) -> bool:
        for following in references.get(current, ()):
            if following == key:
                trail.append(key)
                return True
            if following not in seen:
                seen.add(following)
                trail.append(following)
                if walk(following):
                    return True
                trail.pop()
        return False

    return trail if walk(key) else None


def push_refusals(text: str, data: Mapping[str, Any], pushed: Collection[str]) -> list[Unresolved]:
    """What `n8nlock push` refuses in one workflow's text before it sends anything, and
    `validate --env` reports the same: a placeholder that does not resolve in the env, or
    names an id n8n has not given yet (an empty credential id). The id of a workflow in
    `pushed` is no problem: push creates that workflow first."""
    return [
        problem
        for problem in unresolved(text, data, require_ids=True)
        if not ((match := _WORKFLOW_ID.fullmatch(problem.path)) and match.group(1) in pushed)
    ]


def refusal_hint(path: str, env: Mapping[str, Any] | None = None) -> str:
    """What to do about a placeholder push refuses: the same words from push and validate
    (`env`: the env's data, whose name the hint gives)."""
    name = str((env or {}).get("name") or "…")
    if path.startswith("credentials.redis."):
        return f"run `n8nlock redis-credential --env {name}` to create or link the Redis credential"
    if path.startswith("credentials."):
        name = path.split(".")[1]
        return (
            f"record the credential's id and name on this n8n as credentials.{name}: "
            "{id: …, name: …} in the env file (`n8nlock pull --record-credentials` records "
            "the ones a workflow on n8n uses)"
        )
    if path.startswith("workflows."):
        return "push that workflow too (name its key), or fill its id in the env file"
    return "add the key to the env file; nothing was sent"


def resolve_text(text: str, data: Mapping[str, Any]) -> str:
    """Replace every placeholder in a workflow's JSON text with the env's value."""
    return PLACEHOLDER.sub(
        lambda m: _as_json_string_fragment(resolve_value(data, m.group(1))), text
    )
