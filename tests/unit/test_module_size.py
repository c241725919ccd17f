"""No module of the package grows past 500 lines: split a module by responsibility first."""

from __future__ import annotations

from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "n8n_lockkit"
MAX_LINES = 500
MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_over_500_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, (
        f"{path.relative_to(PACKAGE)} has {lines} lines (at most {MAX_LINES}): split it by "
        "responsibility into modules of its subpackage"
    )
