"""The one loader of `templates/js/` and its one substitution syntax, `__NAME__`."""

from __future__ import annotations

import re

import pytest

from n8n_lockkit.errors import TemplateError
from n8n_lockkit.primitives import nodekit
from n8n_lockkit.primitives.template_files import fill, read_script, templates_dir


def test_a_missing_script_is_a_template_error_that_names_its_path() -> None:
    with pytest.raises(TemplateError, match=r"script nowhere/none\.js is missing: .*none\.js"):
        read_script("nowhere/none")


def test_fill_replaces_tokens_in_order_and_refuses_one_left() -> None:
    assert fill("a(__X__)", "t", {"__X__": "__Y__ + 1", "__Y__": "2"}) == "a(2 + 1)"
    with pytest.raises(TemplateError, match=r"t: no value for __Z__"):
        fill("a(__Z__)", "t", {"__X__": "1"})


def test_an_expression_leaves_comment_lines_out() -> None:
    verify = "engine/lock/verify"
    comments = [x for x in read_script(verify).splitlines() if x.startswith("//")]
    call = nodekit.script_call(verify, {"__DECISION__": "d", "__SAFE_ENTRY_MS__": "1"})
    assert comments and not any(comment in call for comment in comments)


def test_no_script_uses_another_substitution_syntax() -> None:
    jinja = re.compile(r"<<\s*[\w.|]+\s*>>|<%|<#")
    scripts = sorted((templates_dir() / "js").rglob("*.js"))
    assert scripts
    stale = [p.name for p in scripts if jinja.search(p.read_text(encoding="utf-8"))]
    assert stale == [], "write a value to fill in as __NAME__ (template_files.fill)"
