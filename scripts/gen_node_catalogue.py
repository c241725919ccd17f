"""Generate `n8n_lockkit/data/node_types.json` from the node descriptions n8n ships.

    make node-catalogue                                   # both supported versions
    python -m scripts.gen_node_catalogue --write          # the same
    python -m scripts.gen_node_catalogue --check          # exit 1 if the file is stale

Each supported n8n version is installed into the test-bed cache (as the e2e tests do) and
its packages' `dist/types/nodes.json` are read: the same descriptions n8n's editor and
server use. A type is a trigger when its description is in the `trigger` group or polls.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from testbed.install import ensure_n8n
from testbed.progress import Progress

SUPPORTED_VERSIONS = ("2.41.1", "1.123.81")
DATA_FILE = Path(__file__).parents[1] / "n8n_lockkit" / "data" / "node_types.json"
# Package folder under node_modules -> the prefix n8n gives its node types.
PACKAGES = {
    "n8n-nodes-base": "n8n-nodes-base",
    "@n8n/n8n-nodes-langchain": "@n8n/n8n-nodes-langchain",
}


def traits(description: Mapping[str, Any]) -> list[str]:
    """How a node type starts executions, from its description; empty if it does not."""
    group = description.get("group") or []
    found = []
    if description.get("polling"):
        found.append("polling")
    if "trigger" in group:
        found.append("trigger")
    if found and description.get("webhooks"):
        found.append("webhook")
    return sorted(found)


def version_entry(descriptions: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """{triggers: {type: traits}, others: [type…]} for one n8n version's descriptions,
    given as (type prefix, description) pairs."""
    found: dict[str, set[str]] = {}
    for prefix, description in descriptions:
        node_type = f"{prefix}.{description['name']}"
        found.setdefault(node_type, set()).update(traits(description))
    return {
        "triggers": {t: sorted(v) for t, v in sorted(found.items()) if v},
        "others": sorted(t for t, v in found.items() if not v),
    }


def installed_descriptions(node_modules: Path) -> list[tuple[str, Mapping[str, Any]]]:
    pairs: list[tuple[str, Mapping[str, Any]]] = []
    for folder, prefix in PACKAGES.items():
        path = node_modules / folder / "dist" / "types" / "nodes.json"
        pairs.extend((prefix, d) for d in json.loads(path.read_text(encoding="utf-8")))
    return pairs


def build(versions: Sequence[str], progress: Progress) -> dict[str, Any]:
    entries = {}
    for version in versions:
        install = ensure_n8n(version, progress)
        entries[version] = version_entry(installed_descriptions(install.app_dir / "node_modules"))
    return {
        "generated_by": "python -m scripts.gen_node_catalogue --write (do not edit by hand)",
        "versions": entries,
    }


def dump(catalogue: Mapping[str, Any]) -> str:
    return json.dumps(catalogue, indent=1) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the data file")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args(argv)
    text = dump(build(SUPPORTED_VERSIONS, lambda m: print(f"[catalogue] {m}", file=sys.stderr)))
    if args.write:
        DATA_FILE.write_text(text, encoding="utf-8")
    elif args.check and DATA_FILE.read_text(encoding="utf-8") != text:
        print(f"{DATA_FILE} is stale: run with --write", file=sys.stderr)
        return 1
    elif not args.check:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
