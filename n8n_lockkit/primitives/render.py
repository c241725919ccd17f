"""Render the primitives' Jinja templates into workflow JSON."""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from n8n_lockkit.errors import TemplateError
from n8n_lockkit.primitives import keys
from n8n_lockkit.primitives.catalogue import Primitive

# Node ids are uuid5 of primitive + node ident, so a re-render diffs cleanly.
_NODE_ID_NAMESPACE = uuid.UUID("6f1d2c3e-5b7a-4c1e-9a0d-8e2f4b6c7d10")


@dataclass(frozen=True)
class RenderOptions:
    """Template parameters; the defaults are the seed's."""

    poll_interval_seconds: float = 1.0
    default_ttl_seconds: int = 86400
    default_max_wait_seconds: int = 86400

    def check(self) -> None:
        if not 0.1 <= self.poll_interval_seconds <= 60:
            raise TemplateError(
                f"poll interval {self.poll_interval_seconds} s is out of range",
                hint="use 0.1 to 60 seconds; waits of 65 s or more leave n8n's memory",
            )
        for name in ("default_ttl_seconds", "default_max_wait_seconds"):
            if getattr(self, name) < 1:
                raise TemplateError(f"{name} must be at least 1")


def templates_dir() -> Path:
    """Inside an installed wheel, or the top-level `templates/` of a source checkout."""
    package = Path(__file__).parents[1]
    packaged = package / "templates"
    if packaged.is_dir():
        return packaged
    return package.parent / "templates"


@cache
def _environment() -> jinja2.Environment:
    # n8n expressions and our placeholders both use {{ }}; Jinja gets other delimiters.
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir()),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        variable_start_string="<<",
        variable_end_string=">>",
        block_start_string="<%",
        block_end_string="%>",
        comment_start_string="<#",
        comment_end_string="#>",
    )


def _context(primitive: Primitive, options: RenderOptions) -> dict[str, Any]:
    context: dict[str, Any] = asdict(options)

    def node_id(ident: str) -> str:
        return str(uuid.uuid5(_NODE_ID_NAMESPACE, f"{primitive.key}:{ident}"))

    def js(name: str) -> str:
        code = _environment().get_template(f"js/{name}").render(context)
        return json.dumps(code.rstrip("\n"), ensure_ascii=False)

    context.update(
        uuid=node_id,
        js=js,
        release_margin_seconds=keys.RELEASE_MARGIN_SECONDS,
        stats_ttl_seconds=keys.STATS_TTL_SECONDS,
        wait_buckets=list(keys.WAIT_BUCKETS),
    )
    return context


def render_primitive(primitive: Primitive, options: RenderOptions | None = None) -> dict[str, Any]:
    options = options or RenderOptions()
    options.check()
    template = _environment().get_template(primitive.template)
    try:
        text = template.render(_context(primitive, options))
    except jinja2.TemplateError as err:
        raise TemplateError(f"template {primitive.template} failed: {err}") from err
    try:
        workflow: dict[str, Any] = json.loads(text)
    except json.JSONDecodeError as err:
        line = text.splitlines()[err.lineno - 1] if err.lineno <= len(text.splitlines()) else ""
        raise TemplateError(
            f"template {primitive.template} produced invalid JSON at line {err.lineno}, "
            f"column {err.colno}: {err.msg}: {line.strip()[:120]}"
        ) from err
    return workflow


def dump_workflow(workflow: dict[str, Any]) -> str:
    """The canonical text of a workflow file."""
    return json.dumps(workflow, indent=2, ensure_ascii=False) + "\n"
