"""The package is layered: a module imports only from its own layer or the ones below."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "n8n_lockkit"
# Lowest first. errors and jsonpath are the base every layer may use.
LAYERS = (
    "errors",
    "jsonpath",
    "workspace",
    "primitives",
    "rewrite",
    "check",
    "remote",
    "ops",
    "cli",
)
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE or p.stem in LAYERS)


def _layer(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _imported_layers(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[0] == "n8n_lockkit" and len(parts) > 1:
                found.add(parts[1])
            elif parts[0] == "n8n_lockkit":
                found.update(alias.name for alias in node.names)
    return found & set(LAYERS)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_a_layer_above_its_own(path: Path) -> None:
    rank = LAYERS.index(_layer(path))
    above = {layer for layer in _imported_layers(path) if LAYERS.index(layer) > rank}
    assert not above, f"{path.relative_to(PACKAGE)} imports from a higher layer: {above}"


def test_every_module_belongs_to_a_layer() -> None:
    loose = [
        p.name for p in PACKAGE.glob("*.py") if p.stem not in (*LAYERS, "__init__", "__main__")
    ]
    assert loose == [], "put new modules in the subpackage of their domain"
