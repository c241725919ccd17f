"""Scope expressions: every form n8n accepts, checked before they reach a workflow.

n8n reads a parameter as a literal unless it starts with `=`; after `=`, text outside
`{{ … }}` is literal and each `{{ … }}` is JavaScript. So `orders`, `={{ 'order-' +
$json.id }}` and `=api-v1-{{ $json.userId }}` are all valid, and all are passed on as written.

`unbraced_expression` finds the values that read like an expression but that n8n would take
as text (`$json.id`, `=$json.id`, `order-$json.id`): every option that takes an n8n
expression refuses them with `refuse_unbraced`, and `validate` flags the workflows wrapped
with one. A text that really means `$json` is written as a string inside an expression:
`={{ "$json.id" }}`.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from n8n_lockkit.errors import LockkitError

# A quoted string inside {{ }}: '…' and "…" are plain JavaScript strings, `…` may interpolate.
_QUOTED_LITERAL = re.compile(r"""^\s*(?:'([^'\\]*)'|"([^"\\]*)"|`([^`\\$]*)`)\s*$""")
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
        parts.append(next(group for group in literal.groups() if group is not None))
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


# n8n's built-in variables (and `$(…)`, a node's output): a value that names one outside
# {{ … }} was meant as an expression; no scope, key or cost means them as text.
_BUILT_INS = (
    "json|input|node|execution|workflow|now|today|vars|env|items?|binary|prevNode|runIndex|"
    "parameter|position|jmespath|secrets|fromAI|evaluateExpression|ifEmpty|if|min|max|data"
)
_CALL = r"""\((?:[^()'"]|'[^']*'|"[^"]*"|\([^()]*\))*\)"""
_ACCESS = rf"(?:\??\.[A-Za-z_$][\w$]*|\[[^\]]*\]|{_CALL})*"
_REFERENCE = re.compile(rf"(?:\$(?:{_BUILT_INS})(?![\w$])|\$(?=\())" + _ACCESS)
# Text around a reference that only JavaScript would write: then the whole value is code
# ('order-' + $json.id); otherwise the text is a template's literal part (order-$json.id).
_JAVASCRIPT = re.compile(r"""['"`+()?|&!<>=,]""")


def _as_expression(text: str) -> str:
    """The expression n8n evaluates for `text` that names a variable: one {{ }} around it when
    it reads as JavaScript, else a template with {{ }} around each reference."""
    text = text.strip()
    if _JAVASCRIPT.search(_REFERENCE.sub("", text)):
        return f"={{{{ {text} }}}}"
    return "=" + _REFERENCE.sub(lambda m: f"{{{{ {m.group(0)} }}}}", text)


def unbraced_expression(value: str) -> str | None:
    """The form n8n evaluates of a value that reads like an n8n expression but is not one,
    else None.

    Such a value names n8n's variables (`$json`, `$input`, `$(…)`, `$execution`, …) outside
    `{{ }}`, or starts with `=` and has no `{{ }}` (n8n uses the rest as text):
    `$json.id` → `={{ $json.id }}`, `'order-' + $json.id` → `={{ 'order-' + $json.id }}`,
    `order-$json.id` → `=order-{{ $json.id }}`, `=$json.id` → `={{ $json.id }}`,
    `=orders` → `orders`. A value whose braces are broken is `parse_scope`'s to refuse."""
    if not value.startswith("="):
        if "{{" in value or "}}" in value or not _REFERENCE.search(value):
            return None
        return _as_expression(value)
    body = value[1:]
    if not body.strip():
        return None
    if "{{" not in body and "}}" not in body:
        if _REFERENCE.search(body) or _JAVASCRIPT.search(body):
            return _as_expression(body)
        return body.strip()
    try:
        pieces = _segments(body, value)
    except ScopeError:
        return None
    if not any(not is_code and _REFERENCE.search(text) for is_code, text in pieces):
        return None
    braced = (
        f"{{{{{text}}}}}" if is_code else _REFERENCE.sub(lambda m: f"{{{{ {m.group(0)} }}}}", text)
        for is_code, text in pieces
    )
    return "=" + "".join(braced)


class UnbracedExpression(LockkitError):
    """An option's value reads like an n8n expression, but n8n would take it as text."""


def names_variables(value: str) -> bool:
    """Whether `value` names one of n8n's variables (`$json`, `$(…)`, …) anywhere."""
    return _REFERENCE.search(value) is not None


def why_unbraced(value: str) -> str:
    """Why n8n takes a value `unbraced_expression` fixes as text."""
    if not value.startswith("="):
        return "has no ={{ }}, so n8n uses it as text"
    if "{{" not in value:
        return "starts with '=' but has no {{ }}, so n8n uses the rest as text"
    return "names n8n's variables outside {{ }}, where n8n reads them as text"


def literal_form(value: str) -> str:
    """`value` as the text itself, in a form `unbraced_expression` accepts: a JavaScript
    string inside {{ }}."""
    return f"={{{{ {json.dumps(value, ensure_ascii=False)} }}}}"


def refuse_unbraced(option: str, value: str, effect: str, *, text_allowed: bool = True) -> None:
    """Refuse `value` given for `option` when it reads like an expression without being one;
    the hint has the fixed form, quoted for a POSIX shell, and (when the option may be text,
    `text_allowed`) how to mean the text itself. `effect` says what the text would do when it
    names n8n's variables (e.g. "every execution would wait for one lock")."""
    fixed = unbraced_expression(value)
    if fixed is None:
        return
    message = f"{option} {value!r} {why_unbraced(value)}"
    hint = f"use {option} {shlex.quote(fixed)}"
    if names_variables(value):
        message += f": {effect}"
    if text_allowed and names_variables(value) and not value.startswith("="):
        hint += (
            f" (to mean the text itself, write it as a string: {option} "
            f"{shlex.quote(literal_form(value))})"
        )
    raise UnbracedExpression(message, hint=hint)
