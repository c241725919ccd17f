"""The file's shape: JSON syntax, and the structure n8n's public API accepts.

jsonschema decides and words every schema finding, but it is slow (about 1 ms a workflow, most
of `validate`'s time) and slow to import. A workflow the schema accepts needs neither: a small
checker compiled from the same schema file says "conforms" first, and jsonschema runs only on
a workflow it does not pass. The checker knows the few keywords that file uses; a schema with
any other keyword sends every workflow to jsonschema.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterator, Mapping, Sized
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from n8n_lockkit.check.rules.base import Problem, WorkflowContext

if TYPE_CHECKING:
    import jsonschema

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
def _schema() -> dict[str, Any]:
    text = resources.files("n8n_lockkit").joinpath("schemas/workflow.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> jsonschema.Draft202012Validator:
    import jsonschema

    return jsonschema.Draft202012Validator(_schema())


Check = Callable[[Any], bool]
Maker = Callable[[Any, Mapping[str, Any]], "Check | None"]
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description"})


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# Exact Python types: json.loads makes no subclasses, and a value of any other type (a float
# integer like 1.0 among them) only goes to jsonschema, which then decides.
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "null": (type(None),),
    "number": (int, float),
    "integer": (int,),
}


def _type(value: Any, schema: Mapping[str, Any]) -> Check | None:
    names = value if isinstance(value, list) else [value]
    if not all(name in _TYPES for name in names):
        return None
    allowed = frozenset(t for name in names for t in _TYPES[name])
    return lambda v: type(v) in allowed


def _required(value: Any, schema: Mapping[str, Any]) -> Check | None:
    required = frozenset(value)
    return lambda v: not isinstance(v, dict) or required <= v.keys()


def _properties(value: Any, schema: Mapping[str, Any]) -> Check | None:
    compiled = {key: _compile(sub) for key, sub in value.items()}
    checks = {key: check for key, check in compiled.items() if check is not None}
    if len(checks) < len(compiled):
        return None

    def conforms(v: Any) -> bool:
        if not isinstance(v, dict):
            return True
        for key, item in v.items():
            check = checks.get(key)
            if check is not None and not check(item):
                return False
        return True

    return conforms


def _additional_properties(value: Any, schema: Mapping[str, Any]) -> Check | None:
    check = _compile(value)
    if check is None or "patternProperties" in schema:
        return None
    known = frozenset(schema.get("properties", ()))
    if not known:  # map() over the values, not a generator: this runs for every connection
        return lambda v: not isinstance(v, dict) or all(map(check, v.values()))
    return lambda v: (
        not isinstance(v, dict) or all(check(item) for key, item in v.items() if key not in known)
    )


def _items(value: Any, schema: Mapping[str, Any]) -> Check | None:
    check = _compile(value)
    if check is None:
        return None
    start = len(schema.get("prefixItems", ()))
    return lambda v: not isinstance(v, list) or all(map(check, v[start:] if start else v))


def _call(check: Check, item: Any) -> bool:
    return check(item)


def _prefix_items(value: Any, schema: Mapping[str, Any]) -> Check | None:
    compiled = [_compile(sub) for sub in value]
    checks = [check for check in compiled if check is not None]
    if len(checks) < len(compiled):
        return None
    return lambda v: not isinstance(v, list) or all(map(_call, checks, v))


def _length(kind: type[Sized], within: Callable[[int, Any], bool]) -> Maker:
    """minItems, maxLength and the like: a bound on the length of a list or a string."""

    def make(value: Any, schema: Mapping[str, Any]) -> Check | None:
        return lambda v: not isinstance(v, kind) or within(len(v), value)

    return make


def _minimum(value: Any, schema: Mapping[str, Any]) -> Check | None:
    return lambda v: not _is_number(v) or not v < value


_KEYWORDS: dict[str, Maker] = {
    "type": _type,
    "required": _required,
    "properties": _properties,
    "additionalProperties": _additional_properties,
    "items": _items,
    "prefixItems": _prefix_items,
    "minItems": _length(list, operator.ge),
    "maxItems": _length(list, operator.le),
    "minLength": _length(str, operator.ge),
    "maxLength": _length(str, operator.le),
    "minimum": _minimum,
}


def _compile(schema: Any) -> Check | None:
    """A check that is True only when jsonschema finds no error, or None for a schema that
    uses a keyword this module does not know."""
    if isinstance(schema, bool):
        return lambda v: schema
    if not isinstance(schema, dict):
        return None
    checks: list[Check] = []
    for keyword, value in schema.items():
        if keyword in _ANNOTATIONS:
            continue
        make = _KEYWORDS.get(keyword)
        check = make(value, schema) if make else None
        if check is None:
            return None
        checks.append(check)
    if len(checks) == 1:
        return checks[0]

    def conforms(v: Any) -> bool:
        # A plain loop: all() over a generator makes the whole check twice as slow.
        for check in checks:  # noqa: SIM110
            if not check(v):
                return False
        return True

    return conforms


@cache
def conforms() -> Check:
    """The compiled check of the workflow schema (always False if it could not be compiled)."""
    return _compile(_schema()) or (lambda v: False)


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
    if conforms()(workflow):
        return
    for error in sorted(_validator().iter_errors(workflow), key=_order):
        yield Problem(
            tuple(error.absolute_path), _message(error), "n8n's API refuses workflows of this shape"
        )
