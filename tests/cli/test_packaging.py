"""n8nlock installs as users install a CLI, and runs from anywhere once installed.

The wheel carries the templates; `pip install` of the wheel and `pipx install .` each give a
working `n8nlock` in a clean virtual environment (dependencies from the package index); the
GitHub Actions example of skills/n8nlock-validate-in-ci.md runs as written with that install.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).parent.parent.parent
CORPUS = Path(__file__).parent.parent / "corpus"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
pytestmark = pytest.mark.slow  # each builds or installs the package


def run(
    command: list[str | Path], cwd: Path, env: Mapping[str, str] | None = None, timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args} exited {done.returncode}\n{done.stdout}{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    ok(run([*pip_wheel, "--quiet", "-w", dist, ROOT], cwd=dist))
    (built,) = dist.glob("n8n_lockkit-*.whl")
    return built


@pytest.fixture(scope="module")
def wheel_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with nothing but `pip install <the wheel>`: its bin/."""
    where = tmp_path_factory.mktemp("venv")
    venv.create(where, with_pip=True)
    ok(run([where / "bin" / "python", "-m", "pip", "install", "--quiet", wheel], cwd=where))
    return where / "bin"


def works_from_anywhere(n8nlock: Path, tmp: Path) -> None:
    """--version, then init, create-lock and validate in a new folder outside the checkout."""
    assert ok(run([n8nlock, "--version"], cwd=tmp)) == f"n8nlock, version {VERSION}\n"
    ok(run([n8nlock, "init", "ws"], cwd=tmp))
    ok(run([n8nlock, "create-lock", "--include-error-handler"], cwd=tmp / "ws"))
    done = run([n8nlock, "validate"], cwd=tmp / "ws")
    ok(done)
    assert "3 file(s) checked, 0 problem(s): all good" in done.stderr


def test_a_wheel_renders_the_primitives_outside_the_source_tree(
    wheel: Path, tmp_path: Path
) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "site")
    assert "n8n_lockkit/templates/js/primitive/error_handler_lock_cleanup/log_cleanup.js" in names
    assert "n8n_lockkit/templates/js/engine/lock/decide.js" in names
    assert "n8n_lockkit/templates/js/engine/rate/plan.js" in names
    assert "n8n_lockkit/templates/js/primitive/holder_check/holder.js" in names
    assert "n8n_lockkit/schemas/env.schema.json" in names
    # The tooling of the checkout (test bed, generators, benchmarks) and the tests stay out.
    assert {n.split("/")[0] for n in names} == {"n8n_lockkit", f"n8n_lockkit-{VERSION}.dist-info"}

    script = (
        "from n8n_lockkit.primitives.catalogue import PRIMITIVES\n"
        "from n8n_lockkit.primitives.render import render_primitive\n"
        "from n8n_lockkit.primitives.templating import templates_dir\n"
        "print(templates_dir())\n"
        "print(sum(len(render_primitive(p)['nodes']) for p in PRIMITIVES.values()))\n"
    )
    path_first = f"import sys; sys.path.insert(0, {str(tmp_path / 'site')!r})\n"
    where, count = ok(run([sys.executable, "-I", "-c", path_first + script], cwd=tmp_path)).split()
    assert Path(where).is_relative_to(tmp_path / "site")
    assert int(count) > 30


def test_pip_install_of_the_wheel_gives_a_working_n8nlock(wheel_venv: Path, tmp_path: Path) -> None:
    works_from_anywhere(wheel_venv / "n8nlock", tmp_path)
    metadata = "import importlib.metadata as m; print(m.version('n8n-lockkit'))"
    assert ok(run([wheel_venv / "python", "-c", metadata], cwd=tmp_path)) == f"{VERSION}\n"


def test_pipx_install_of_the_checkout_gives_a_working_n8nlock(tmp_path: Path) -> None:
    homes = {
        "PIPX_HOME": str(tmp_path / "pipx"),
        "PIPX_BIN_DIR": str(tmp_path / "bin"),
        "PIPX_MAN_DIR": str(tmp_path / "man"),
    }
    ok(run([sys.executable, "-m", "pipx", "install", ROOT], cwd=tmp_path, env=homes, timeout=600))
    works_from_anywhere(tmp_path / "bin" / "n8nlock", tmp_path)


SKILL = ROOT / "skills" / "n8nlock-validate-in-ci.md"
# Steps the test provides itself: the checkout is the sample repository, Python is the clean
# virtual environment, and the artifact is the file the step would upload.
PROVIDED = ("actions/checkout@", "actions/setup-python@", "actions/upload-artifact@")


def github_workflow() -> dict[str, Any]:
    blocks = re.findall(r"```yaml\n(.*?)```", SKILL.read_text(), re.S)
    workflows = [YAML(typ="safe").load(b) for b in blocks if b.startswith("name: ")]
    assert len(workflows) == 1, "the skill shows one GitHub Actions workflow"
    workflow: dict[str, Any] = workflows[0]
    return workflow


def run_the_job(wheel: Path, venv_bin: Path, repo: Path) -> list[tuple[str, int]]:
    """Each `run:` step of the job in bash, in order, with the workflow's env (N8NLOCK the
    wheel); (command, exit code) of each, stopping at the first failure unless always()."""
    workflow = github_workflow()
    (job,) = workflow["jobs"].values()
    env = {
        **workflow.get("env", {}),
        "N8NLOCK": str(wheel),
        "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}",
    }
    results: list[tuple[str, int]] = []
    failed = False
    for step in job["steps"]:
        if "uses" in step:
            assert step["uses"].startswith(PROVIDED), f"the test cannot run {step['uses']}"
            continue
        if failed and step.get("if") != "always()":
            continue
        done = run(["bash", "-e", "-c", step["run"]], cwd=repo, env=env)
        results.append((step["run"], done.returncode))
        failed = failed or done.returncode != 0
    return results


@pytest.fixture
def ci_repo(tmp_path: Path, wheel_venv: Path) -> Path:
    """A repository whose root is a workspace (made by `n8nlock init`) with one workflow."""
    ok(run([wheel_venv / "n8nlock", "init", "repo"], cwd=tmp_path))
    repo = tmp_path / "repo"
    shutil.copy(CORPUS / "order_update.template.json", repo / "workflows" / "orders.template.json")
    # The credential the workflow uses is recorded, as `redis-credential` does: else `validate
    # --env dev` fails where `push --env dev` would refuse.
    env = repo / "envs" / "dev.yml"
    env.write_text(env.read_text().replace('redis: {id: "", name: ""}', "redis: {id: c1, name: R}"))
    return repo


def test_the_github_actions_example_passes_a_good_workspace(
    wheel: Path, wheel_venv: Path, ci_repo: Path
) -> None:
    results = run_the_job(wheel, wheel_venv, ci_repo)
    assert [code for _, code in results] == [0] * len(results), results
    assert any("pip install" in command for command, _ in results)
    report = json.loads((ci_repo / "n8nlock-report.json").read_text())
    assert report["status"] == "ok" and report["files"] == ["workflows/orders.template.json"]


def test_the_github_actions_example_fails_a_broken_workflow_and_keeps_the_report(
    wheel: Path, wheel_venv: Path, ci_repo: Path
) -> None:
    (ci_repo / "workflows" / "broken.template.json").write_text('{"nodes": {}}')
    results = dict(run_the_job(wheel, wheel_venv, ci_repo))
    assert results["n8nlock validate"] == 1
    report = json.loads((ci_repo / "n8nlock-report.json").read_text())
    assert report["status"] == "fail"
    assert [f["rule"] for f in report["findings"]] == ["workflow-schema", "workflow-schema"]
