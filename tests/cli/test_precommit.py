"""The pre-commit hook of .pre-commit-hooks.yaml, run by pre-commit itself on a sample repo.

pre-commit installs this checkout into an environment of its own, as it would for a user
whose .pre-commit-config.yaml names this repository, and runs `n8nlock-validate`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Invoke, explain

ROOT = Path(__file__).parent.parent.parent
CORPUS = Path(__file__).parent.parent / "corpus"
# What pip needs to build the package (pyproject.toml names the rest).
SOURCE = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "n8n_lockkit", "templates")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
}
PRE_COMMIT = (sys.executable, "-m", "pre_commit")
pytestmark = pytest.mark.slow  # pre-commit installs the package into an environment of its own
TryRepo = Callable[[Path], subprocess.CompletedProcess[str]]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, check=True)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout as a git repository with everything committed, uncommitted edits too
    (pre-commit installs a hook repository at a commit)."""
    repo = tmp_path_factory.mktemp("hook-repo")
    for name in SOURCE:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, repo / name)
    git(repo, "init", "--quiet")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "--message", "n8nlock")
    return repo


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def try_repo(hook_repo: Path, pre_commit_home: Path) -> TryRepo:
    """`pre-commit try-repo HOOK_REPO n8nlock-validate --all-files` in `sample`."""

    def run(sample: Path) -> subprocess.CompletedProcess[str]:
        git(sample, "add", "--all")
        return subprocess.run(
            [*PRE_COMMIT, "try-repo", str(hook_repo), "n8nlock-validate", "--all-files"],
            cwd=sample,
            env={**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(pre_commit_home), "NO_COLOR": "1"},
            capture_output=True,
            text=True,
            timeout=600,
        )

    return run


@pytest.fixture
def sample(tmp_path: Path, invoke: Invoke) -> Path:
    """A user's repository: a workspace made by `n8nlock init` with one good workflow."""
    root = tmp_path / "sample"
    result = invoke("init", root)
    assert result.exit_code == 0, explain(result)
    shutil.copy(CORPUS / "order_update.template.json", root / "workflows" / "orders.template.json")
    git(root, "init", "--quiet")
    return root


def test_the_hook_passes_a_good_workspace(sample: Path, try_repo: TryRepo) -> None:
    run = try_repo(sample)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "n8nlock validate" in run.stdout and "Passed" in run.stdout


def test_the_hook_fails_a_broken_workflow_with_its_finding(sample: Path, try_repo: TryRepo) -> None:
    (sample / "workflows" / "broken.template.json").write_text('{"nodes": {}, "connections": {}}')
    run = try_repo(sample)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Failed" in run.stdout
    assert (
        "workflows/broken.template.json::$.nodes: error: expected array, found an object "
        "[workflow-schema]"
    ) in run.stdout
    assert "2 file(s) checked, 1 problem(s): 1 error, 0 warnings" in run.stdout


def test_the_hook_says_where_the_workspace_should_be(tmp_path: Path, try_repo: TryRepo) -> None:
    """A workspace in a subfolder needs `entry: n8nlock --workspace DIR validate`."""
    sample = tmp_path / "sample"
    (sample / "automations" / "workflows").mkdir(parents=True)
    shutil.copy(CORPUS / "order_update.template.json", sample / "automations" / "workflows")
    git(sample, "init", "--quiet")
    run = try_repo(sample)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "- exit code: 3" in run.stdout
    assert f"Error: no n8nlock workspace (a folder with envs/) in {sample.resolve()}" in run.stdout
    assert "Hint: run `n8nlock init` to create one here, or pass --workspace PATH" in run.stdout
