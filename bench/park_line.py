"""What a long parked line costs (issue 33): Redis node executions per waiter-second, and n8n's
memory per parked waiter, with `add-lock-to-workflow --park` against the polling lock.

One n8n (regular mode, `N8N_CONCURRENCY_PRODUCTION_LIMIT` = `--limit`), one Redis. A line of
`--callers` webhook callers (answered by a Respond to Webhook node) on one scope, `--hold-ms`
bodies, called `--gap-ms` apart; each design (polled, parked) runs its own line. From the
saved executions: every Redis node run of the lock (`Lock …` nodes) and each caller's wait
(from its first node to its body). n8n's resident memory (VmRSS of the process listening on
its port) is read before the line and when every caller has drawn its ticket.

    .venv/bin/python -m bench.park_line --versions 2.41.1 --callers 60 --hold-ms 1000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import redis
import requests

from bench.harness.executions import listing, workflow_ids
from bench.harness.session import Bed, running_bed
from bench.harness.workspace import cli, prepare, push, wrap_args
from tests.e2e.test_parking import responding_workflow

RESULTS = Path(__file__).parent / "results"
DESIGNS = {"polled": ["--no-park"], "parked": ["--park"]}


def rss_kib(port: int) -> int | None:
    """VmRSS of the process listening on `port` (n8n), in KiB; None when it cannot be read."""
    out = subprocess.run(
        ["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True, check=False
    ).stdout
    if "pid=" not in out:
        return None
    pid = out.split("pid=", 1)[1].split(",", 1)[0]
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return None


def install(bed: Bed, tag: str) -> dict[str, tuple[str, str]]:
    """Each design's workflow in the bed's n8n: design → (webhook path, workflow id)."""
    root = bed.tmp / "line"
    prepare(root, bed.n8n)
    cli(root, "create-lock", "--force-overwrite")
    keys = {design: f"line_{design}_{tag}" for design in DESIGNS}
    for design, key in keys.items():
        workflow = responding_workflow(key)
        (root / "workflows" / f"{key}.template.json").write_text(json.dumps(workflow))
        cli(root, *wrap_args(key), *DESIGNS[design])
    push(root)
    ids = workflow_ids(root)
    return {design: (key, ids[key]) for design, key in keys.items()}


def _post(base_url: str, key: str, body: dict[str, Any]) -> int:
    return requests.post(f"{base_url}/webhook/{key}", json=body, timeout=1200).status_code


def run_line(bed: Bed, key: str, args: argparse.Namespace) -> dict[str, Any]:
    """One line: the callers' statuses, n8n's memory before and with the line formed."""
    scope = f"line-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(bed.redis.url, decode_responses=True)
    port = urlsplit(bed.n8n.base_url).port or 80
    before = rss_kib(port)
    formed: int | None = None
    began = time.monotonic()
    with ThreadPoolExecutor(args.callers) as pool:
        calls = []
        for who in range(args.callers):
            body = {"scope": scope, "who": who, "hold_ms": args.hold_ms}
            calls.append(pool.submit(_post, bed.n8n.base_url, key, body))
            time.sleep(args.gap_ms / 1000)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if int(client.get(f"n8n-lock-{scope}:ticket") or 0) >= args.callers:
                time.sleep(2.0)  # the last arrivals park
                formed = rss_kib(port)
                break
            time.sleep(0.2)
        statuses = [c.result() for c in calls]
    client.close()
    return {
        "scope": scope,
        "wall_s": round(time.monotonic() - began, 2),
        "ok": sum(1 for s in statuses if s == 200),
        "rss_before_kib": before,
        "rss_formed_kib": formed,
    }


def _ms(stamp: Any) -> float:
    return float(stamp)


def costs(bed: Bed, workflow_id: str, scope: str) -> dict[str, Any]:
    """Redis node runs of the lock and waiter-seconds, from the saved executions of `scope`."""
    runs = [
        e
        for e in listing(bed.n8n, workflow_id)
        if ((e.get("data") or {}).get("resultData") or {}).get("runData", {}).get("Webhook")
        and json.dumps(e["data"]["resultData"]["runData"]["Webhook"]).find(scope) >= 0
    ]
    redis_runs = 0
    waited_s = 0.0
    parks = 0
    by_node: dict[str, int] = {}
    least_wait: tuple[float, int] | None = None  # the caller that waited least: its Redis runs
    served: list[tuple[float, int, int]] = []  # body start, ticket, who (the call's place)
    for run in runs:
        data = run["data"]["resultData"]["runData"]
        place = _served(data)
        if place is not None:
            served.append(place)
        own = 0
        for name, tasks in data.items():
            if name.startswith("Lock ") and tasks and _is_redis(run, name):
                own += len(tasks)
                by_node[name] = by_node.get(name, 0) + len(tasks)
            if name == "Lock Park":
                parks += len(tasks)
        redis_runs += own
        first = min(t["startTime"] for tasks in data.values() for t in tasks)
        body = data.get("Mark Start")
        if body:
            waited = max(0.0, (_ms(body[0]["startTime"]) - _ms(first)) / 1000)
            waited_s += waited
            if least_wait is None or waited < least_wait[0]:
                least_wait = (waited, own)
    # What waiting adds: the runs beyond those of a caller that found the scope free.
    floor = least_wait[1] if least_wait else 0
    served.sort()
    tickets = [ticket for _, ticket, _ in served]
    calls = [who for _, _, who in sorted(served, key=lambda s: s[1])]
    added = redis_runs - floor * len(runs)
    return {
        "executions": len(runs),
        "redis_node_runs": redis_runs,
        "waiter_seconds": round(waited_s, 1),
        "redis_per_waiter_second": round(redis_runs / waited_s, 3) if waited_s else None,
        "redis_per_caller": round(redis_runs / len(runs), 1) if runs else None,
        "parks": parks,
        "redis_runs_by_node": dict(sorted(by_node.items(), key=lambda item: -item[1])),
        "redis_runs_uncontended": floor,
        "redis_added_per_waiter_second": round(added / waited_s, 3) if waited_s else None,
        # FIFO: the bodies' order against their tickets', and the tickets' against the calls'
        # (callers called `--gap-ms` apart): pairs out of order.
        "bodies_out_of_ticket_order": _inversions(tickets),
        "tickets_out_of_call_order": _inversions(calls),
    }


def _served(data: dict[str, Any]) -> tuple[float, int, int] | None:
    """When the body began, the ticket it entered with and the caller's `who`."""
    body, decided, hook = data.get("Mark Start"), data.get("Lock Decide"), data.get("Webhook")
    if not (body and decided and hook):
        return None
    try:
        ticket = next(o for o in decided[-1]["data"]["main"] if o)[0]["json"]["ticket"]
        who = hook[0]["data"]["main"][0][0]["json"]["body"]["who"]
    except (KeyError, IndexError, StopIteration, TypeError):
        return None
    return _ms(body[0]["startTime"]), int(ticket), int(who)


