"""What add-debounce adds: to a burst's body start beyond Q, and to a buffered event's answer.
Not a test.

    .venv/bin/python -m bench.debounce_bench [--versions 2.41.1,1.123.81] [--runs 20]
        [--events 3] [--gap-ms 300] [--quiet-seconds 2] [--at-once 10] [--at-once-rounds 1]
        [--expression-engines default,legacy] [--n8n-setting NAME=VALUE ...]
        [--out bench/results/<stem>]

One n8n (regular mode), one Redis. The e2e's debounced workflow (tests/e2e/test_debounce.py:
Webhook, answering with its last node → Record, a Redis push of when the body began, its
execution and its items), wrapped by this checkout's `add-debounce --quiet-seconds Q`. A burst
is `--events` calls on a key of its own, `--gap-ms` apart, one call at a time; the bursts run one
after the other (`--warm-up` first, not counted). Per burst: the body's start (`Date.now()` in
the body's first node, Record) minus the time the burst's last call was sent, minus Q: what the
debounce adds to the quiet time (its waiter looks at most every 0.5 s, then cuts, claims and
reads the burst's records). Per call: the seconds until its buffered answer. For scale, the
same workflow unwrapped is called as often, one call at a time: its answer comes after its
body (the Redis push), the floor of a webhook answered by its last node.

Then `--at-once` keys burst at the same moment, each a thread sending its burst as above
(`--at-once-rounds` times, Q + 2 s apart), and as many threads call the unwrapped workflow as
often: the answers under that load, where n8n's CPU is the bound. The n8n main process's CPU
time (user + system, /proc; a local n8n only) is counted over the bursts one at a time and over
the unwrapped calls: per event, all included (its execution, the burst's waiter looking, the
body's run), against per unwrapped call.

`--expression-engines legacy` runs each n8n 2.x once more with N8N_EXPRESSION_ENGINE=legacy
(n8n 2.x evaluates expressions in a V8 isolate by default; the test bed runs 1.x with legacy).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path
from typing import Any

import redis

from bench.harness.calls import call
from bench.harness.executions import listing, workflow_ids
from bench.harness.results import RESULTS, command, measured, progress_for, tree_state
from bench.harness.runs import Execution, end, epoch_ms, run_data, webhook_body
from bench.harness.session import Bed, Span, running_bed
from bench.harness.stats import percentile
from bench.harness.workspace import cli, prepare, push
from testbed.runtime import needs_node24
from tests.e2e.stalls import n8n_main_pid
from tests.e2e.test_debounce import body_workflow

progress = progress_for("debounce_bench")


def install(bed: Bed, quiet: float) -> tuple[str, str]:
    """The debounced workflow and the same workflow unwrapped, pushed and active: their keys."""
    root = bed.tmp / "debounce"
    prepare(root, bed.n8n)
    tag = uuid.uuid4().hex[:6]
    debounced, plain = f"bench_debounced_{tag}", f"bench_plain_{tag}"
    for key in (debounced, plain):
        (root / "workflows" / f"{key}.template.json").write_text(json.dumps(body_workflow(key)))
    cli(root, "add-debounce", "--workflow-key", debounced,
        "--key-expression", "={{ $json.body.chat }}", "--quiet-seconds", f"{quiet:g}")  # fmt: skip
    cli(root, "validate", "--env", "bench")
    push(root)
    return debounced, plain


def one_burst(
    bed: Bed, client: redis.Redis, key: str, chat: str, args: argparse.Namespace
) -> dict[str, Any]:
    """`--events` calls on `chat`, then the body's start from its record."""
    answers: list[float] = []
    last_sent = 0.0
    for who in range(args.events):
        if who:
            time.sleep(args.gap_ms / 1000)
        last_sent = time.time()
        answer = call(bed.n8n, key, {"chat": chat, "who": who})
        body = answer.response.json()
        if body.get("buffered") is not True:
            raise SystemExit(f"not a buffered answer: {body}")
        answers.append(answer.seconds)
    deadline = time.time() + args.quiet_seconds + 30
    while time.time() < deadline:
        for raw in client.lrange(f"debounce-sink-{key}", 0, -1):
            record = json.loads(raw)
            if any(item.get("chat") == chat for item in record["items"]):
                items = [item["who"] for item in record["items"]]
                if items != list(range(args.events)):
                    raise SystemExit(f"burst {chat} ran with {items}")
                start = record["t"] / 1000
                return {
                    "chat": chat,
                    "answers_s": answers,
                    "after_last_s": round(start - last_sent, 4),
                    "added_s": round(start - last_sent - args.quiet_seconds, 4),
                }
        time.sleep(0.05)
    raise SystemExit(f"burst {chat}: no body within {args.quiet_seconds + 30} s")


def cpu_seconds(bed: Bed) -> float | None:
    """User + system CPU seconds of the n8n main process so far (None: no local process)."""
    try:
        pid = n8n_main_pid(bed.n8n)
    except LookupError:
        return None
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def per_call_ms(before: float | None, after: float | None, calls: int) -> float | None:
    if before is None or after is None:
        return None
    return round((after - before) * 1000 / calls, 1)


