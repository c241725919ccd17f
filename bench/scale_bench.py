"""Throughput of a wrapped workflow at scale, one n8n process against queue mode (issue 9).
Not a test.

    .venv/bin/python -m bench.scale_bench [--topologies single,queue] [--calls 1000]
        [--concurrency 20] [--rounds 30] [-o figures.json]

Per topology (testbed: `single` is one n8n; `queue` is main + 2 workers + PostgreSQL,
the queue in the same Redis as the locks), on n8n 2.41.1, the bench workflow plain and wrapped
by this checkout's `add-lock-to-workflow`:
- distinct: `--calls` calls, each its own scope, `--concurrency` at once: executions/s;
- hot: the same number of calls, all on one scope: executions/s;
- plain: the unwrapped workflow under the same load, for reference;
- latency: `--rounds` uncontended calls of each, alternating: the median ms the lock adds;
- keys: what the lock left in Redis after the runs (by key family, with and without TTL), and
  the memory one held lock takes (MEMORY USAGE of its keys while it is held).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import redis

from bench.designs import PLAIN, v2_design
from bench.harness.calls import burst, post, rounds
from bench.harness.results import progress_for
from bench.harness.session import running_bed
from testbed.endpoints import N8nInstance

VERSION = "2.41.1"
Figures = dict[str, Any]
progress = progress_for("scale_bench")


def throughput(n8n: N8nInstance, path: str, scopes: Sequence[str], concurrency: int) -> float:
    """Executions per second for one call per entry of `scopes`, `concurrency` at once."""
    bodies = [{"scope": scope, "hold_ms": 0} for scope in scopes]
    return len(scopes) / burst(n8n, path, bodies, concurrency).wall_seconds


def added_latency(n8n: N8nInstance, wrapped: str, rounds_counted: int, token: str) -> Figures:
    """Median ms of uncontended calls, plain then wrapped on the same scope each round."""

    def body(number: int) -> dict[str, Any]:
        return {"scope": f"lat-{token}-{number}", "hold_ms": 0}

    calls = {"plain": (PLAIN, body), "wrapped": (wrapped, body)}
    seconds = rounds(n8n, calls, rounds_counted, warm_up=3, order="fixed")
    plain, locked = ([s * 1000 for s in seconds[label]] for label in ("plain", "wrapped"))
    return {
        "plain_median_ms": statistics.median(plain),
        "wrapped_median_ms": statistics.median(locked),
        "added_ms": statistics.median(locked) - statistics.median(plain),
    }


def key_families(client: redis.Redis) -> dict[str, dict[str, int]]:
    """Keys by family (`n8n-lock-*:<kind>`, `n8nlock:<kind>`), split by whether they expire."""
    families: Counter[str] = Counter()
    for key in client.scan_iter(match="n8n*", count=1000):
        name = key.decode() if isinstance(key, bytes) else str(key)
        if name.startswith("n8n-lock-"):
            family = "n8n-lock-<scope>:" + re.sub(r"\d+", "<n>", name.split(":", 1)[1])
        elif name.startswith("n8nlock:"):
            family = "n8nlock:" + name.split(":")[1]
        else:
            continue  # n8n's own cache (queue mode keeps it in this Redis)
        expiring = client.ttl(key) >= 0
        families[f"{family} ({'ttl' if expiring else 'no ttl'})"] += 1
    return {"keys": dict(sorted(families.items()))}


def held_lock_bytes(n8n: N8nInstance, client: redis.Redis, wrapped: str, token: str) -> int:
    """MEMORY USAGE of the keys one held lock occupies (line, record, execution index)."""
    scope = f"mem-{token}"
    with ThreadPoolExecutor(1) as pool:
        holder = pool.submit(post, n8n, wrapped, {"scope": scope, "hold_ms": 4000})
        deadline = time.monotonic() + 30
        while not client.exists(f"n8n-lock-{scope}:meta:0"):
            if time.monotonic() > deadline:
                raise SystemExit("the memory probe's lock was never taken")
            time.sleep(0.05)
        keys = list(client.scan_iter(match=f"n8n-lock-{scope}:*"))
        keys += [k for k in client.scan_iter(match="n8nlock:exec:*") if client.hexists(k, scope)]
        total = sum(int(client.memory_usage(k) or 0) for k in keys)
        holder.result()
    return total


def bench_topology(topology: str, args: argparse.Namespace) -> Figures:
    with running_bed(VERSION, topology=topology) as bed:
        n8n = bed.n8n
        design = v2_design(n8n, bed.tmp, "cli")
        client = redis.Redis.from_url(bed.redis.url)
        token = uuid.uuid4().hex[:8]
        distinct = [f"d-{token}-{i}" for i in range(args.calls)]
        hot = [f"hot-{token}"] * args.calls
        result: Figures = {"topology": topology, "n8n": VERSION}
        memory_before = int(client.info("memory")["used_memory"])
        runs: list[tuple[str, Callable[[], float]]] = [
            ("plain_per_s", lambda: throughput(n8n, PLAIN, distinct, args.concurrency)),
            ("distinct_per_s", lambda: throughput(n8n, design.key, distinct, args.concurrency)),
            ("hot_per_s", lambda: throughput(n8n, design.key, hot, args.concurrency)),
        ]
        for label, run in runs:
            progress(f"{topology}: {label} ({args.calls} calls, {args.concurrency} at once)")
            result[label] = run()
        progress(f"{topology}: latency, {args.rounds} rounds")
        result["latency"] = added_latency(n8n, design.key, args.rounds, token)
        time.sleep(6)  # released records expire after 5 s
        result["keys_after"] = key_families(client)
        result["used_memory_growth_bytes"] = int(client.info("memory")["used_memory"]) - (
            memory_before
        )
        result["held_lock_bytes"] = held_lock_bytes(n8n, client, design.key, token)
        client.close()
        return result


def report(results: Sequence[Figures], args: argparse.Namespace) -> str:
    lines = [
        f"scale bench, n8n {VERSION}, {args.calls} calls at concurrency {args.concurrency} "
        f"({os.cpu_count()} cores)",
        "",
        "| figure | " + " | ".join(r["topology"] for r in results) + " |",
        "|---|" + "---|" * len(results),
    ]
    rows: list[tuple[str, Callable[[Figures], str]]] = [
        ("plain workflow, executions/s", lambda r: f"{r['plain_per_s']:.1f}"),
        ("wrapped, 1 scope per call, executions/s", lambda r: f"{r['distinct_per_s']:.1f}"),
        ("wrapped, all on one scope, executions/s", lambda r: f"{r['hot_per_s']:.1f}"),
        ("uncontended call, plain (median ms)", lambda r: _ms(r, "plain")),
        ("uncontended call, wrapped (median ms)", lambda r: _ms(r, "wrapped")),
        ("added by the lock (ms)", lambda r: f"{r['latency']['added_ms']:.0f}"),
        ("Redis memory of one held lock (bytes)", lambda r: str(r["held_lock_bytes"])),
        ("used_memory growth over the run (bytes)", lambda r: str(r["used_memory_growth_bytes"])),
    ]
    for label, read in rows:
        lines.append(f"| {label} | " + " | ".join(read(r) for r in results) + " |")
    for r in results:
        lines += ["", f"keys left after the runs ({r['topology']}):"]
        lines += [f"  {count:6d}  {family}" for family, count in r["keys_after"]["keys"].items()]
    return "\n".join(lines)


def _ms(result: Figures, which: str) -> str:
    return f"{result['latency'][f'{which}_median_ms']:.0f}"


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--topologies", default="single,queue", help="single, queue, or both")
    parser.add_argument("--calls", type=int, default=1000, help="calls per throughput run")
    parser.add_argument("--concurrency", type=int, default=20, help="calls at once")
    parser.add_argument("--rounds", type=int, default=30, help="uncontended latency rounds")
    parser.add_argument("-o", "--output", type=Path, help="also write every figure to this JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    results = [bench_topology(t.strip(), args) for t in args.topologies.split(",") if t.strip()]
    print(report(results, args))
    if args.output:
        args.output.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
