"""docs/reference/keys.md is the key layout of keys.py as it is now, and the one page that spells
it out.

A key kind added to or changed in keys.py without `make docs-reference` fails here; so does a
key the schema builds that no row describes, and a key pattern written into another page.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from n8n_lockkit.primitives import key_kinds, keys
from scripts.gen_key_reference import REFERENCE, render

ROOT = Path(__file__).parent.parent.parent
FIX = "run `make docs-reference` and commit docs/reference/keys.md"
# Sample values for the parameters of KeySchema's key builders.
SAMPLES = {
    "scope": keys.dedupe_scope("orders", "evt-1"),
    "lane": 2,
    "ticket": 7,
    "hour": "2026112720",
    "metric": "arrived",
    "workflow_id": "wf1",
    "execution_id": "57",
}


def test_the_reference_is_what_make_docs_reference_writes_now() -> None:
    committed = REFERENCE.read_text(encoding="utf-8") if REFERENCE.exists() else ""
    assert committed == render(), FIX


def _matcher(pattern: str, namespace: str) -> re.Pattern[str]:
    """A row's pattern as a regular expression: `<prefix>` is `namespace`, any other `<…>`
    one or more characters."""

    def part(text: str) -> str:
        if text == "<prefix>":
            return re.escape(namespace)
        return ".+" if text.startswith("<") else re.escape(text)

    return re.compile("".join(part(text) for text in re.split(r"(<[^>]+>)", pattern)))


BUILDERS = [
    name
    for name, member in inspect.getmembers(keys.KeySchema, inspect.isfunction)
    # lock_key is the base of a scope's keys (and format 1's counter, ops/compat.py)
    if name.endswith("_key") and name not in ("lock_key", "parse_key")
]


@pytest.mark.parametrize("namespace", ["", "staging:"])
@pytest.mark.parametrize("builder", BUILDERS)
def test_every_key_the_schema_builds_is_one_row_of_the_reference(
    builder: str, namespace: str
) -> None:
    build = getattr(keys.KeySchema(namespace), builder)
    names = inspect.signature(build).parameters
    key = build(*(SAMPLES[name] for name in names))
    rows = [k.name for k in key_kinds.KEY_KINDS if _matcher(k.pattern, namespace).fullmatch(key)]
    assert len(rows) == 1, f"{builder} builds {key!r}, which rows {rows} of KEY_KINDS describe"


@pytest.mark.parametrize("kind", key_kinds.KEY_KINDS, ids=lambda k: k.name)
def test_every_key_kind_lies_under_a_prefix_of_the_namespace(kind: key_kinds.KeyKind) -> None:
    """So the prefixes the reference gives for SCAN and ACL key patterns cover every key."""
    assert kind.pattern.startswith(keys.KeySchema("<prefix>").prefixes), kind.pattern


# A key pattern spelled out: one of n8nlock's prefixes followed by what a key names.
SPELLED_OUT = re.compile(r"n8n-lock-[<A-Z*]|n8n-ratelimit-|n8nlock:(exec|stats|done|arrived|left)")
PAGES = sorted(
    [
        ROOT / "README.md",
        *(p for p in (ROOT / "docs").rglob("*.md") if "reference" not in p.parts),
        *(ROOT / "skills").glob("*.md"),
    ]
)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_other_page_spells_out_a_key(page: Path) -> None:
    found = [
        f"line {number}: {line.strip()}"
        for number, line in enumerate(page.read_text().splitlines(), 1)
        if SPELLED_OUT.search(line)
    ]
    assert not found, (
        f"{page.name} spells out keys; link to reference/keys.md instead:\n" + "\n".join(found)
    )
