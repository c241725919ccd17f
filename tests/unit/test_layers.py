"""The package is layered: a module imports only from its own layer or the ones below, and no
module imports itself back through others (no import cycle)."""

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


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


ALL_MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imported_modules(name: str) -> set[str]:
    """The package's modules `name` imports anywhere (in functions and TYPE_CHECKING too).
    `from pkg import x` imports the module pkg.x when there is one, else pkg."""
    package = name if ALL_MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(ALL_MODULES[name].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: from the package level - 1 levels above this one
                module = f"{package.rsplit('.', node.level - 1)[0]}.{module}".rstrip(".")
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                found.add(submodule if submodule in ALL_MODULES else module)
    return (found & set(ALL_MODULES)) - {name}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as the path that closes it, or None (a depth-first search)."""
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        path.append(module)
        for imported in sorted(graph[module]):
            if cycle := visit(imported):
                return cycle
        path.pop()
        done.add(module)
        return None

    return next((c for m in sorted(graph) if (c := visit(m))), None)


def test_no_module_imports_itself_back_through_others() -> None:
    cycle = _cycle({name: _imported_modules(name) for name in ALL_MODULES})
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None
