"""What the nodes of a saved execution ran: pure functions over runData-shaped dicts.

An execution as the public API gives it (`GET /api/v1/executions?includeData=true`) carries
`data.resultData.runData[node][i]` with `startTime` (epoch ms), `executionTime` (ms) and the
items it put out, and `workflowData.nodes` (names and types).
"""

from __future__ import annotations

import math
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

Execution = dict[str, Any]
NodeRun = dict[str, Any]
Figures = dict[str, Any]
REDIS = "n8n-nodes-base.redis"
BODY = "Hold"  # the bench workflow's first body node


def epoch_ms(stamp: str) -> float:
    """An execution's ISO time (`startedAt`, `stoppedAt`) in epoch ms."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000


def run_data(execution: Execution) -> Mapping[str, list[NodeRun]]:
    runs: Mapping[str, list[NodeRun]] = execution["data"]["resultData"]["runData"]
    return runs


def named(execution: Execution, base: str) -> str:
    """The node `base`, or `base (label)` as a lock on one of several triggers names it; ""
    when it did not run."""
    pattern = re.compile(re.escape(base) + r"( \(.*\))?")
    return next((name for name in run_data(execution) if pattern.fullmatch(name)), "")


def start(execution: Execution, name: str, index: int = 0) -> float:
    return float(run_data(execution)[name][index]["startTime"])


def end(execution: Execution, name: str, index: int = -1) -> float:
    run = run_data(execution)[name][index]
    return float(run["startTime"]) + float(run.get("executionTime") or 0)


def first_output(execution: Execution, name: str) -> dict[str, Any]:
    json: dict[str, Any] = run_data(execution)[name][0]["data"]["main"][0][0]["json"]
    return json


def webhook_body(execution: Execution) -> dict[str, Any]:
    body: dict[str, Any] = first_output(execution, "Webhook").get("body") or {}
    return body


def sub_execution_id(execution: Execution, name: str) -> str:
    """The id of the sub-workflow execution an Execute Workflow node `name` started."""
    metadata = run_data(execution)[name][0].get("metadata") or {}
    return str(metadata["subExecution"]["executionId"])


def redis_nodes(execution: Execution) -> set[str]:
    return {n["name"] for n in execution["workflowData"]["nodes"] if n["type"] == REDIS}


def redis_runs(execution: Execution, before_ms: float = math.inf) -> list[NodeRun]:
    """The Redis nodes' runs (a node that ran twice: two) that started before `before_ms`."""
    names = redis_nodes(execution)
    return [
        run
        for name, runs in run_data(execution).items()
        if name in names
        for run in runs
        if run["startTime"] < before_ms
    ]


def items_out(run: NodeRun) -> int:
    """The items a node's run put out on its first output (a Redis node: a round trip each)."""
    outputs = (run.get("data") or {}).get("main") or [[]]
    return len(outputs[0] or [])


def redis_items(execution: Execution) -> dict[str, int]:
    """Items each Redis node handled in one call (its runs summed): a round trip each."""
    names = redis_nodes(execution)
    runs = run_data(execution)
    return {name: sum(map(items_out, runs[name])) for name in names if name in runs}


def node_time(execution: Execution) -> float:
    """The nodes' executionTime, summed over every run of every node (ms)."""
    runs = run_data(execution).values()
    return sum(float(r.get("executionTime") or 0) for node_runs in runs for r in node_runs)


def span(execution: Execution) -> float:
    """ms from the first node's start to the last node's end."""
    runs = [r for node_runs in run_data(execution).values() for r in node_runs]
    first = min(float(r["startTime"]) for r in runs)
    last = max(float(r["startTime"]) + float(r.get("executionTime") or 0) for r in runs)
    return last - first


def node_costs(executions: Iterable[Execution]) -> dict[str, float]:
    """Median executionTime per node (its runs in one execution summed), slowest first."""
    times: dict[str, list[float]] = defaultdict(list)
    for execution in executions:
        for name, runs in run_data(execution).items():
            times[name].append(sum(float(r.get("executionTime") or 0) for r in runs))
    medians = {name: statistics.median(values) for name, values in times.items()}
    return dict(sorted(medians.items(), key=lambda item: -item[1]))


def execution_figures(executions: Sequence[Execution]) -> Figures:
    """Per call (medians): nodes executed, node executions, Redis node executions and their
    items, the sum of the nodes' executionTime and the span first node start → last node end;
    per node: median ms (its runs in one call summed) and, for Redis nodes, median items."""

    def median(of: Callable[[Execution], float]) -> float:
        return statistics.median(of(e) for e in executions)

    items = [redis_items(e) for e in executions]
    per_node = {name for found in items for name in found}
    return {
        "saved": len(executions),
        "nodes_executed": median(lambda e: len(run_data(e))),
        "nodes_executed_range": sorted({len(run_data(e)) for e in executions}),
        "node_executions": median(lambda e: sum(map(len, run_data(e).values()))),
        "redis_node_executions": median(lambda e: len(redis_runs(e))),
        "redis_items": statistics.median(sum(found.values()) for found in items),
        "node_time_sum_ms": median(node_time),
        "span_ms": median(span),
        "node_ms": node_costs(executions),
        "redis_node_items": {
            name: statistics.median(found[name] for found in items if name in found)
            for name in sorted(per_node)
        },
    }
