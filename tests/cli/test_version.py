"""The version is written once, in pyproject.toml, and `n8nlock --version` says it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import n8n_lockkit
from tests.conftest import Invoke, explain

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).parent.parent.parent
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_version_is_pyprojects(invoke: Invoke) -> None:
    result = invoke("--version")
    assert result.exit_code == 0, explain(result)
    assert result.stdout == f"n8nlock, version {VERSION}\n"
    assert n8n_lockkit.__version__ == VERSION


def test_no_module_writes_the_version_again() -> None:
    written = re.compile(r"""__version__\s*(:\s*str\s*)?=\s*["']""")
    again = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "n8n_lockkit").rglob("*.py")
        if written.search(path.read_text(encoding="utf-8"))
    ]
    assert again == [], "read the version from the package's metadata (n8n_lockkit.__version__)"
