"""Scope expressions: every form n8n accepts, checked before they reach a workflow.

n8n reads a parameter as a literal unless it starts with `=`; after `=`, text outside
`{{ … }}` is literal and each `{{ … }}` is JavaScript. So `orders`, `={{ 'order-' +
$json.id }}` and `=api-v1-{{ $json.userId }}` are all valid, and all are passed on as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from n8n_lockkit.errors import LockkitError

_QUOTED_LITERAL = re.compile(r"""^\s*(['"])((?:(?!\1)[^\\$`])*)\1\s*$""")
_PLACEHOLDER = re.compile(r"\{\{@:?env:")


@dataclass(frozen=True)
class Scope:
    expression: str  # exactly what goes into the node parameter
    static: str | None  # the scope itself, when it does not depend on the execution

    @property
    def is_static(self) -> bool:
        return self.static is not None


class ScopeError(LockkitError):
    """A scope expression n8n would not evaluate to a usable scope."""


def _segments(template: str, shown: str) -> list[tuple[bool, str]]:
    """(is_code, text) pieces of an expression body; raises on unbalanced braces."""
    pieces: list[tuple[bool, str]] = []
    rest = template
    while rest:
        start = rest.find("{{")
        stray_close = rest.find("}}")
        if stray_close != -1 and (start == -1 or stray_close < start):
            raise ScopeError(
                f"unbalanced '}}}}' in scope expression {shown!r}",
                hint="every {{ needs a matching }}",
            )
        if start == -1:
            pieces.append((False, rest))
            break
        end = rest.find("}}", start + 2)
        if end == -1:
            raise ScopeError(
                f"unbalanced '{{{{' in scope expression {shown!r}",
                hint="every {{ needs a matching }}",
            )
        if start:
            pieces.append((False, rest[:start]))
        code = rest[start + 2 : end]
        if "{{" in code:
            raise ScopeError(
                f"nested '{{{{' in scope expression {shown!r}",
                hint="write one {{ … }} per piece of JavaScript",
            )
        if not code.strip():
            raise ScopeError(
                f"empty {{{{ }}}} in scope expression {shown!r}",
                hint="put the JavaScript that computes the scope inside",
            )
        pieces.append((True, code))
        rest = rest[end + 2 :]
    return pieces


def _static_value(pieces: list[tuple[bool, str]]) -> str | None:
    parts = []
    for is_code, text in pieces:
        if not is_code:
            parts.append(text)
            continue
        literal = _QUOTED_LITERAL.match(text)
        if literal is None:
            return None
        parts.append(literal.group(2))
    return "".join(parts)


def parse_scope(expression: str) -> Scope:
    """Check a scope expression and say whether it is static."""
    if _PLACEHOLDER.search(expression):
        raise ScopeError(
            "a scope expression cannot hold an {{@:env:…}} placeholder",
            hint="write the scope itself, or an n8n expression",
        )
    if not expression.startswith("="):
        if not expression.strip():
            raise ScopeError(
                "the scope expression is empty",
                hint="e.g. --scope-expression \"={{ 'order-' + $json.body.id }}\"",
            )
        if "{{" in expression or "}}" in expression:
            raise ScopeError(
                f"scope expression {expression!r} has {{{{ }}}} but no leading '=', so n8n "
                "would use it literally",
                hint=f"did you mean '={expression}'?",
            )
        return Scope(expression, expression)
    body = expression[1:]
    if not body.strip():
        raise ScopeError(
            "the scope expression is empty after '='",
            hint="e.g. --scope-expression \"={{ 'order-' + $json.body.id }}\"",
        )
    pieces = _segments(body, expression)
    static = _static_value(pieces)
    if static is not None and not static.strip():
        raise ScopeError(
            f"scope expression {expression!r} is always empty",
            hint="an empty scope would lock nothing",
        )
    return Scope(expression, static)
