"""The one loader of `templates/js/`: Jinja with delimiters that leave n8n's `{{ }}` alone."""

from __future__ import annotations

import re

import pytest

from n8n_lockkit.errors import TemplateError
from n8n_lockkit.primitives import keys, templating

SCRIPTS = sorted((templating.templates_dir() / "js").rglob("*.js"))


def test_a_missing_script_is_a_template_error_that_names_its_path() -> None:
    with pytest.raises(TemplateError, match=r"script nowhere/none\.js is missing: .*none\.js"):
        templating.call("nowhere/none")


def test_a_value_the_caller_did_not_give_is_an_error_that_names_it() -> None:
    with pytest.raises(TemplateError, match=r"script engine/lock/verify\.js: 'decision'"):
        templating.call("engine/lock/verify")


def test_an_expression_leaves_comment_lines_out_and_a_code_node_keeps_them() -> None:
    name = "primitive/error_handler_lock_cleanup/prepare_cleanup"
    source = (templating.templates_dir() / "js" / f"{name}.js").read_text(encoding="utf-8")
    comments = [x for x in source.splitlines() if x.startswith("//")]
    assert comments
    assert not any(comment in templating.call(name) for comment in comments)
    assert all(comment in templating.code(name) for comment in comments)


def test_n8n_braces_and_push_placeholders_pass_through() -> None:
    rendered = templating._environment(strip=True).from_string(
        "a = '{{@:env:keyPrefix}}' + << keys.lock >>; b = {{ x }}"
    )
    assert (
        rendered.render()
        == f"a = '{{{{@:env:keyPrefix}}}}' + {keys.TEMPLATE_SCHEMA.lock}; b = {{{{ x }}}}"
    )


def test_an_expression_may_not_hold_braces_that_would_end_it() -> None:
    with pytest.raises(TemplateError, match="would end the expression"):
        templating.call("engine/lock/verify", decision="({ a: {{b}} })")


def test_every_key_a_template_writes_is_in_the_envs_namespace() -> None:
    assert keys.TEMPLATE_SCHEMA.lock == "{{@:env:keyPrefix}}" + keys.LOCK_PREFIX
    assert all(p.startswith(keys.NAMESPACE_PLACEHOLDER) for p in keys.TEMPLATE_SCHEMA.prefixes)


def test_no_script_writes_a_key_prefix_of_its_own() -> None:
    """Every prefix comes from keys.py through `keys` (`<< keys.lock >>`)."""
    prefixes = [keys.LOCK_PREFIX, keys.INDEX_PREFIX, keys.STATS_PREFIX, keys.DONE_PREFIX,
                keys.RATE_PREFIX]  # fmt: skip
    found = [
        f"{path.relative_to(templating.templates_dir())}: {prefix}"
        for path in SCRIPTS
        for line in path.read_text(encoding="utf-8").splitlines()
        if not line.strip().startswith("//")
        for prefix in prefixes
        if prefix in line
    ]
    assert SCRIPTS and found == []


def test_no_script_uses_the_old_token_syntax() -> None:
    stale = [p.name for p in SCRIPTS if re.search(r"__[A-Z][A-Z_]*__", p.read_text("utf-8"))]
    assert stale == [], "write a value as << name >> (templating.render)"
