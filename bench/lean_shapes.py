"""lean_budget's lock-shaped workflows (VARIANTS): Take (Redis INCR), Hold and Release (Redis
SET) around floor_bench's plain body, with If stand-ins, item builders and merges as control
nodes. The shape and what counts as what: the docstring of bench/lean_budget.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.floor_workflows import plain_body
from bench.harness.runs import REDIS
from bench.harness.workspace import Workflow, node, webhook
from n8n_lockkit.primitives.nodekit import REDIS_CREDENTIALS

TTL_SECONDS = 60


@dataclass(frozen=True)
class Variant:
    """A lock-shaped workflow: the items of its three Redis nodes (Take: INCR, Hold: SET,
    Release: SET), the control nodes it executes (If stand-ins + item builders + merges), its
    merges (0, or Restore and Output), whether SET items expire and whether it is one of the
    lock-shaped points the costs are fitted to."""

    name: str
    items: tuple[int, int, int]
    control: int
    merges: int = 2
    ttl: bool = True
    fitted: bool = True

    @property
    def total_items(self) -> int:
        return sum(self.items)

    @property
    def builders(self) -> int:
        """Set → Split Out in front of each Redis node with several items."""
        return 2 * sum(1 for n in self.items if n > 1)

    @property
    def ifs(self) -> int:
        return self.control - self.builders - self.merges

    @property
    def key(self) -> str:
        return "budget_" + self.name.replace("-", "_")


SPLITS = {3: (1, 1, 1), 6: (2, 1, 3), 8: (2, 2, 4), 10: (3, 3, 4), 13: (4, 4, 5)}
CONTROLS = (4, 8, 14, 20)


def grid() -> list[Variant]:
    """Items × control nodes; cells with fewer control nodes than their builders and merges
    need cannot be built (3 items is the only count without builders)."""
    cells = [
        Variant(f"i{total}-c{control}", split, control)
        for total, split in SPLITS.items()
        for control in CONTROLS
    ]
    return [v for v in cells if v.ifs >= 0]


VARIANTS: list[Variant] = [
    *grid(),
    # this checkout's lock, repeated scope (floor_bench-2.41.1.md): 13 items in 3 Redis nodes,
    # 23 nodes executed = Webhook, Wait, Set, 3 Redis and 17 control nodes
    Variant("today", (4, 4, 5), 17),
    Variant("today-no-ttl", (4, 4, 5), 17, ttl=False, fitted=False),
    # the floor's three single-item nodes in the lock's places, nothing else: ≈ floor?
    Variant("floor-shape", (1, 1, 1), 0, merges=0, fitted=False),
    # i3-c4 without its two merges: do merges cost what Ifs cost?
    Variant("i3-c4-no-merge", (1, 1, 1), 4, merges=0, fitted=False),
]


def check_variants(variants: Sequence[Variant]) -> None:
    for v in variants:
        if v.merges not in (0, 2) or v.ifs < 0 or min(v.items) < 1:
            raise SystemExit(f"variant {v.name}: cannot be built as given ({v})")


# --- the workflows ---------------------------------------------------------------------------

SCOPE = "$('Webhook').first().json.body.scope"
MERGE = {
    "mode": "chooseBranch",
    "chooseBranchMode": "waitForAll",
    "output": "specifiedInput",
    "useDataOfInput": 1,
}
IF_TEST = {
    "conditions": {
        "options": {"caseSensitive": True, "leftValue": "", "typeValidation": "strict",
                    "version": 2},
        "conditions": [
            {
                "id": "c0ffee00-0000-4000-8000-000000000001",
                "leftValue": f"={{{{ {SCOPE} !== '' }}}}",
                "rightValue": True,
                "operator": {"type": "boolean", "operation": "true", "singleValue": True},
            }
        ],
        "combinator": "and",
    },
    "options": {},
}  # fmt: skip
# Where the If stand-ins go, filled round-robin in this order: before Take, Take → Hold,
# Hold → Restore, body → Release, Release → Output.
IF_SLOTS = (1, 3, 0, 2, 4)


class Flow:
    """A workflow under construction: nodes left to right, `tail` the node the chain ends in."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.nodes: list[dict[str, Any]] = []
        self.connections: dict[str, Any] = {}
        self.tail = ""

    def add(self, n: dict[str, Any], *, after: str | None = None) -> str:
        """`n` at the next place right, fed by `after` (default: the tail); the new tail."""
        n["position"] = [220 * len(self.nodes), 0]
        self.nodes.append(n)
        source = self.tail if after is None else after
        if source:
            self.link(source, n["name"])
        self.tail = n["name"]
        return self.tail

    def link(self, source: str, target: str, index: int = 0) -> None:
        main = self.connections.setdefault(source, {"main": [[]]})["main"]
        main[0].append({"node": target, "type": "main", "index": index})

    def make(
        self, kind: str, version: float, name: str, params: dict[str, Any], **extra: Any
    ) -> str:
        return self.add(node(self.key, name, kind, version, 0, params, **extra))

    def ifs(self, count: int, first: int) -> None:
        for number in range(first, first + count):
            self.make("n8n-nodes-base.if", 2.2, f"If {number}", IF_TEST, executeOnce=True)

    def merge(self, name: str, first_input: str) -> None:
        """A Merge that waits for `first_input` (its data goes on) and for the tail."""
        chain = self.tail
        self.make("n8n-nodes-base.merge", 3, name, dict(MERGE))
        self.connections[chain]["main"][0][-1]["index"] = 1
        self.link(first_input, name, 0)

    def redis(self, name: str, operation: str, count: int, ttl: bool) -> None:
        """A Redis node handling `count` items on keys of the body's scope."""
        prefix = f"n8nlock-budget:' + {SCOPE} + ':{name}"
        once = count == 1
        if not once:
            listed = ", ".join(f"{{ key: '{prefix}:{i}', value: '{i}' }}" for i in range(count))
            self.make(
                "n8n-nodes-base.set", 3.4, f"{name} Items",
                {"mode": "raw", "jsonOutput": f"={{{{ {{ items: [{listed}] }} }}}}",
                 "includeOtherFields": False, "options": {}},
                executeOnce=True,
            )  # fmt: skip
            self.make(
                "n8n-nodes-base.splitOut", 1, f"{name} Split",
                {"fieldToSplitOut": "items", "include": "noOtherFields", "options": {}},
            )  # fmt: skip
        key = f"={{{{ '{prefix}:0' }}}}" if once else "={{ $json.key }}"
        params: dict[str, Any] = {"operation": operation, "key": key}
        if operation == "incr":
            params["expire"] = False
        else:
            params |= {"value": "0" if once else "={{ $json.value }}", "keyType": "string",
                       "expire": ttl, "ttl": TTL_SECONDS}  # fmt: skip
        self.make(REDIS, 1, name, params, executeOnce=once, credentials=REDIS_CREDENTIALS)

    def workflow(self) -> Workflow:
        return {
            "name": self.key,
            "nodes": self.nodes,
            "connections": self.connections,
            "settings": {"executionOrder": "v1"},
        }


def slots(ifs: int) -> list[int]:
    """How many If stand-ins go into each of the five places."""
    counts = [0] * 5
    for number in range(ifs):
        counts[IF_SLOTS[number % len(IF_SLOTS)]] += 1
    return counts


def variant_workflow(v: Variant) -> Workflow:
    flow = Flow(v.key)
    hook = flow.add(webhook(v.key))
    place = slots(v.ifs)
    done = 0

    def fill(slot: int) -> None:
        nonlocal done
        flow.ifs(place[slot], done + 1)
        done += place[slot]

    fill(0)
    flow.redis("Take", "incr", v.items[0], v.ttl)
    fill(1)
    flow.redis("Hold", "set", v.items[1], v.ttl)
    fill(2)
    if v.merges:
        flow.merge("Restore", hook)
    wait, body_end = plain_body(v.key, 0)
    flow.add(wait)
    body = flow.add(body_end)
    fill(3)
    flow.redis("Release", "set", v.items[2], v.ttl)
    fill(4)
    if v.merges:
        flow.merge("Output", body)
    return flow.workflow()


def fitted() -> list[Variant]:
    """The lock-shaped variants the costs are fitted to."""
    return [v for v in VARIANTS if v.fitted]
