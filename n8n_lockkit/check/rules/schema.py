"""The file's shape: JSON syntax, and the structure n8n's public API accepts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from n8n_lockkit.check.rules.base import Problem, WorkflowContext

_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}
_MESSAGE_LIMIT = 160


@cache
def _validator() -> jsonschema.Draft202012Validator:
    text = resources.files("n8n_lockkit").joinpath("schemas/workflow.schema.json").read_text()
    return jsonschema.Draft202012Validator(json.loads(text))


def _message(error: jsonschema.ValidationError) -> str:
    """jsonschema's message, without the instance it quotes (which may be the whole file)."""
    if error.validator == "type":
        expected = error.validator_value
        wanted = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return f"expected {wanted}, found {_JSON_TYPES.get(type(error.instance), 'a value')}"
    message = error.message
    return message if len(message) <= _MESSAGE_LIMIT else message[: _MESSAGE_LIMIT - 1] + "…"


def _order(error: jsonschema.ValidationError) -> list[tuple[int, int, str]]:
    return [(0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in error.absolute_path]


def json_syntax(ctx: WorkflowContext) -> Iterator[Problem]:
    """The file is JSON (checked as it is read: a file that is not reaches no other rule)."""
    yield from ()


def workflow_schema(ctx: WorkflowContext) -> Iterator[Problem]:
    """The workflow has the shapes n8n's API accepts: nodes, connections, field types."""
    workflow: Any = ctx.workflow
    for error in sorted(_validator().iter_errors(workflow), key=_order):
        yield Problem(
            tuple(error.absolute_path), _message(error), "n8n's API refuses workflows of this shape"
        )
