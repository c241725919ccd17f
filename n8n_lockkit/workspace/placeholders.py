"""`{{@:env:path}}` placeholders: find them in workflow text and resolve them for one env.

Placeholders stay in the workflow files; they are resolved at push time, per env. The
form `{{@env:path}}` is accepted too when reading.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
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


def resolve_text(text: str, data: Mapping[str, Any]) -> str:
    """Replace every placeholder in a workflow's JSON text with the env's value."""
    return PLACEHOLDER.sub(
        lambda m: _as_json_string_fragment(resolve_value(data, m.group(1))), text
    )