def at_once(bed: Bed, key: str, tag: str, args: argparse.Namespace) -> list[float]:
    """`--at-once` keys send `--events` calls each, `--gap-ms` apart, all starting together:
    the answers' seconds."""

    def one_key(number: int) -> list[float]:
        seconds = []
        for who in range(args.events):
            if who:
                time.sleep(args.gap_ms / 1000)
            seconds.append(call(bed.n8n, key, {"chat": f"{tag}{number}", "who": who}).seconds)
        return seconds

    with ThreadPoolExecutor(args.at_once) as pool:
        return [s for seconds in pool.map(one_key, range(args.at_once)) for s in seconds]


def since_start_ms(execution: Execution, moment: float) -> float:
    return moment - epoch_ms(str(execution["startedAt"]))


def answer_phases(bed: Bed, key: str, prefix: str) -> dict[str, dict[str, float]]:
    """Of the buffered executions of the keys bursting at once (their chat begins with
    `prefix`): ms from the execution's start to its first node (n8n's own) and to the answer."""
    workflow_id = workflow_ids(bed.tmp / "debounce")[key]
    first_node, answered = [], []
    for execution in listing(bed.n8n, workflow_id):
        runs = run_data(execution)
        if "Debounce Response" not in runs or not str(
            webhook_body(execution).get("chat", "")
        ).startswith(prefix):
            continue
        starts = [float(run["startTime"]) for node in runs.values() for run in node]
        first_node.append(since_start_ms(execution, min(starts)) / 1000)
        answered.append(since_start_ms(execution, end(execution, "Debounce Response")) / 1000)
    return {"start_to_first_node": summary(first_node), "start_to_answer": summary(answered)}


def summary(values: Sequence[float]) -> dict[str, float]:
    """Median and p95 (nearest rank: a measured value), in ms."""
    ms = [v * 1000 for v in values]
    return {
        "median_ms": round(statistics.median(ms), 1),
        "p95_ms": round(percentile(ms, 95), 1),
        "min_ms": round(min(ms), 1),
        "max_ms": round(max(ms), 1),
        "n": len(ms),
    }


def bench_version(version: str, engine: str, args: argparse.Namespace) -> dict[str, Any]:
    span = Span()
    settings = dict(args.n8n_setting)
    if engine != "default":
        settings["N8N_EXPRESSION_ENGINE"] = engine
    with running_bed(version, topology="single", n8n_settings=settings) as bed:
        debounced, plain = install(bed, args.quiet_seconds)
        client = redis.Redis.from_url(bed.redis.url, decode_responses=True)
        bursts = []
        for number in range(args.warm_up):
            one_burst(bed, client, debounced, f"w{number}", args)
        cpu_before = cpu_seconds(bed)
        for number in range(args.runs):
            burst = one_burst(bed, client, debounced, f"c{number}", args)
            bursts.append(burst)
            progress(f"{version} burst {number + 1}: +{burst['added_s'] * 1000:.0f} ms over Q")
        cpu_bursts = per_call_ms(cpu_before, cpu_seconds(bed), args.runs * args.events)
        for number in range(args.warm_up):
            call(bed.n8n, plain, {"chat": f"w{number}", "who": 0})
        plain_answers = []
        cpu_before = cpu_seconds(bed)
        for number in range(args.runs * args.events):
            plain_answers.append(call(bed.n8n, plain, {"chat": f"p{number}", "who": 0}).seconds)
        cpu_plain = per_call_ms(cpu_before, cpu_seconds(bed), args.runs * args.events)
        many: list[float] = []
        many_plain: list[float] = []
        for number in range(args.at_once_rounds):
            time.sleep(args.quiet_seconds + 2)  # the bursts before have run their bodies
            many += at_once(bed, debounced, f"k{number}-", args)
            time.sleep(args.quiet_seconds + 2)
            many_plain += at_once(bed, plain, f"q{number}-", args)
        progress(f"{version} {args.at_once} keys at once: max {max(many):.2f} s")
        time.sleep(2)  # n8n saves the last executions
        phases = answer_phases(bed, debounced, "k")
        client.close()
    return {
        "n8n": version,
        "expression_engine": engine if needs_node24(version) else "legacy",
        "n8n_settings": dict(args.n8n_setting),
        "load_average_1min": span.load(),
        "seconds": round(span.seconds(), 1),
        "added_beyond_quiet": summary([b["added_s"] for b in bursts]),
        "buffered_answer": summary([s for b in bursts for s in b["answers_s"]]),
        "plain_answer": summary(plain_answers),
        "cpu_per_event_ms": cpu_bursts,
        "cpu_per_plain_call_ms": cpu_plain,
        "at_once_answer": summary(many),
        "at_once_plain_answer": summary(many_plain),
        "at_once_phases": phases,
        "bursts": bursts,
    }


