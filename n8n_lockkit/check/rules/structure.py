"""Structure as n8n itself enforces it, and what the public API accepts."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from n8n_lockkit.check.rules.base import (
    NODE_KEYS,
    SETTINGS_KEYS,
    SETTINGS_TYPES,
    STICKY_NOTE,
    STRIPPED_TOP_LEVEL,
    WRITABLE_TOP_LEVEL,
    Path,
    Problem,
    WorkflowContext,
    name_of,
)
from n8n_lockkit.check.rules.jsstring import decode_js_string

# A string literal in JavaScript: quoted, with backslash escapes (a template literal only
# without `${…}`, whose value we cannot know).
_LITERAL = r"""(?P<q>['"`])(?P<name>(?:\\[\s\S]|(?!(?P=q))[^\\\n])+)(?P=q)"""
_REFERENCES = (
    re.compile(rf"\$\(\s*{_LITERAL}\s*\)"),
    re.compile(rf"\$node\[\s*{_LITERAL}\s*\]"),
    re.compile(rf"\$items\(\s*{_LITERAL}"),
)
_EXPRESSION_PARTS = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
# Parameters whose whole text is JavaScript (Code, Function and FunctionItem nodes).
_CODE_PARAMETERS = frozenset({"jsCode", "functionCode"})


def unique_node_names(ctx: WorkflowContext) -> Iterator[Problem]:
    """Node names are unique: n8n keys connections by name."""
    counts = Counter(name_of(node) for _, node in ctx.nodes())
    for index, node in ctx.nodes():
        name = name_of(node)
        if name and counts[name] > 1:
            yield Problem(
                ("nodes", index, "name"),
                f"duplicate node name {name!r}",
                "rename one; connections refer to nodes by name",
            )


def unique_node_ids(ctx: WorkflowContext) -> Iterator[Problem]:
    """Node ids, where given, are unique: n8n rejects duplicates on save."""
    ids = [(index, node.get("id")) for index, node in ctx.nodes()]
    counts = Counter(node_id for _, node_id in ids if isinstance(node_id, str))
    for index, node_id in ids:
        if isinstance(node_id, str) and counts[node_id] > 1:
            yield Problem(
                ("nodes", index, "id"),
                f"duplicate node id {node_id!r}",
                "give each node its own id (any unique string, usually a UUID)",
            )


def connection_sources_exist(ctx: WorkflowContext) -> Iterator[Problem]:
    """Every key of `connections` is the name of a node."""
    names = ctx.node_names
    for source in ctx.connections:
        if source not in names:
            yield Problem(
                ("connections", source),
                f"connection from unknown node {source!r}",
                "remove the entry or rename it to an existing node",
            )


def connection_targets_exist(ctx: WorkflowContext) -> Iterator[Problem]:
    """Every connection points at an existing node."""
    names = ctx.node_names
    for where, target in ctx.targets():
        node = target.get("node")
        if isinstance(node, str) and node not in names:
            yield Problem(
                (*where, "node"),
                f"connection to unknown node {node!r}",
                "point it at an existing node name",
            )


def _javascript_in(strings: Iterable[tuple[Path, str]]) -> Iterator[tuple[Path, str]]:
    """The JavaScript n8n evaluates: `{{ … }}` of expressions, and whole code parameters."""
    for path, text in strings:
        if path and path[-1] in _CODE_PARAMETERS:
            yield path, text
        elif text.startswith("="):
            for part in _EXPRESSION_PARTS.finditer(text):
                yield path, part.group(1)


def node_references_exist(ctx: WorkflowContext) -> Iterator[Problem]:
    """`$('Name')`, `$node["Name"]` and `$items("Name")` name existing nodes."""
    names = ctx.node_names
    for index, node in ctx.nodes():
        if node.get("type") == STICKY_NOTE:
            continue  # its text is shown, never evaluated
        code = _javascript_in(ctx.parameter_strings(index, node))
        for where, text in code:
            if "$" not in text:
                continue  # every reference starts with $: most text need not be searched
            for pattern in _REFERENCES:
                for match in pattern.finditer(text):
                    if match.group("q") == "`" and "${" in match.group("name"):
                        continue
                    name = decode_js_string(match.group("name"))
                    if name not in names:
                        yield Problem(
                            where,
                            f"refers to unknown node {name!r}",
                            "a renamed node must be renamed in expressions too",
                        )


def api_top_level_keys(ctx: WorkflowContext) -> Iterator[Problem]:
    """No top-level key that n8n's API refuses: push leaves such keys out, so they are lost."""
    for key in ctx.workflow:
        if key not in WRITABLE_TOP_LEVEL | STRIPPED_TOP_LEVEL:
            yield Problem(
                (key,),
                f"top-level key {key!r} is refused by n8n's public API; push leaves it out",
                "remove it; n8n's API takes name, nodes, connections, settings, staticData",
            )


def api_settings_keys(ctx: WorkflowContext) -> Iterator[Problem]:
    """`settings` holds only keys the public API accepts."""
    for key in ctx.settings:
        if key not in SETTINGS_KEYS:
            yield Problem(
                ("settings", key),
                f"settings key {key!r} is rejected by n8n's API",
                "remove it (n8n answers 400 'Unrecognized key(s) in object')",
            )


_JSON_TYPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "boolean": ("true or false", lambda v: isinstance(v, bool)),
    "string": ("a string", lambda v: isinstance(v, str)),
    "number": ("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    "array": ("a list", lambda v: isinstance(v, list)),
}


def _expected_setting(key: str, value: Any) -> str | None:
    """What the API expects for settings `key` when it refuses `value`; None if it accepts it."""
    expected = SETTINGS_TYPES.get(key)
    if expected is None:
        return None  # an unknown key: api-settings-keys reports it
    if isinstance(expected, frozenset):
        if isinstance(value, str) and value in expected:
            return None
        return "one of " + ", ".join(json.dumps(v) for v in sorted(expected))
    description, accepts = _JSON_TYPES[expected]
    return None if accepts(value) else description


def api_settings_values(ctx: WorkflowContext) -> Iterator[Problem]:
    """`settings` values have the types the public API accepts (`errorWorkflow: null` does not)."""
    for key, value in ctx.settings.items():
        expected = _expected_setting(key, value)
        if expected is None:
            continue
        if value is None:
            hint = f'remove "{key}": null; n8n then uses its default'
            if key == "errorWorkflow":
                hint = 'remove "errorWorkflow": null (no error workflow), or name a workflow id'
        else:
            hint = f"use {expected}, or remove the key for n8n's default"
        yield Problem(
            ("settings", key),
            f"settings.{key} is {json.dumps(value)}; n8n's API refuses it and expects {expected}",
            hint,
        )


def api_node_keys(ctx: WorkflowContext) -> Iterator[Problem]:
    """Nodes hold only keys the public API accepts."""
    for index, node in ctx.nodes():
        for key in node:
            if key not in NODE_KEYS:
                yield Problem(
                    ("nodes", index, key),
                    f"node key {key!r} is rejected by n8n's API",
                    "remove it; the API's node schema allows no other keys",
                )
