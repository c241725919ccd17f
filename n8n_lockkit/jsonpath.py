"""JSONPath strings for locations in JSON documents, as jsonschema's `json_path` writes them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def json_path(parts: Sequence[Any]) -> str:
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).isidentifier():
            out += f".{part}"
        else:
            out += "[" + repr(str(part)) + "]"
    return out
