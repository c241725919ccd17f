"""Shared fixtures: run the CLI, build workspaces, compare golden files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import responses
from click.testing import CliRunner, Result

from n8n_lockkit.cli import main
from tests.hints import untrue_claims


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test that starts a redis-server (through redis_fixtures's `redis_url`); tests/e2e's
    conftest marks the ones that start n8n."""
    for item in items:
        if "redis_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.redis)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens", action="store_true", help="rewrite golden files instead of comparing"
    )


@pytest.fixture(autouse=True)
def no_network(request: pytest.FixtureRequest) -> Iterator[None]:
    """Only tests/e2e reaches the network: elsewhere an unregistered request fails the test."""
    if "e2e" in request.node.path.parts:
        yield
        return
    responses.start()
    yield
    responses.stop()
    responses.reset()


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))


Invoke = Callable[..., Result]


@pytest.fixture
def invoke(monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """Run `n8nlock ARGS…` in-process, from `cwd` (default: the current directory)."""

    def run(*args: str | Path, cwd: Path | None = None, input: str | None = None) -> Result:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        argv = [str(a) for a in args]
        result = CliRunner().invoke(main, argv, input=input)
        # Every hint any test drives is checked against the command typed.
        for line in result.stderr.splitlines():
            if line.startswith("Hint: "):
                assert untrue_claims(line, argv) == [], explain(result)
        return result

    return run


def explain(result: Result) -> str:
    """The streams of a CLI run, as the failure message of an assertion."""
    return f"exit {result.exit_code}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


@pytest.fixture
def workspace(tmp_path: Path, invoke: Invoke) -> Path:
    """A fresh workspace with one env, `dev`."""
    root = tmp_path / "ws"
    result = invoke("init", root, "--env", "dev")
    assert result.exit_code == 0, explain(result)
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root with its bytes, to prove a failing command changed nothing."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def assert_golden(expected: Path, actual: str, update: bool) -> None:
    if update or not expected.exists():
        expected.parent.mkdir(parents=True, exist_ok=True)
        expected.write_text(actual, encoding="utf-8")
        if not update:
            pytest.fail(f"golden file {expected} was missing and has been written; review it")
    assert actual == expected.read_text(encoding="utf-8"), (
        f"{expected} differs; if the change is intended run pytest --update-goldens"
    )


# Nodes that must not run twice: a deliberate failure, and a call of a primitive (which would
# draw a second ticket).
RUN_ONCE_TYPES = {"n8n-nodes-base.stopAndError", "n8n-nodes-base.executeWorkflow"}


def _has_expression(value: Any) -> bool:
    if isinstance(value, str):
        return value.startswith("=")
    if isinstance(value, dict):
        return any(_has_expression(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_expression(v) for v in value)
    return False


def run_once_on_a_stall(nodes: list[dict[str, Any]]) -> list[str]:
    """The nodes that evaluate an expression and would not run again if n8n timed it out
    (N8N_EXPRESSION_ENGINE_TIMEOUT: a stall of the process inside it fails the node)."""
    return [
        n["name"]
        for n in nodes
        if n["type"] not in RUN_ONCE_TYPES
        and _has_expression(n.get("parameters"))
        and not n.get("retryOnFail")
    ]
