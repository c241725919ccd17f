"""The discipline user Code nodes follow: only what n8n's Code sandbox offers by default.

Checked on n8n 2.41.1 with its default settings, through a webhook workflow running a Code
node: `this.helpers` is an object (23 helpers); `$env` fails the execution, because
`N8N_BLOCK_ENV_ACCESS_IN_NODE` blocks it unless set to "false" (n8n-workflow's
workflow-data-proxy-env-provider); `process` is undefined in the task runner; `require('crypto')`
fails, because only the modules in NODE_FUNCTION_ALLOW_BUILTIN / NODE_FUNCTION_ALLOW_EXTERNAL
load. An instance may allow each of these, so they are warnings, not errors.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from n8n_lockkit.check.rules.base import (
    CODE,
    DEPRECATED_CODE,
    MARKER,
    Problem,
    WorkflowContext,
    code_of,
    is_python,
    name_of,
)

_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_LINE_COMMENT = re.compile(r"(?<![:\\])//.*$", re.MULTILINE)
# Not a property of something else (`item.process`, `$json.require(…)`).
_FREE = r"(?<![\w$.])"

SANDBOX_TRAPS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(rf"{_FREE}require\s*\("),
        "require() loads only the modules the instance allows in NODE_FUNCTION_ALLOW_BUILTIN / "
        "NODE_FUNCTION_ALLOW_EXTERNAL (none by default, never on n8n Cloud)",
        "use a built-in node (HTTP Request, Crypto, …), or have the instance allow the module "
        "with NODE_FUNCTION_ALLOW_BUILTIN=<module> or NODE_FUNCTION_ALLOW_EXTERNAL=<package>",
    ),
    (
        re.compile(rf"{_FREE}\$env\b"),
        "$env fails the execution unless the instance sets N8N_BLOCK_ENV_ACCESS_IN_NODE=false "
        "(blocked by default since n8n 2.0)",
        "pass the value in from the env file or a credential, or have the instance set "
        "N8N_BLOCK_ENV_ACCESS_IN_NODE=false",
    ),
    (
        re.compile(rf"{_FREE}process\s*\??\."),
        "process is undefined in n8n 2.x's Code node (it runs in a task runner), and "
        "N8N_BLOCK_ENV_ACCESS_IN_NODE blocks process.env by default",
        "pass the value in from the env file or a credential instead",
    ),
)


def _without_comments(source: str) -> str:
    return _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub("", source))


def code_sandbox(ctx: WorkflowContext) -> Iterator[Problem]:
    """User Code nodes use no `require`, `$env` or `process`, which n8n blocks by default."""
    if ctx.is_primitive:
        return
    for index, node in ctx.nodes(CODE):
        if is_python(node):
            continue  # the traps are JavaScript's
        name, source = code_of(node)
        if source.lstrip().startswith(MARKER):
            continue  # reported by primitive-marker-forbidden
        code = _without_comments(source)
        for pattern, message, hint in SANDBOX_TRAPS:
            if pattern.search(code):
                yield Problem(
                    ("nodes", index, "parameters", name),
                    f"Code node {name_of(node)!r}: {message}",
                    hint,
                )


def deprecated_function_nodes(ctx: WorkflowContext) -> Iterator[Problem]:
    """No Function/FunctionItem nodes: deprecated; n8n 2.41.1 still saves and runs them."""
    for index, node in ctx.nodes(*DEPRECATED_CODE):
        yield Problem(
            ("nodes", index, "type"),
            f"node {name_of(node)!r} is a deprecated {node['type']} node",
            "replace it with a Code node (n8n-nodes-base.code); later n8n versions remove it",
        )
