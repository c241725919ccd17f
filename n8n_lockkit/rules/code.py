"""The discipline user Code nodes follow: only what n8n's Code sandbox really offers."""

from __future__ import annotations

import re
from collections.abc import Iterator

from n8n_lockkit.rules.base import (
    CODE,
    DEPRECATED_CODE,
    MARKER,
    Problem,
    WorkflowContext,
    code_of,
)

_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_LINE_COMMENT = re.compile(r"(?<![:\\])//.*$", re.MULTILINE)

SANDBOX_TRAPS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(r"\brequire\s*\("),
        "require() is blocked in n8n's Code sandbox",
        "n8n Cloud never allows it; self-hosted needs NODE_FUNCTION_ALLOW_BUILTIN/EXTERNAL",
    ),
    (
        re.compile(r"\bthis\.helpers\b"),
        "this.helpers is not available in a Code node",
        "use a built-in node (HTTP Request, Redis, …) for I/O",
    ),
    (
        re.compile(r"\$env\b"),
        "$env is blocked in Code nodes by default (n8n 2.x)",
        "pass the value in from the env file or a credential instead",
    ),
    (
        re.compile(r"\bprocess\.env\b"),
        "process.env is not available in n8n's Code sandbox",
        "pass the value in from the env file or a credential instead",
    ),
)


def _without_comments(source: str) -> str:
    return _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub("", source))


def code_sandbox(ctx: WorkflowContext) -> Iterator[Problem]:
    """User Code nodes use nothing the sandbox blocks (primitives are exempt by the marker)."""
    if ctx.is_primitive:
        return
    for index, node in ctx.nodes_of(CODE):
        name, source = code_of(node)
        if source.lstrip().startswith(MARKER):
            continue  # reported by primitive-marker-forbidden
        code = _without_comments(source)
        for pattern, message, hint in SANDBOX_TRAPS:
            if pattern.search(code):
                yield Problem(
                    ("nodes", index, "parameters", name),
                    f"Code node {node['name']!r}: {message}",
                    hint,
                )


def deprecated_function_nodes(ctx: WorkflowContext) -> Iterator[Problem]:
    """No Function/FunctionItem nodes: n8n 2.42 blocks saving them and 3.0 removes them."""
    for index, node in ctx.nodes_of(*DEPRECATED_CODE):
        yield Problem(
            ("nodes", index, "type"),
            f"node {node['name']!r} is a deprecated {node['type']} node",
            "replace it with a Code node (n8n-nodes-base.code)",
        )
