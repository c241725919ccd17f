"""No module of the package or of the benchmarks grows past 500 lines: split a module by
responsibility first."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
TREES = ("n8n_lockkit", "bench")  # the package, and bench/ (a bench's shared parts: bench/harness)
MAX_LINES = 500
MODULES = sorted(path for tree in TREES for path in (ROOT / tree).rglob("*.py"))


def test_every_tree_is_read() -> None:
    for tree in TREES:
        assert any(path.is_relative_to(ROOT / tree) for path in MODULES), f"no module in {tree}/"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_over_500_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, (
        f"{path.relative_to(ROOT)} has {lines} lines (at most {MAX_LINES}): split it by "
        "responsibility into modules of its (sub)package"
    )
