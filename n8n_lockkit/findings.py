"""What validation reports: one finding per problem, located by file and JSON path."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Finding:
    path: str  # the file, as the user should read it
    location: str  # a JSONPath inside the file, or "line L, column C" for syntax errors
    rule: str
    message: str
    hint: str = ""

    def as_dict(self) -> dict[str, str]:
        return {
            "path": self.path,
            "location": self.location,
            "rule": self.rule,
            "message": self.message,
            "hint": self.hint,
        }


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
