"""n8nlock starts fast: help, completion and validate import only what they use.

Shell completion runs n8nlock on every Tab and CI runs validate on every push; requests,
redis, jsonschema, ruamel and prometheus_client each cost tens of milliseconds to
import. `python -m bench.cli_start` measures the time; these tests keep the imports out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from n8n_lockkit.cli import common_options, main, wrap_commands
from n8n_lockkit.ops import redis_access
from n8n_lockkit.primitives import keys, overlap
from n8n_lockkit.rewrite.plans import options
from n8n_lockkit.rewrite.wrapping import wrap
from tests.conftest import Invoke, explain

HEAVY = ("requests", "redis", "jsonschema", "ruamel", "prometheus_client", "urllib3")
# The library layers only commands need: each costs 10-40 ms with what it imports.
COMMAND_LAYERS = tuple(
    f"n8n_lockkit.{layer}" for layer in ("rewrite", "primitives", "remote", "ops")
)
CORPUS = Path(__file__).parent.parent / "corpus"


def imported_after(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> set[str]:
    """The heavy packages and command-only layers imported by the time `n8nlock ARGS` ends."""
    script = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps(list(sys.modules)), file=sys.__stderr__))\n"
        "from n8n_lockkit.cli import main\n"
        f"main({args!r}, prog_name='n8nlock')\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    modules: list[str] = json.loads(run.stderr.strip().splitlines()[-1])
    return {
        name
        for name in (*HEAVY, *COMMAND_LAYERS)
        if any(m == name or m.startswith(f"{name}.") for m in modules)
    }


HELP = ["--help", "--version", "validate --help", "add-rate-limit --help", "locks --help"]


@pytest.mark.parametrize("args", [line.split() for line in HELP], ids=HELP)
def test_help_imports_no_heavy_module_and_no_command_layer(args: list[str], tmp_path: Path) -> None:
    assert imported_after(args, tmp_path) == set()


def test_validate_of_valid_workflows_imports_no_heavy_module(workspace: Path) -> None:
    for path in CORPUS.glob("*.json"):
        (workspace / "workflows" / path.name).write_text(path.read_text())
    # validate reads the primitives' catalogue, and the graph helpers of rewrite.
    assert imported_after(["validate"], workspace) & set(HEAVY) == set()


def test_validate_of_a_workflow_of_the_wrong_shape_asks_jsonschema(
    workspace: Path, invoke: Invoke
) -> None:
    (workspace / "workflows" / "broken.template.json").write_text('{"nodes": {}}')
    result = invoke("validate", cwd=workspace)
    assert result.exit_code == 1, explain(result)
    assert "workflows/broken.template.json::$.nodes: error: expected array" in result.stdout
    assert imported_after(["validate"], workspace) & set(HEAVY) == {"jsonschema"}


def test_a_tab_imports_no_heavy_module(workspace: Path) -> None:
    env = {
        **os.environ,
        "_N8NLOCK_COMPLETE": "bash_complete",
        "COMP_WORDS": "n8nlock push --env ",
        "COMP_CWORD": "3",
    }
    assert imported_after([], workspace, env) == set()


def test_the_cli_spells_the_library_constants_as_the_library_does() -> None:
    on_denied = next(p for p in main.commands["add-rate-limit"].params if p.name == "on_denied")
    assert tuple(getattr(on_denied.type, "choices", ())) == (*wrap.ON_DENIED, options.DEFAULT)
    assert common_options.DEFAULT == options.DEFAULT
    ttl = next(p for p in main.commands["add-dedupe"].params if p.name == "ttl_seconds")
    assert f"at least {options.MIN_TTL_SECONDS} (a release refuses within " in str(ttl.help)
    assert f"within {keys.RELEASE_MARGIN_SECONDS} s of the expiry" in str(ttl.help)
    assert wrap_commands.ON_DENIED == wrap.ON_DENIED
    assert wrap_commands.ALGORITHMS == wrap.ALGORITHMS
    assert wrap_commands.ON_BUSY == overlap.ON_BUSY
    assert common_options.URL_VARIABLE == redis_access.URL_VARIABLE
