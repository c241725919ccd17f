"""The files under `templates/`: where they are, and the one way to read a script and fill it in.

Scripts are `templates/js/<name>.js`, read by `read_script(name)` and nothing else in the
package:

    engine/lock/      the lock engine's decisions (engine.py): the inline lock chain of add-lock,
                      and the lock_acquisition and lock_release primitives built on it
    engine/rate/      the rate limit's (rate.py): add-rate-limit's inline chain, rate_limit_check
    primitive/<key>/  what only the primitive <key> runs (render.py, cleanup.py);
                      primitive/holder_check/ is lock_release's and lock_renew's ownership check

A value n8nlock fills into a script is written `__NAME__` (capitals and underscores between
double underscores); `fill` replaces each in the order given, so a value may itself bring
tokens that later entries fill (rate.py includes `engine/rate/plan` as `__PLAN__`), and refuses
a script in which a token is left. That is the only substitution: n8n's `{{ }}` and the push
placeholders `{{@:env:…}}` pass through as they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from n8n_lockkit.errors import TemplateError

TOKEN = re.compile(r"__[A-Z_]+__")


def templates_dir() -> Path:
    """Inside an installed wheel, or the top-level `templates/` of a source checkout."""
    package = Path(__file__).parents[1]
    packaged = package / "templates"
    if packaged.is_dir():
        return packaged
    return package.parent / "templates"


@cache
def read_script(name: str) -> str:
    """The text of `templates/js/<name>.js`, e.g. `read_script("engine/lock/decide")`."""
    path = templates_dir() / "js" / f"{name}.js"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TemplateError(
            f"script {name}.js is missing: {path} does not exist",
            hint="the installation of n8nlock is incomplete: reinstall it",
        ) from None


def fill(source: str, label: str, tokens: Mapping[str, str]) -> str:
    """`source` with each `__NAME__` of `tokens` replaced; `label` names the script in errors."""
    for token, value in tokens.items():
        source = source.replace(token, value)
    leftover = TOKEN.findall(source)
    if leftover:
        raise TemplateError(f"{label}: no value for {', '.join(leftover)}")
    return source
