"""Write a generated page of docs/reference/, or say how it differs from what is committed.

Shared by the generators of the reference pages (scripts/gen_cli_reference.py,
scripts/gen_key_reference.py): `--check` exits 1 and shows the first lines of the difference
when the committed page is stale; without it, the page is written.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_or_check(page: Path, text: str, argv: Sequence[str] | None, description: str) -> int:
    """`page` gets `text` (exit 0), or with `--check` in `argv`: 1 when it differs."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is stale")
    args = parser.parse_args(argv)
    shown = page.relative_to(ROOT)
    if args.check:
        current = page.read_text(encoding="utf-8") if page.exists() else ""
        if current != text:
            print(f"{shown} is stale: run `make docs-reference`")
            lines = difflib.unified_diff(
                current.splitlines(), text.splitlines(), "committed", "generated now", lineterm=""
            )
            print("\n".join(list(lines)[:60]))
            return 1
        return 0
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text, encoding="utf-8")
    print(f"wrote {shown}")
    return 0
