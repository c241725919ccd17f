from __future__ import annotations

import shlex

import pytest

from n8n_lockkit.rewrite.wrapping.scope import (
    ScopeError,
    UnbracedExpression,
    parse_scope,
    refuse_unbraced,
    unbraced_expression,
)


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


@pytest.mark.parametrize(
    ("typed", "fixed"),
    [
        ("$json.body.orderId", "={{ $json.body.orderId }}"),
        ("'order-' + $json.body.orderId", "={{ 'order-' + $json.body.orderId }}"),
        ("=$json.body.orderId", "={{ $json.body.orderId }}"),
        ("order-$json.body.id", "=order-{{ $json.body.id }}"),
        ("=order-$json.id-{{ $json.kind }}", "=order-{{ $json.id }}-{{ $json.kind }}"),
        ("$('Webhook').item.json.id", "={{ $('Webhook').item.json.id }}"),
        ("$input.all().length", "={{ $input.all().length }}"),
        ("tenant-$execution.id", "=tenant-{{ $execution.id }}"),
        ("$now.toISODate()", "={{ $now.toISODate() }}"),
        ("=orders", "orders"),
        ("='orders'", "={{ 'orders' }}"),
    ],
)
def test_a_value_that_reads_like_an_expression_without_being_one_gets_its_fixed_form(
    typed: str, fixed: str
) -> None:
    assert unbraced_expression(typed) == fixed
    assert unbraced_expression(fixed) is None


@pytest.mark.parametrize(
    "value",
    [
        "orders",
        "price$5",
        "={{ $json.body.orderId }}",
        "=api-{{ $json.userId }}",
        "={{ '$json.body.orderId' }}",
        '={{ "$json.body.orderId" }}',
        "order-{{ $json.id }}",  # parse_scope's to refuse: no leading '='
        "={{ $json.a",
        "=",
        "3",
    ],
)
def test_literals_expressions_and_broken_braces_are_not_taken_for_a_missing_brace(
    value: str,
) -> None:
    assert unbraced_expression(value) is None


@pytest.mark.parametrize(
    ("typed", "message", "hint"),
    [
        (
            "$json.body.orderId",
            "--scope-expression '$json.body.orderId' has no ={{ }}, so n8n uses it as text: "
            "every execution would wait for one lock",
            "use --scope-expression '={{ $json.body.orderId }}' (to mean the text itself, "
            "write it as a string: --scope-expression '={{ \"$json.body.orderId\" }}')",
        ),
        (
            "'order-' + $json.body.orderId",
            "--scope-expression \"'order-' + $json.body.orderId\" has no ={{ }}, so n8n uses "
            "it as text: every execution would wait for one lock",
            "use --scope-expression '={{ '\"'\"'order-'\"'\"' + $json.body.orderId }}' (to mean "
            "the text itself, write it as a string: --scope-expression "
            "'={{ \"'\"'\"'order-'\"'\"' + $json.body.orderId\" }}')",
        ),
        (
            "=$json.body.orderId",
            "--scope-expression '=$json.body.orderId' starts with '=' but has no {{ }}, so n8n "
            "uses the rest as text: every execution would wait for one lock",
            "use --scope-expression '={{ $json.body.orderId }}'",
        ),
        (
            "=orders",
            "--scope-expression '=orders' starts with '=' but has no {{ }}, so n8n uses the "
            "rest as text",
            "use --scope-expression orders",
        ),
    ],
)
def test_refusal_names_the_fixed_form_quoted_for_a_posix_shell(
    typed: str, message: str, hint: str
) -> None:
    with pytest.raises(UnbracedExpression) as refused:
        refuse_unbraced("--scope-expression", typed, "every execution would wait for one lock")
    assert (refused.value.message, refused.value.hint) == (message, hint)


def test_the_hints_shell_words_give_back_the_fixed_form_and_the_literal() -> None:
    with pytest.raises(UnbracedExpression) as refused:
        refuse_unbraced("--scope-expression", "'order-' + $json.body.orderId", "")
    hint = refused.value.hint or ""
    use = shlex.split(hint.split(" (", 1)[0])
    assert use == ["use", "--scope-expression", "={{ 'order-' + $json.body.orderId }}"]
    literal = shlex.split(hint.split("write it as a string: ", 1)[1].removesuffix(")"))
    assert parse_scope(literal[1]).static == "'order-' + $json.body.orderId"


def test_a_text_that_means_dollar_json_is_a_static_scope_written_as_a_string() -> None:
    assert parse_scope('={{ "$json.body.orderId" }}').static == "$json.body.orderId"
    assert parse_scope("={{ '$json.body.orderId' }}").static == "$json.body.orderId"
    assert parse_scope("={{ `x-${$json.id}` }}").static is None
