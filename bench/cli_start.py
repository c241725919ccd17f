"""How fast n8nlock starts: `--help`, and `validate` of a workspace of 1,000 workflows.

Whole-process wall time (a new Python each run, as a shell or CI runs it) and CPU time,
median of several runs after one warm-up, for this checkout and for BEFORE_REF (main before
issue 11 made the imports lazy), each run as `python -m n8n_lockkit` from its own tree with
this venv's dependencies. Target P5: `--help` ≤ 0.1 s, validate of 1,000 workflows ≤ 1 s
(wall time on an otherwise idle machine; CPU time says the same when others load it).

The workspace holds the lock primitives and 1,000 workflows: the corpus (tests/corpus) over
and over, every other one wrapped in a lock by this checkout's add-lock-to-workflow, as a
team's workspace mixes plain and locked workflows.

    python -m bench.cli_start [--runs 10] [--before REF]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.harness.results import measured
from bench.harness.workspace import REPO, checkout, cli

BEFORE_REF = "f672502"  # main before issue 11: every library module imported at start
CORPUS = REPO / "tests" / "corpus"
WORKFLOWS = 1000
TARGETS = {"help": 0.1, "validate": 1.0}


def build_workspace(root: Path, count: int = WORKFLOWS) -> None:
    """`count` workflows besides the primitives, every other one wrapped in a lock."""
    cli(root.parent, "init", str(root))
    cli(root, "create-lock", "--include-error-handler", "--include-rate-limit")
    workflows = root / "workflows"
    plain = {p.name.removesuffix(".template.json"): p.read_text() for p in CORPUS.glob("*.json")}
    locked = {}
    for key, text in plain.items():
        (workflows / f"{key}.template.json").write_text(text)
        cli(root, "add-lock-to-workflow", "--workflow-key", key, "--scope-expression", key)
        locked[key] = (workflows / f"{key}.template.json").read_text()
        (workflows / f"{key}.template.json").unlink()
    shapes = [*plain.values(), *locked.values()]
    names = [*plain, *(f"{key}_locked" for key in locked)]
    for i in range(count):
        shape = i % len(shapes)
        (workflows / f"{names[shape]}_{i:04d}.template.json").write_text(shapes[shape])


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float  # user + system of the process: what other load on the machine inflates less


def timings(tree: Path, args: Sequence[str], runs: int) -> list[Timing]:
    """Each of `runs` runs of `python -m n8n_lockkit ARGS` in `tree`, after one warm-up."""
    command = [sys.executable, "-m", "n8n_lockkit", *args]
    # Only the tree's own package may shadow the installed one: drop this checkout's path.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    measured = []
    for attempt in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace")
            raise SystemExit(f"{' '.join(args)} in {tree} exited {done.returncode}:\n{why}")
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        if attempt:  # the first run warms the file cache and writes the .pyc files
            measured.append(Timing(wall, cpu))
    return measured


def medians(measured: list[Timing]) -> Timing:
    return Timing(
        statistics.median(t.wall for t in measured), statistics.median(t.cpu for t in measured)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="counted runs of each command")
    parser.add_argument("--before", default=BEFORE_REF, help="git ref to compare with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="n8nlock-start-") as tmp:
        base = Path(tmp)
        workspace = base / "workspace"
        build_workspace(workspace)
        before = checkout(args.before, base / "before")
        commands = {
            "help": ["--help"],
            "validate": ["--workspace", str(workspace), "validate"],
        }
        rows = []
        for name, command in commands.items():
            old = medians(timings(before, command, args.runs))
            new = medians(timings(REPO, command, args.runs))
            rows.append((name, old, new, "✓" if new.wall <= TARGETS[name] else "✗"))
        files = len(list((workspace / "workflows").glob("*.json")))
    print(
        f"{measured('python -m bench.cli_start')}: "
        f"whole-process wall time (CPU time in brackets), median of {args.runs} runs after a "
        f"warm-up; validate of a workspace of {files} workflows (the primitives and "
        f"{WORKFLOWS} corpus workflows, every other one wrapped in a lock)."
    )
    print()
    print(f"| command | target | before ({args.before}) | now |")
    print("|---|---|---|---|")
    labels = {"help": "`n8nlock --help`", "validate": f"`n8nlock validate` ({files} files)"}
    for name, old, new, mark in rows:
        print(
            f"| {labels[name]} | ≤ {TARGETS[name]:g} s | {old.wall:.3f} s ({old.cpu:.3f}) "
            f"| {new.wall:.3f} s ({new.cpu:.3f}) {mark} |"
        )


if __name__ == "__main__":
    main()
