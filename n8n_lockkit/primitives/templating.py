"""The scripts under `templates/js/`, rendered by Jinja: the one way n8nlock reads them.

    engine/lock/      the lock engine's decisions (engine.py): the inline lock chain of add-lock,
                      and the lock_acquisition and lock_release primitives built on it
    engine/rate/      the rate limit's (rate.py): add-rate-limit's inline chain, rate_limit_check
    primitive/<key>/  what only the primitive <key> runs (render.py, cleanup.py);
                      primitive/holder_check/ is lock_release's and lock_renew's ownership check
    shared/           macros more than one script uses (`<% import 'shared/x.js' as x %>`)

Jinja's delimiters here are `<< value >>`, `<% statement %>` and `<# comment #>`, so that n8n's
own `{{ }}` and the push placeholders `{{@:env:…}}` pass through untouched. Every template sees
`keys`, the Redis key layout of `keys.py` (no script writes a key prefix of its own), and the
constants of `keys.CONSTANTS`; a value it names that the caller did not give is an error
(StrictUndefined). An expression script (a Set node's, an If node's) loses its `//` comment
lines, which are for the reader of the file; a Code node's script keeps them.

Example:
    >>> call("engine/lock/verify", decision="d").splitlines()[1]
    'const held = d;'
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from n8n_lockkit.errors import TemplateError
from n8n_lockkit.primitives import keys
from n8n_lockkit.workspace.placeholders import PLACEHOLDER


def templates_dir() -> Path:
    """Inside an installed wheel, or the top-level `templates/` of a source checkout."""
    package = Path(__file__).parents[1]
    packaged = package / "templates"
    if packaged.is_dir():
        return packaged
    return package.parent / "templates"


def without_comments(source: str) -> str:
    """A script's lines but its comment lines: an expression carries no comments."""
    return "\n".join(line for line in source.splitlines() if not line.strip().startswith("//"))


class _ScriptLoader(jinja2.BaseLoader):
    """`templates/js/<name>`; `strip` drops comment lines (for expressions)."""

    def __init__(self, strip: bool) -> None:
        self.strip = strip

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        path = templates_dir() / "js" / template
        try:
            source = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise TemplateError(
                f"script {template} is missing: {path} does not exist",
                hint="the installation of n8nlock is incomplete: reinstall it",
            ) from None
        return (without_comments(source) if self.strip else source), str(path), lambda: True


def _environment(strip: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=_ScriptLoader(strip),
        variable_start_string="<<",
        variable_end_string=">>",
        block_start_string="<%",
        block_end_string="%>",
        comment_start_string="<#",
        comment_end_string="#>",
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.globals.update(keys=keys.TEMPLATE_SCHEMA, **keys.CONSTANTS)
    return env


@cache
def _env(strip: bool) -> jinja2.Environment:
    return _environment(strip)


def render(name: str, *, strip: bool, **context: Any) -> str:
    """`templates/js/<name>.js` rendered with `context`; `strip`: without comment lines."""
    label = f"script {name}.js"
    try:
        return _env(strip).get_template(f"{name}.js").render(**context)
    except jinja2.UndefinedError as err:
        raise TemplateError(f"{label}: {err.message}") from None
    except jinja2.TemplateSyntaxError as err:
        raise TemplateError(f"{label}: line {err.lineno}: {err.message}") from None


def call(name: str, **context: Any) -> str:
    """The script as a JavaScript call that returns its object, to use inside an expression
    (an If condition), or as one (`expression`)."""
    body = render(name, strip=True, **context)
    bare = PLACEHOLDER.sub("", body)  # resolved at push time, before n8n reads it
    if "{{" in bare or "}}" in bare:
        raise TemplateError(f"script {name}.js: '{{{{' or '}}}}' would end the expression")
    return f"(() => {{\n{body}\n}})()"


def expression(name: str, **context: Any) -> str:
    """The script as one n8n expression that returns its object: `={{ (() => {…})() }}`."""
    return f"={{{{ {call(name, **context)} }}}}"


def code(name: str, **context: Any) -> str:
    """The script as a Code node runs it, comments included."""
    return render(name, strip=False, **context).rstrip("\n")
