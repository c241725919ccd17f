"""What validation reports: one finding per problem, located by file and JSON path."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Severity(str, enum.Enum):
    """How bad a finding is.

    ERROR: n8n refuses the file (API 400, import failure) or a primitive's contract is broken.
    WARNING: n8n accepts the file, but it risks misbehaving or uses something deprecated.
    """

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Finding:
    path: str  # the file, as the user should read it
    location: str  # a JSONPath inside the file, or "L:C" (line:column) for syntax errors
    rule: str
    severity: Severity
    message: str
    hint: str = ""

    def as_dict(self) -> dict[str, str]:
        return {
            "path": self.path,
            "location": self.location,
            "rule": self.rule,
            "severity": self.severity.value,
            "message": self.message,
            "hint": self.hint,
        }