def report(results: list[dict[str, Any]], argv: Sequence[str], tree: str) -> str:
    command_text = command("debounce_bench", argv)
    loads = ", ".join(
        f"{label(r)}: {r['load_average_1min'][0]:.2f} → {r['load_average_1min'][1]:.2f}"
        for r in results
    )
    lines = [
        f"# debounce_bench {date.today().isoformat()}",
        "",
        f"`{command_text}`",
        "",
        f"{measured()} (checkout {tree}); 1-minute load average at start → end: {loads}. "
        "One burst at a time, each on a key of its own.",
        "",
        "| n8n | bursts | body start − last event − Q: median / p95 (min–max) ms | "
        "buffered answer: median / p95 ms (calls) | same workflow unwrapped, answered after "
        "its body: median / p95 ms |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        a, b, p = r["added_beyond_quiet"], r["buffered_answer"], r["plain_answer"]
        lines.append(
            f"| {label(r)} | {a['n']} | {a['median_ms']:.0f} / {a['p95_ms']:.0f} "
            f"({a['min_ms']:.0f}–{a['max_ms']:.0f}) | {b['median_ms']:.0f} / "
            f"{b['p95_ms']:.0f} ({b['n']}) | {p['median_ms']:.0f} / {p['p95_ms']:.0f} |"
        )
    keys = results[0]["at_once_answer"]["n"] if results else 0
    lines += [
        "",
        f"Keys bursting at once ({keys} calls in all), and n8n's CPU time (main process, user + "
        "system) per call:",
        "",
        "| n8n | buffered answer, keys at once: median / max ms | unwrapped, as many callers "
        "at once: median / max ms | n8n CPU per buffered event (waiter and body included) "
        "| n8n CPU per unwrapped call |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        m, q = r["at_once_answer"], r["at_once_plain_answer"]
        lines.append(
            f"| {label(r)} | {m['median_ms']:.0f} / {m['max_ms']:.0f} | {q['median_ms']:.0f} / "
            f"{q['max_ms']:.0f} | {cpu(r['cpu_per_event_ms'])} | "
            f"{cpu(r['cpu_per_plain_call_ms'])} |"
        )
    lines += [
        "",
        "Where a buffered answer's time goes when the keys burst at once (from the executions' "
        "saved data; the execution's start is n8n's `startedAt`):",
        "",
        "| n8n | execution start → its first node: median / max ms | execution start → answer "
        "sent: median / max ms |",
        "|---|---|---|",
    ]
    for r in results:
        f, a = r["at_once_phases"]["start_to_first_node"], r["at_once_phases"]["start_to_answer"]
        lines.append(
            f"| {label(r)} | {f['median_ms']:.0f} / {f['max_ms']:.0f} | "
            f"{a['median_ms']:.0f} / {a['max_ms']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def label(result: dict[str, Any]) -> str:
    settings = "".join(f", {k}={v}" for k, v in result.get("n8n_settings", {}).items())
    return f"{result['n8n']} ({result['expression_engine']} expressions{settings})"


def cpu(ms: float | None) -> str:
    return "–" if ms is None else f"{ms:.0f} ms"


def main(argv: Sequence[str] | None = None) -> None:
    given = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--versions", type=lambda v: v.split(","), default=["2.41.1"])
    parser.add_argument("--runs", type=int, default=20, help="counted bursts")
    parser.add_argument("--warm-up", type=int, default=2, help="bursts before the counted ones")
    parser.add_argument("--events", type=int, default=3, help="calls per burst")
    parser.add_argument("--gap-ms", type=int, default=300, help="between a burst's calls")
    parser.add_argument("--quiet-seconds", type=float, default=2.0)
    parser.add_argument("--at-once", type=int, default=10, help="keys that burst together")
    parser.add_argument(
        "--at-once-rounds", type=int, default=1, help="times the keys burst together"
    )
    parser.add_argument(
        "--expression-engines",
        type=lambda v: v.split(","),
        default=["default"],
        help="n8n 2.x's N8N_EXPRESSION_ENGINE: default (n8n's own), legacy, vm",
    )
    parser.add_argument(
        "--n8n-setting",
        type=lambda v: tuple(v.split("=", 1)),
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an n8n setting more (repeatable), e.g. N8N_EXPRESSION_ENGINE_POOL_SIZE=10",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=RESULTS / f"debounce_bench-{date.today().isoformat()}",
        help="stem of .md/.json",
    )
    args = parser.parse_args(given)
    progress(f"load average {os.getloadavg()[0]:.2f}")
    runs = [
        (version, engine)
        for version in args.versions
        for engine in (args.expression_engines if needs_node24(version) else ["default"])
    ]
    results = [bench_version(version, engine, args) for version, engine in runs]
    text = report(results, given, tree_state())
    print(text)
    args.out.with_suffix(".md").write_text(text)
    document = {"command": command("debounce_bench", given), "results": results}
    args.out.with_suffix(".json").write_text(json.dumps(document, indent=2) + "\n")
    progress(f"wrote {args.out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
