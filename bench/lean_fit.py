"""lean_budget's fit: added ms ≈ base + per_item · Redis items + per_control · control nodes,
over the lock-shaped variants, with 90 % intervals from resampling the rounds, and the control
nodes each item count can afford and stay ≤ 2× the floor."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from bench.floor_workflows import LOCK
from bench.harness.stats import FLOOR, PLAIN, TARGET, Picks, interval, resamples
from bench.lean_shapes import VARIANTS, fitted

BUDGET_ITEMS = (3, 6, 8, 10, 13)  # the item counts the budget table is worked out for
Figures = dict[str, Any]
Fit = tuple[float, float, float]  # base ms, ms per Redis item, ms per control node
Ms = dict[str, list[float]]  # label → ms per counted round


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
    return (TARGET * floor - base - per_item * items) / per_control


def medians_added(ms: Ms, picks: Picks) -> dict[str, float]:
    median = {label: statistics.median(values[i] for i in picks) for label, values in ms.items()}
    return {label: m - median[PLAIN] for label, m in median.items()}


def resampled(ms: Ms) -> list[tuple[Fit, float]]:
    """(fit, floor's added ms) over resampled rounds, as the floor ratio's bootstrap picks them."""
    result = []
    for picks in resamples(len(ms[PLAIN])):
        added = medians_added(ms, picks)
        result.append((fit_added(added), added[FLOOR]))
    return result


def fit_figures(ms: Ms, saved: dict[str, Figures]) -> Figures:
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
