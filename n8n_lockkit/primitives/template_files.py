"""Where the primitives' templates and the engine's scripts are, installed or in a checkout."""

from __future__ import annotations

from pathlib import Path


def templates_dir() -> Path:
    """Inside an installed wheel, or the top-level `templates/` of a source checkout."""
    package = Path(__file__).parents[1]
    packaged = package / "templates"
    if packaged.is_dir():
        return packaged
    return package.parent / "templates"
