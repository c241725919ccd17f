"""Record the digest of every primitive n8nlock shipped before format stamps.

`n8n_lockkit/primitives/shipped_renders.json` lets `n8nlock upgrade` tell an unstamped
primitive that n8nlock wrote (replace it) from one a user edited (keep it). Stamped primitives
carry their digest, so only history before the stamps is needed; this script renders every
commit of that history that changed a primitive and records the digests by format.

Run from a checkout with history: make shipped-renders (python -m scripts.gen_shipped_renders)
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

from n8n_lockkit.primitives.formats import digest

ROOT = Path(__file__).parents[1]
TABLE = ROOT / "n8n_lockkit" / "primitives" / "shipped_renders.json"
# The first commit of engine v2 (format 2); earlier renders are format 1.
FORMAT_2_FROM = "240ca69"
LAST_UNSTAMPED = "f672502"
PATHS = ("templates", "n8n_lockkit")

RENDER_ALL = """
import json, sys
try:
    from n8n_lockkit.primitives.catalogue import PRIMITIVES
    from n8n_lockkit.primitives.render import render_primitive
except ImportError:  # before the package was grouped by domain
    from n8n_lockkit.primitives import PRIMITIVES
    from n8n_lockkit.render import render_primitive
json.dump({k: render_primitive(p) for k, p in PRIMITIVES.items()}, sys.stdout)
"""


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True
    ).stdout


def _renders(commit: str) -> dict[str, dict[str, object]]:
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit, *PATHS], check=True, capture_output=True
        ).stdout
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        done = subprocess.run(
            [sys.executable, "-c", RENDER_ALL],
            cwd=tmp,
            env={"PYTHONPATH": tmp, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            return {}
        renders: dict[str, dict[str, object]] = json.loads(done.stdout)
        return renders


def main() -> None:
    commits = _git("rev-list", "--reverse", LAST_UNSTAMPED, "--", "templates", "n8n_lockkit")
    v2 = set(_git("rev-list", f"{FORMAT_2_FROM}^..{LAST_UNSTAMPED}").split())
    table: dict[str, dict[str, int]] = {}
    for commit in commits.split():
        for key, workflow in _renders(commit).items():
            # A render that did not change across formats keeps the first one that made it.
            table.setdefault(key, {}).setdefault(digest(workflow), 2 if commit in v2 else 1)
    TABLE.write_text(json.dumps(table, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{TABLE.relative_to(ROOT)}: {sum(map(len, table.values()))} renders")


if __name__ == "__main__":
    main()
