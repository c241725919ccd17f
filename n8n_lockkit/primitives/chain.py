"""A chain: a block of generated nodes, written as a table.

Each generated node is one `Row` (role, name, kind, cell) and the links are a list of `Edge`s
between names; the chain carries what every node shares: the workflow key (node ids), the
`Names` of its entry (labels, and "Dedupe …" for a duplicate guard's), and the grid its cells
sit on. The engines (`engine.py`, `rate.py`, `overlap.py`) and the primitives (`render.py`) all
build so, and `place` is the one way their nodes get a position.

Example:
    >>> c = Chain("wf", origin=(0, 0))
    >>> c.rows([Row("lock-a", "Lock A", nodekit.no_op(), (0, 0)),
    ...         Row("lock-b", "Lock B", nodekit.no_op(), (1, 0))])
    >>> c.link([("Lock A", 0, "Lock B")])
    >>> [n["position"] for n in c.nodes], c.connections["Lock A"]["main"][0][0]["node"]
    ([[0, 0], [180, 0]], 'Lock B')
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

from n8n_lockkit.primitives import nodekit
from n8n_lockkit.primitives.formats import managed_notes
from n8n_lockkit.primitives.nodekit import Connections, Kind, Node


@dataclass(frozen=True)
class Grid:
    """Where cell (column, row) of a block sits: `step` px per column, `row` px per row."""

    step: int
    row: int


# The engine's grid: node boxes are 100 x 100, their labels sit below them.
ENGINE_GRID = Grid(180, 150)


@dataclass(frozen=True)
class Names:
    """The chain's node names; `label` tells several entries' chains apart, and `kind` what the
    chain is: a duplicate guard's engine is named "Dedupe …" (roles `dedupe-…`), so that it can
    sit beside a lock in one workflow.

    Example:
        >>> Names("Webhook", kind="Dedupe")("Lock Decide")
        'Dedupe Decide (Webhook)'
    """

    label: str = ""
    kind: str = "Lock"

    def __call__(self, base: str) -> str:
        if self.kind != "Lock" and base.startswith("Lock "):
            base = f"{self.kind} {base.removeprefix('Lock ')}"
        return f"{base} ({self.label})" if self.label else base

    def role(self, role: str) -> str:
        """The role of a node of this kind's chain: `lock-hold` is `dedupe-hold` in a guard."""
        if self.kind == "Lock" or not role.startswith("lock-"):
            return role
        return f"{self.kind.lower()}-{role.removeprefix('lock-')}"


UNLABELLED = Names()  # one entry: the plain names


@dataclass(frozen=True)
class Row:
    """One generated node: its role (the engine's, which its id is made from), its base name
    (the chain's `Names` label it), what it is, and its cell on the chain's grid."""

    role: str
    name: str
    kind: Kind
    cell: tuple[int, int]


# A link: (source, output, target) or (source, output, target, input), by base name.
Edge = tuple[str, int, str] | tuple[str, int, str, int]


@dataclass
class Chain:
    """Nodes and their connections; `entry` takes the input, `exits` name the outputs."""

    key: str
    names: Names = UNLABELLED
    origin: tuple[int, int] = (0, 0)
    grid: Grid = ENGINE_GRID
    nodes: list[Node] = field(default_factory=list)
    connections: Connections = field(default_factory=dict)
    entry: str = ""
    exits: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    def name(self, base: str) -> str:
        return self.names(base)

    def ref(self, base: str) -> str:
        """`$("name")` of one of the chain's nodes, by base name."""
        return nodekit.ref(self.names(base))

    def first(self, base: str) -> str:
        """The JavaScript of the first item that node `base` gave."""
        return f"{self.ref(base)}.first().json"

    def at(self, cell: tuple[int, int]) -> list[int]:
        """The canvas position of a cell of this chain."""
        column, row = cell
        return [self.origin[0] + column * self.grid.step, self.origin[1] + row * self.grid.row]

    def add(self, row: Row) -> str:
        """Add the node of `row`, placed at its cell; its name."""
        name = self.names(row.name)
        node = row.kind.node(self.key, row.role, name, self.at(row.cell))
        node["notes"] = managed_notes(self.names.role(row.role))
        self.nodes.append(node)
        return name

    def rows(self, rows: Iterable[Row]) -> None:
        for row in rows:
            self.add(row)

    def link(self, edges: Iterable[Edge]) -> None:
        """Connect by base names, in the order given (n8n keeps each output's links in order)."""
        for source, output, target, *index in edges:
            nodekit.connect(
                self.connections, self.names(source), output, self.names(target), *index
            )

    def exit(self, name: str, *ends: tuple[str, int]) -> None:
        """Name an exit: the outputs (by base name) that lead out of the chain."""
        self.exits.setdefault(name, []).extend((self.names(s), o) for s, o in ends)

    def include(self, other: Chain) -> None:
        """Take another chain's nodes and links into this one."""
        self.nodes.extend(other.nodes)
        self.connections.update(other.connections)


def chained(*names: str) -> list[Edge]:
    """Each node's first output into the next node."""
    return [(source, 0, target) for source, target in itertools.pairwise(names)]