def _inversions(values: list[int]) -> int:
    return sum(1 for i, a in enumerate(values) for b in values[i + 1 :] if a > b)


def _is_redis(run: dict[str, Any], name: str) -> bool:
    nodes = (run.get("workflowData") or {}).get("nodes") or []
    return any(n.get("name") == name and n.get("type") == "n8n-nodes-base.redis" for n in nodes)


def bench_version(version: str, args: argparse.Namespace) -> dict[str, Any]:
    settings = {"N8N_CONCURRENCY_PRODUCTION_LIMIT": str(args.limit)}
    out: dict[str, Any] = {"n8n": version, "limit": args.limit, "callers": args.callers}
    with running_bed(version, topology="single", n8n_settings=settings) as bed:
        designs = install(bed, uuid.uuid4().hex[:6])
        for design in args.designs:
            key, workflow_id = designs[design]
            line = run_line(bed, key, args)
            time.sleep(3)  # n8n saves the last executions
            found = costs(bed, workflow_id, line["scope"])
            formed, before = line["rss_formed_kib"], line["rss_before_kib"]
            per = (formed - before) / args.callers if formed and before else None
            out[design] = {**line, **found, "rss_per_waiter_kib": round(per, 1) if per else None}
            print(design, json.dumps(out[design]))
    return out


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        f"# park_line {date.today().isoformat()}",
        "",
        f"`python -m bench.park_line --versions {','.join(args.versions)} --callers "
        f"{args.callers} --hold-ms {args.hold_ms} --gap-ms {args.gap_ms} --limit {args.limit}`",
        "",
        "| n8n | design | answered 200 | wall s | Redis node runs per caller | waiter-seconds | "
        "Redis node runs per waiter-second | parks | n8n RSS per waiting caller (KiB) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for design in args.designs:
            d = r[design]
            lines.append(
                f"| {r['n8n']} | {design} | {d['ok']}/{args.callers} | {d['wall_s']} | "
                f"{d['redis_per_caller']} | {d['waiter_seconds']} | "
                f"{d['redis_per_waiter_second']} | {d['parks']} | {d['rss_per_waiter_kib']} |"
            )
    lines += [
        "",
        "Where the Redis node runs go (all callers; an uncontended caller's own runs first, and "
        "the runs waiting adds beyond them per waiter-second):",
        "",
        "| n8n | design | uncontended caller | added per waiter-second | runs by node | "
        "bodies out of ticket order / tickets out of call order (pairs) |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        for design in args.designs:
            d = r[design]
            nodes = ", ".join(f"{k} {v}" for k, v in d["redis_runs_by_node"].items())
            lines.append(
                f"| {r['n8n']} | {design} | {d['redis_runs_uncontended']} | "
                f"{d['redis_added_per_waiter_second']} | {nodes} | "
                f"{d['bodies_out_of_ticket_order']} / {d['tickets_out_of_call_order']} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", type=lambda v: v.split(","), default=["2.41.1"])
    parser.add_argument("--callers", type=int, default=60)
    parser.add_argument("--hold-ms", type=int, default=1000)
    parser.add_argument("--gap-ms", type=int, default=100)
    parser.add_argument("--limit", type=int, default=4)
    parser.add_argument("--designs", type=lambda v: v.split(","), default=list(DESIGNS))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    results = [bench_version(v, args) for v in args.versions]
    text = report(results, args)
    print(text)
    stem = args.out or RESULTS / f"park_line-{date.today().isoformat()}"
    stem.with_suffix(".md").write_text(text)
    stem.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
