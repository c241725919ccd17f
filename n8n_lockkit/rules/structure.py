"""Structure as n8n itself enforces it, and what the public API accepts."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

from n8n_lockkit.rules.base import (
    NODE_KEYS,
    SETTINGS_KEYS,
    STRIPPED_TOP_LEVEL,
    WRITABLE_TOP_LEVEL,
    Problem,
    WorkflowContext,
    strings_in,
)

_REFERENCES = (
    re.compile(r"""\$\(\s*(['"])(?P<name>(?:\\.|(?!\1).)+)\1\s*\)"""),
    re.compile(r"""\$node\[\s*(['"])(?P<name>(?:\\.|(?!\1).)+)\1\s*\]"""),
    re.compile(r"""\$items\(\s*(['"])(?P<name>(?:\\.|(?!\1).)+)\1"""),
)


def unique_node_names(ctx: WorkflowContext) -> Iterator[Problem]:
    """Node names are unique: n8n keys connections by name."""
    counts = Counter(n["name"] for n in ctx.nodes)
    for index, node in enumerate(ctx.nodes):
        if counts[node["name"]] > 1:
            yield Problem(
                ("nodes", index, "name"),
                f"duplicate node name {node['name']!r}",
                "rename one; connections refer to nodes by name",
            )


def unique_node_ids(ctx: WorkflowContext) -> Iterator[Problem]:
    """Node ids, where given, are unique: n8n rejects duplicates on save."""
    counts = Counter(n["id"] for n in ctx.nodes if "id" in n)
    for index, node in enumerate(ctx.nodes):
        if "id" in node and counts[node["id"]] > 1:
            yield Problem(
                ("nodes", index, "id"),
                f"duplicate node id {node['id']!r}",
                "give each node its own id (any unique string, usually a UUID)",
            )


def connection_sources_exist(ctx: WorkflowContext) -> Iterator[Problem]:
    """Every key of `connections` is the name of a node."""
    for source in ctx.workflow["connections"]:
        if source not in ctx.node_names:
            yield Problem(
                ("connections", source),
                f"connection from unknown node {source!r}",
                "remove the entry or rename it to an existing node",
            )


def connection_targets_exist(ctx: WorkflowContext) -> Iterator[Problem]:
    """Every connection points at an existing node."""
    for source, by_type in ctx.workflow["connections"].items():
        for kind, outputs in by_type.items():
            for output, targets in enumerate(outputs):
                for position, target in enumerate(targets or []):
                    if target["node"] not in ctx.node_names:
                        yield Problem(
                            ("connections", source, kind, output, position, "node"),
                            f"connection to unknown node {target['node']!r}",
                            "point it at an existing node name",
                        )


def node_references_exist(ctx: WorkflowContext) -> Iterator[Problem]:
    """`$('Name')`, `$node["Name"]` and `$items("Name")` name existing nodes."""
    for index, node in enumerate(ctx.nodes):
        for where, text in strings_in(node.get("parameters", {}), ("nodes", index, "parameters")):
            for pattern in _REFERENCES:
                for match in pattern.finditer(text):
                    name = re.sub(r"\\(.)", r"\1", match.group("name"))
                    if name not in ctx.node_names:
                        yield Problem(
                            where,
                            f"refers to unknown node {name!r}",
                            "a renamed node must be renamed in expressions too",
                        )


def api_top_level_keys(ctx: WorkflowContext) -> Iterator[Problem]:
    """No top-level key that n8n's public API rejects on create or update."""
    for key in ctx.workflow:
        if key not in WRITABLE_TOP_LEVEL | STRIPPED_TOP_LEVEL:
            yield Problem(
                (key,),
                f"top-level key {key!r} is rejected by n8n's public API",
                "remove it; n8n accepts name, nodes, connections, settings, staticData",
            )


def api_settings_keys(ctx: WorkflowContext) -> Iterator[Problem]:
    """`settings` holds only keys the public API accepts."""
    settings = ctx.workflow.get("settings") or {}
    for key in settings:
        if key not in SETTINGS_KEYS:
            yield Problem(
                ("settings", key),
                f"settings key {key!r} is rejected by n8n's API",
                "remove it (n8n answers 400 'Unrecognized key(s) in object')",
            )


def api_node_keys(ctx: WorkflowContext) -> Iterator[Problem]:
    """Nodes hold only keys the public API accepts."""
    for index, node in enumerate(ctx.nodes):
        for key in node:
            if key not in NODE_KEYS:
                yield Problem(
                    ("nodes", index, key),
                    f"node key {key!r} is rejected by n8n's API",
                    "remove it; the API's node schema allows no other keys",
                )
