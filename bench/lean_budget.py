"""How many Redis items and control nodes can an uncontended lock afford and stay ≤ 2× its floor?
(issue 20) Not a test.

    .venv/bin/python -m bench.lean_budget [--versions 2.41.1] [--runs 60] [--without-lock]
        [-o figures.json] [--results bench/results]

The lock's cost on its uncontended path comes from two things: the items its Redis nodes handle
(each at least one round trip to Redis) and the other nodes it executes (decisions, item
builders, merges: "control nodes", ~1–3 ms each). This bench measures synthetic lock-shaped
workflows that vary the two apart, side by side with floor_bench's plain and floor workflows
(the same workflows, so the figures compare), and fits a cost per item and per control node:
the design rule for a lean lock.

A lock-shaped variant (VARIANTS: Redis items per node, control nodes, merges):

    Webhook → [Ifs] → (Take Items → Take Split →) Take (Redis INCR) → [Ifs]
      → (Hold Items → Hold Split →) Hold (Redis SET) → [Ifs] → Restore (Merge: Webhook's item)
      → Wait (10 ms) → Set → [Ifs] → (Release Items → Release Split →) Release (Redis SET)
      → [Ifs] → Output (Merge: the body's item)

- a Redis node with one item runs once on one key (as the floor's do); one with n > 1 items
  gets them as the engine does: a Set (execute once) that lists them → Split Out → the Redis
  node, once per item;
- control nodes: every executed node the lock adds that is not a Redis node: the item builders
  (2 per multi-item Redis node), the merges (0, or Restore and Output) and If nodes (execute
  once, true branch) that stand in for the lock's decisions and fill up the count;
- INCR items have no TTL; SET items expire after 60 s (n8n's Redis node sends EXPIRE after the
  SET: a second round trip), as most of the lock's records do; `ttl: False` drops the TTL.

Every workflow is called uncontended in floor_bench's shuffled rounds, one scope per workflow
for every call ("repeated"); the first rounds warm n8n up and are not counted. Reported: median,
ms added over plain, added / added(floor) with floor_bench's 90 % bootstrap interval; the
executed nodes and Redis items of the last saved calls (a check that each variant runs what its
row says); a least-squares fit added ≈ base + per_item · items + per_control · control nodes
over the lock-shaped variants, with 90 % intervals from resampling the rounds, and the control
nodes each item count can afford under 2× the floor. With the lock (this checkout's
`add-lock-to-workflow`, unless --without-lock) measured alongside, the fit's prediction for the
lock's own items and control nodes is set against its measured cost.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import requests

from bench import figures
from bench import floor_bench as fb
from bench.common import cli, node, prepare, print_sections, report_text, write_template
from bench.executions import Execution, workflow_ids
from n8n_lockkit.primitives.nodekit import REDIS_CREDENTIALS
from testbed.endpoints import N8nInstance
from testbed.session import running_testbed

DEFAULT_RUNS = 60
MODE = "repeated"  # uncontended, one scope per workflow for every call
PLAIN, FLOOR, LOCK = fb.PLAIN, fb.FLOOR, fb.LOCK
CHECKED = 5  # the last saved calls per workflow whose nodes and items are read back
TTL_SECONDS = 60
BUDGET_ITEMS = (3, 6, 8, 10, 13)  # the item counts the budget table is worked out for
Figures = dict[str, Any]
Workflow = dict[str, Any]
Fit = tuple[float, float, float]  # base ms, ms per Redis item, ms per control node


# --- the variants ----------------------------------------------------------------------------


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
        self.make(fb.REDIS, 1, name, params, executeOnce=once, credentials=REDIS_CREDENTIALS)

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
    hook = flow.add(fb.webhook(v.key))
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
    wait, body_end = fb.plain_body(v.key, 0)
    flow.add(wait)
    body = flow.add(body_end)
    fill(3)
    flow.redis("Release", "set", v.items[2], v.ttl)
    fill(4)
    if v.merges:
        flow.merge("Output", body)
    return flow.workflow()


# --- the run ---------------------------------------------------------------------------------


def deploy(
    n8n: N8nInstance, root: Path, variants: Sequence[Variant], lock: bool
) -> list[fb.Target]:
    """plain and floor (floor_bench's own workflows), the variants and, with `lock`, the plain
    workflow wrapped by this checkout; one workspace, pushed and active."""
    prepare(root, n8n, cli)
    keys = {PLAIN: "budget_plain", FLOOR: "budget_floor", LOCK: "budget_lock"}
    write_template(root, fb.plain_workflow(keys[PLAIN]))
    write_template(root, fb.floor_workflow(keys[FLOOR]))
    for v in variants:
        write_template(root, variant_workflow(v))
    if lock:
        fb.wrapped(root, keys[LOCK], cli)
    cli(root, "push", "--env", "bench", "--activate")
    labels = [PLAIN, FLOOR, *(v.name for v in variants), *([LOCK] if lock else [])]
    by_label = keys | {v.name: v.key for v in variants}
    return [fb.Target(label, by_label[label], root) for label in labels]


def last_calls(n8n: N8nInstance, workflow_id: str, token: str, key: str) -> list[Execution]:
    """The last CHECKED counted calls of a workflow, with their data (newest first)."""
    wanted = fb.counted(MODE, token, key)
    for _ in range(30):  # a webhook may answer before n8n has saved its execution
        response = requests.get(
            f"{n8n.base_url}/api/v1/executions",
            params={"workflowId": workflow_id, "limit": str(CHECKED), "includeData": "true"},
            headers={"X-N8N-API-KEY": n8n.api_key},
            timeout=120,
        )
        response.raise_for_status()
        found = [e for e in response.json()["data"] if e.get("finished") and wanted(e)]
        if len(found) == CHECKED:
            return found
        time.sleep(1)
    return found


def executed(n8n: N8nInstance, targets: Sequence[fb.Target], token: str) -> dict[str, Figures]:
    """label → floor_bench's execution figures of its last counted calls, plus the control
    nodes: executed nodes other than Webhook, Wait, Set and the Redis nodes."""
    ids = workflow_ids(targets[0].root)
    result: dict[str, Figures] = {}
    for target in targets:
        found = last_calls(n8n, ids[target.key], token, target.key)
        if not found:
            progress(f"{target.label}: no saved executions")
            continue
        f = fb.execution_figures(found)
        f["control_nodes"] = f["nodes_executed"] - 3 - len(f["redis_node_items"])
        result[target.label] = f
    return result


def bench_version(version: str, args: argparse.Namespace, tree: str) -> Figures:
    started = time.monotonic()
    with running_testbed(version) as (n8n, _), tempfile.TemporaryDirectory() as tmp:
        os.environ["N8N_API_KEY"] = n8n.api_key
        targets = deploy(n8n, Path(tmp) / "main", VARIANTS, not args.without_lock)
        token = uuid.uuid4().hex[:8]
        progress(f"n8n {version}: {len(targets)} workflows, {args.runs} shuffled rounds")
        measured, load_before = time.monotonic(), os.getloadavg()[0]
        timings = fb.rounds(n8n, targets, args.runs, token, modes=(MODE,), say=progress)[MODE]
        calls_seconds, load_after = time.monotonic() - measured, os.getloadavg()[0]
        progress(f"n8n {version}: reading the last saved calls")
        saved = executed(n8n, targets, token)
    ms = {label: [s * 1000 for s in values] for label, values in timings.items()}
    return {
        "n8n": version,
        "tree": tree,
        "variants": [asdict(v) for v in VARIANTS],
        "latency": latency(ms),
        "fit": fit_figures(ms, saved),
        "executions": saved,
        "timings_ms": ms,
        "calls_seconds": calls_seconds,
        "load_average_1min": [load_before, load_after],
        "seconds": time.monotonic() - started,
    }


def progress(message: str) -> None:
    print(f"[lean_budget] {message}", file=sys.stderr, flush=True)


# --- the figures -----------------------------------------------------------------------------


def latency(ms: dict[str, list[float]]) -> Figures:
    """Per workflow: median, p90, ms added over plain, added / added(floor) and its 90 %
    interval (floor_bench's bootstrap over the rounds)."""
    plain = statistics.median(ms[PLAIN])
    floor = statistics.median(ms[FLOOR]) - plain
    result: Figures = {}
    for label, values in ms.items():
        added = statistics.median(values) - plain
        result[label] = {
            "median_ms": statistics.median(values),
            "p90_ms": figures.percentile(values, 90),
            "added_ms": added,
        }
        if label != PLAIN:
            result[label]["floor_ratio"] = fb.ratio(added, floor)
            result[label]["floor_ratio_90"] = fb.bootstrap(ms, label)
    return result


def solve(rows: Sequence[Sequence[float]], ys: Sequence[float]) -> list[float]:
    """Least squares: the b minimising |X b − y|², from the normal equations (X'X) b = X'y."""
    size = len(rows[0])
    a = [[sum(r[i] * r[j] for r in rows) for j in range(size)] for i in range(size)]
    b = [sum(r[i] * y for r, y in zip(rows, ys, strict=True)) for i in range(size)]
    for col in range(size):  # Gauss-Jordan with partial pivoting
        pivot = max(range(col, size), key=lambda r: abs(a[r][col]))
        a[col], a[pivot], b[col], b[pivot] = a[pivot], a[col], b[pivot], b[col]
        if abs(a[col][col]) < 1e-12:
            raise ValueError("the variants do not separate items from control nodes")
        for r in range(size):
            if r != col:
                factor = a[r][col] / a[col][col]
                a[r] = [x - factor * y for x, y in zip(a[r], a[col], strict=True)]
                b[r] -= factor * b[col]
    return [b[i] / a[i][i] for i in range(size)]


def fitted() -> list[Variant]:
    return [v for v in VARIANTS if v.fitted]


def fit_added(added: dict[str, float]) -> Fit:
    """added ≈ base + per_item · items + per_control · control over the fitted variants."""
    points = fitted()
    base, per_item, per_control = solve(
        [(1.0, v.total_items, v.control) for v in points], [added[v.name] for v in points]
    )
    return base, per_item, per_control


def affordable(fit: Fit, floor: float, items: int) -> float:
    """Control nodes a lock with `items` Redis items can execute and stay ≤ 2× the floor."""
    base, per_item, per_control = fit
    return (fb.TARGET * floor - base - per_item * items) / per_control


def medians_added(ms: dict[str, list[float]], picks: Sequence[int]) -> dict[str, float]:
    median = {label: statistics.median(values[i] for i in picks) for label, values in ms.items()}
    return {label: m - median[PLAIN] for label, m in median.items()}


def resampled(ms: dict[str, list[float]]) -> list[tuple[Fit, float]]:
    """(fit, floor's added ms) over resampled rounds, as floor_bench's bootstrap picks them."""
    rng = random.Random(20)
    count = len(ms[PLAIN])
    result = []
    for _ in range(fb.BOOTSTRAP):
        added = medians_added(ms, [rng.randrange(count) for _ in range(count)])
        result.append((fit_added(added), added[FLOOR]))
    return result


def interval(values: Sequence[float]) -> list[float]:
    return [figures.percentile(values, 5), figures.percentile(values, 95)]


def fit_figures(ms: dict[str, list[float]], saved: dict[str, Figures]) -> Figures:
    """The fitted costs with 90 % intervals, per variant the fit's prediction, per item count
    the affordable control nodes, and (with the lock) the prediction for the lock's own shape."""
    added = medians_added(ms, range(len(ms[PLAIN])))
    fit, floor = fit_added(added), added[FLOOR]
    samples = resampled(ms)
    base, per_item, per_control = fit
    predicted = {
        v.name: base + per_item * v.total_items + per_control * v.control for v in VARIANTS
    }
    residuals = [added[v.name] - predicted[v.name] for v in fitted()]
    result: Figures = {
        "floor_added_ms": floor,
        "base_ms": base,
        "per_item_ms": per_item,
        "per_control_ms": per_control,
        "base_ms_90": interval([s[0][0] for s in samples]),
        "per_item_ms_90": interval([s[0][1] for s in samples]),
        "per_control_ms_90": interval([s[0][2] for s in samples]),
        "item_in_control_nodes": per_item / per_control,
        "residual_rms_ms": math.sqrt(statistics.fmean(r * r for r in residuals)),
        "predicted_added_ms": predicted,
        "affordable_control": {
            str(items): {
                "nodes": affordable(fit, floor, items),
                "nodes_90": interval([affordable(f, fl, items) for f, fl in samples]),
            }
            for items in BUDGET_ITEMS
        },
    }
    if LOCK in saved and LOCK in added:
        shape = saved[LOCK]
        result["lock"] = {
            "items": shape["redis_items"],
            "control": shape["control_nodes"],
            "predicted_added_ms": base
            + per_item * shape["redis_items"]
            + per_control * shape["control_nodes"],
            "added_ms": added[LOCK],
        }
    return result


# --- the report ------------------------------------------------------------------------------


def variant_row(v: Variant, result: Figures) -> str:
    f = result["latency"][v.name]
    low, high = f["floor_ratio_90"]
    mark = "✓" if f["floor_ratio"] <= fb.TARGET else "✗"
    predicted = result["fit"]["predicted_added_ms"][v.name]
    floor = result["fit"]["floor_added_ms"]
    seen = result["executions"].get(v.name)
    check = "–"
    if seen:
        expected = (3 + 3 + v.control, v.total_items)
        got = (seen["nodes_executed"], seen["redis_items"])
        check = "✓" if got == expected else f"✗ {got[0]:g} nodes, {got[1]:g} items"
    notes = [] if v.ttl else ["SET without TTL"]
    notes += [] if v.fitted else ["not fitted"]
    name = v.name + (f" ({', '.join(notes)})" if notes else "")
    return (
        f"| {name} | {'/'.join(map(str, v.items))} = {v.total_items} | {v.control} = {v.ifs} + "
        f"{v.builders} + {v.merges} | {f['median_ms']:.1f} | +{f['added_ms']:.1f} | "
        f"{f['floor_ratio']:.2f}× {mark} ({low:.2f}–{high:.2f}) | "
        f"{predicted / floor:.2f}× | {check} |"
    )


def variants_table(result: Figures) -> list[str]:
    lines = [
        f"| workflow (n8n {result['n8n']}, repeated scope) | Redis items (Take/Hold/Release) | "
        "control nodes = If + builders + merges | median ms | added ms | added / floor "
        "(90 % interval) | fit | nodes and items checked |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, text in ((PLAIN, "plain (Webhook → Wait 10 ms → Set)"),
                        (FLOOR, "floor (+ Redis INCR, GET, SET)")):  # fmt: skip
        f = result["latency"][label]
        added = "–" if label == PLAIN else f"+{f['added_ms']:.1f}"
        ratio = "–" if label == PLAIN else "1.00×"
        items, control = ("–", "–") if label == PLAIN else ("1/1/1 = 3 (bare)", "0")
        lines.append(
            f"| {text} | {items} | {control} | {f['median_ms']:.1f} | {added} | {ratio} | – | – |"
        )
    lines += [variant_row(v, result) for v in VARIANTS]
    if LOCK in result["latency"]:
        f = result["latency"][LOCK]
        low, high = f["floor_ratio_90"]
        lock = result["fit"].get("lock")
        shape = f"{lock['items']:g} | {lock['control']:g}" if lock else "? | ?"
        fit = (
            f"{lock['predicted_added_ms'] / result['fit']['floor_added_ms']:.2f}×" if lock else "–"
        )
        mark = "✓" if f["floor_ratio"] <= fb.TARGET else "✗"
        lines.append(
            f"| lock (this checkout, {result['tree']}) | {shape} | {f['median_ms']:.1f} | "
            f"+{f['added_ms']:.1f} | {f['floor_ratio']:.2f}× {mark} ({low:.2f}–{high:.2f}) | "
            f"{fit} | (read back) |"
        )
    return lines


def fit_lines(result: Figures) -> list[str]:
    fit = result["fit"]
    floor = fit["floor_added_ms"]

    def cost(name: str) -> str:
        low, high = fit[f"{name}_90"]
        return f"{fit[name]:.2f} ms (90 %: {low:.2f}–{high:.2f})"

    points = len(fitted())
    lines = [
        f'Fitted over the {points} lock-shaped variants not marked "not fitted" '
        f"(least squares on their added medians; intervals: the same fit on {fb.BOOTSTRAP} "
        "resamples of the rounds):",
        "",
        f"- **per Redis item: {cost('per_item_ms')}** = {fit['per_item_ms'] / floor:.3f} of "
        "the floor",
        f"- **per control node: {cost('per_control_ms')}** = "
        f"{fit['per_control_ms'] / floor:.3f} of the floor",
        f"- base (the intercept: three Redis node executions and the shape, beyond their items "
        f"and control nodes): {cost('base_ms')}",
        f"- **the rule: {fit['per_item_ms'] / floor:.3f} · items + "
        f"{fit['per_control_ms'] / floor:.3f} · control nodes ≤ "
        f"{fb.TARGET - fit['base_ms'] / floor:.2f}** (floor units; ≤ 2× the floor)",
        f"- floor (3 bare single-item Redis nodes) in this run: +{floor:.1f} ms; ≤ 2× is "
        f"≤ +{fb.TARGET * floor:.1f} ms",
        f"- one Redis item costs about {fit['item_in_control_nodes']:.1f} control nodes; "
        f"residuals of the fit: {fit['residual_rms_ms']:.1f} ms RMS",
    ]
    if "lock" in fit:
        lock = fit["lock"]
        lines.append(
            f"- the lock's own shape ({lock['items']:g} items, {lock['control']:g} control "
            f"nodes): predicted +{lock['predicted_added_ms']:.1f} ms, measured "
            f"+{lock['added_ms']:.1f} ms: its nodes cost "
            f"{lock['added_ms'] - lock['predicted_added_ms']:+.1f} ms beyond the stand-ins'"
        )
    lines += [
        "",
        "| Redis items | control nodes affordable at ≤ 2× the floor (fit) | 90 % interval |",
        "|---|---|---|",
    ]
    for items, budget in fit["affordable_control"].items():
        low, high = budget["nodes_90"]
        lines.append(f"| {items} | {budget['nodes']:.1f} | {low:.1f}–{high:.1f} |")
    return lines


def redis_lines(result: Figures) -> list[str]:
    """The Redis nodes' median ms in the stand-in for the lock's shape and in the lock itself:
    where the lock's cost beyond its stand-ins sits."""
    lines = []
    for label in ("today", LOCK):
        f = result["executions"].get(label)
        if not f:
            continue
        cells = ", ".join(
            f"{name} {fb.node_cell(f, name)}"
            for name in f["node_ms"]
            if name in f["redis_node_items"]
        )
        rest = f["node_time_sum_ms"] - sum(f["node_ms"][n] for n in f["redis_node_items"])
        lines.append(
            f"- {label}: Redis nodes {cells} ms; every other node together {rest:.0f} ms "
            f"(Wait included); span {f['span_ms']:.0f} ms"
        )
    if lines:
        lines.insert(0, f"Node ms (medians of the last {CHECKED} saved calls; ×n: items):")
        lines.insert(1, "")
    return lines


def command(argv: Sequence[str]) -> str:
    return " ".join([".venv/bin/python -m bench.lean_budget", *argv])


def intro(result: Figures, args: argparse.Namespace) -> str:
    today = datetime.date.today().isoformat()
    before, after = result["load_average_1min"]
    lock = (
        "" if args.without_lock else
        " lock: floor_bench's plain workflow wrapped by this checkout's `add-lock-to-workflow` "
        "(floor_bench's arguments); its items and control nodes read from its saved calls."
    )  # fmt: skip
    return (
        f"Measured {today} on {os.cpu_count()} cores, n8n {result['n8n']} at its default "
        f"settings (execution data saved), one process, local Redis: {args.runs} shuffled "
        f"rounds after {fb.WARM_UP} to warm up, each calling every workflow once, uncontended, "
        "one scope per workflow for every call (repeated). plain and floor: floor_bench's "
        "workflows. The variants: lock-shaped workflows (Take INCR, Hold SET, Release SET "
        f"around the body; SET items with a {TTL_SECONDS} s TTL; see the docstring of "
        "bench/lean_budget.py), control nodes = If stand-ins + item builders (Set → Split Out "
        "before a multi-item Redis node) + merges (Restore, Output). Added: median minus "
        "plain's median. The ratio's interval: 5th–95th percentile over "
        f"{fb.BOOTSTRAP} resamples of the rounds. fit: the fitted added ms / the floor's. "
        f"Checked: nodes executed and Redis items of the last {CHECKED} saved calls match the "
        f"row.{lock} The calls took {result['calls_seconds']:.0f} s (1-minute load average "
        f"{before:.1f} before, {after:.1f} after), the whole run "
        f"{result['seconds'] / 60:.1f} min."
    )


def sections(result: Figures) -> list[list[str]]:
    return [variants_table(result), fit_lines(result), redis_lines(result)]


def report(result: Figures, args: argparse.Namespace, argv: Sequence[str]) -> str:
    return report_text(command(argv), intro(result, args), sections(result))


def show(result: Figures) -> None:
    print_sections(sections(result), result)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--versions", default=fb.DEFAULT_VERSIONS, help="n8n versions, commas")
    parser.add_argument(
        "--runs", type=int, default=DEFAULT_RUNS, help=f"counted rounds (default {DEFAULT_RUNS})"
    )
    parser.add_argument(
        "--without-lock", action="store_true", help="do not measure this checkout's lock too"
    )
    parser.add_argument("-o", "--output", type=Path, help="also write every figure to this JSON")
    parser.add_argument(
        "--results", type=Path, default=fb.RESULTS, help="where lean_budget-<version>.md goes"
    )
    args = parser.parse_args(argv)
    if args.runs < CHECKED:
        parser.error(f"--runs must be at least {CHECKED}")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    check_variants(VARIANTS)
    tree = fb.tree_state()
    results = []
    for version in fb.versions(args.versions):
        result = bench_version(version, args, tree)
        results.append(result)
        show(result)
        path = args.results / f"lean_budget-{version}.md"
        path.write_text(report(result, args, argv))
        progress(f"wrote {path}")
    if args.output:
        document = {"command": command(argv), "arguments": vars(args) | {"output": None}}
        text = json.dumps({**document, "results": results}, indent=2, default=fb.jsonable)
        args.output.write_text(text + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
