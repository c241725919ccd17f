from __future__ import annotations

import pytest

from n8n_lockkit.rewrite.wrapping.scope import ScopeError, parse_scope


@pytest.mark.parametrize(
    ("expression", "static"),
    [
        ("orders", "orders"),
        ("=orders", "orders"),
        ("={{ 'global' }}", "global"),
        ('={{ "global" }}', "global"),
        ("={{ 'a' }}-{{ \"b\" }}", "a-b"),
        ("={{ 'order-' + $json.body.orderId }}", None),
        ("=api-v1-{{ $json.userId }}", None),
        ("={{ `x-${$json.id}` }}", None),
        ("={{ $execution.id }}", None),
    ],
)
def test_accepted_forms_pass_unchanged(expression: str, static: str | None) -> None:
    scope = parse_scope(expression)
    assert scope.expression == expression
    assert scope.static == static


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("=", "empty after '='"),
        ("={{ }}", "empty {{ }}"),
        ("={{ $json.a ", "unbalanced '{{'"),
        ("=a }}", "unbalanced '}}'"),
        ("={{ {{ $json.a }} }}", "nested"),
        ("order-{{ $json.id }}", "no leading '='"),
        ("={{ '' }}", "always empty"),
        ("={{@:env:lockScopes}}", "placeholder"),
    ],
)
def test_unusable_expressions_are_refused(expression: str, message: str) -> None:
    with pytest.raises(ScopeError, match=message.replace("{", r"\{").replace("}", r"\}")):
        parse_scope(expression)
