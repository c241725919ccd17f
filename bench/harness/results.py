"""What a benchmark writes: the command that produced it, its markdown report under
bench/results (or `--results`), its figures as JSON, and progress lines on stderr."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from bench.harness.workspace import REPO

RESULTS = REPO / "bench" / "results"


def parser_for(doc: str | None, versions: str, runs: int) -> argparse.ArgumentParser:
    """A bench's options, first `--versions` and `--runs` (counted rounds)."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--versions", default=versions, help="n8n versions, commas")
    parser.add_argument("--runs", type=int, default=runs, help=f"counted rounds (default {runs})")
    return parser


def add_outputs(parser: argparse.ArgumentParser, report: str, *, figures: bool = True) -> None:
    """`-o/--output` (with `figures`: every figure as JSON) and `--results` (the folder the
    markdown `report` goes to, bench/results by default)."""
    if figures:
        help_text = "also write every figure to this JSON"
        parser.add_argument("-o", "--output", type=Path, help=help_text)
    parser.add_argument("--results", type=Path, default=RESULTS, help=f"where {report} goes")


def command(module: str, argv: Sequence[str], python: str = ".venv/bin/python") -> str:
    """How to run it again: `.venv/bin/python -m bench.<module> <argv>`."""
    return " ".join([python, "-m", f"bench.{module}", *argv])


def measured(command_text: str | None = None) -> str:
    """ "Measured <today> on <n> cores", and "with `<command>`" when given."""
    text = f"Measured {datetime.date.today().isoformat()} on {os.cpu_count()} cores"
    return text + (f" with `{command_text}`" if command_text else "")


def versions(text: str) -> Iterable[str]:
    """The n8n versions of a `--versions` option: commas."""
    return (v.strip() for v in text.split(",") if v.strip())


def progress_for(bench: str) -> Callable[[str], None]:
    """Progress lines `[bench] message` on stderr (stdout is for the figures)."""

    def progress(message: str) -> None:
        print(f"[{bench}] {message}", file=sys.stderr, flush=True)

    return progress


def tree_state() -> str:
    """This checkout's commit, and the engine's files that differ from it (git status)."""
    git = ["git", "-C", str(REPO)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    changed = subprocess.run(
        [*git, "status", "--porcelain", "--", "n8n_lockkit", "templates"],
        capture_output=True,
        text=True,
    )
    paths = [line.strip() for line in changed.stdout.splitlines() if line.strip()]
    return head.stdout.strip() + (f" + uncommitted: {', '.join(paths)}" if paths else "")


def report_text(command_text: str, intro: str, sections: Sequence[list[str]]) -> str:
    """A benchmark's markdown result: the command that produced it, what was measured, and
    its tables, each followed by a blank line."""
    lines = [f"`{command_text}`", "", intro, ""]
    for section in sections:
        lines += [*section, ""]
    return "\n".join(lines)


def print_sections(sections: Sequence[list[str]], result: dict[str, Any]) -> None:
    """The tables of a run on the terminal, then how long it took and how loaded the machine was."""
    print()
    for section in sections:
        print("\n".join(section))
        print()
    before, after = result["load_average_1min"]
    print(
        f"calls {result['calls_seconds']:.0f} s, run {result['seconds'] / 60:.1f} min "
        f"(n8n {result['n8n']}); load average {before:.1f} → {after:.1f}"
    )


def write_report(folder: Path, stem: str, text: str) -> Path:
    """`<folder>/<stem>.md` (the folder made when missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.md"
    path.write_text(text)
    return path


def jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON: {value!r}")


def write_figures(
    path: Path, command_text: str, args: argparse.Namespace, results: Sequence[Any]
) -> None:
    """Every figure of a run as JSON: the command, its arguments (but the output path) and
    the results of each version."""
    document = {"command": command_text, "arguments": vars(args) | {"output": None}}
    text = json.dumps({**document, "results": results}, indent=2, default=jsonable)
    path.write_text(text + "\n")


Report = tuple[str, list[list[str]]]  # what was measured, the tables


def each_version(
    module: str,
    argv: Sequence[str],
    args: argparse.Namespace,
    measure: Callable[[str], dict[str, Any]],
    report: Callable[[dict[str, Any]], Report],
    stem: Callable[[str], str],
) -> None:
    """Every n8n version of `--versions` in turn: measured, its tables printed and written to
    `<--results>/<stem(version)>.md` under the command; then, with `-o`, every figure as JSON."""
    progress = progress_for(module)
    results = []
    for version in versions(args.versions):
        result = measure(version)
        results.append(result)
        intro, sections = report(result)
        print_sections(sections, result)
        text = report_text(command(module, argv), intro, sections)
        progress(f"wrote {write_report(args.results, stem(version), text)}")
    if args.output:
        write_figures(args.output, command(module, argv), args, results)
    sys.stdout.flush()
