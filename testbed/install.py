"""Installing Node 24 and n8n from the npm registry into the cache, once per version."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import cache
from .errors import SetupFailed
from .progress import Progress, Stopwatch
from .runtime import NODE_PACKAGE_VERSION, NodeRuntime, needs_node24, npm_executable, system_node

HEARTBEAT_SECONDS = 30.0
FOREIGN_INSTALL_TIMEOUT = 30 * 60.0
NPM_INSTALL_FLAGS = ("--no-audit", "--no-fund")


@dataclass(frozen=True)
class N8nInstall:
    version: str
    app_dir: Path
    runtime: NodeRuntime

    @property
    def n8n_bin(self) -> Path:
        return self.app_dir / "node_modules" / "n8n" / "bin" / "n8n"


def ensure_n8n(version: str, progress: Progress) -> N8nInstall:
    """A working n8n `version` in the cache, installing it first when needed (~5 min)."""
    runtime = ensure_node24(progress) if needs_node24(version) else system_node()
    app_dir = cache.n8n_app_dir(version)
    with cache.install_lock(app_dir, progress):
        _wait_for_foreign_npm(app_dir, progress)
        if not _n8n_ready(app_dir, version, runtime):
            _install_n8n(app_dir, version, runtime, progress)
    return N8nInstall(version=version, app_dir=app_dir, runtime=runtime)


def ensure_node24(progress: Progress) -> NodeRuntime:
    """Node 24 from the npm package node-linux-<arch> (binary + headers, no npm)."""
    folder = cache.node_dir(NODE_PACKAGE_VERSION)
    package_dir = folder / "node_modules" / _node_package_name()
    runtime = NodeRuntime(node=package_dir / "bin" / "node", nodedir=package_dir)
    with cache.install_lock(folder, progress):
        if not _node_works(runtime):
            _install_node(folder, runtime, progress)
        if cache.read_marker(folder) != NODE_PACKAGE_VERSION:
            cache.write_marker(folder, NODE_PACKAGE_VERSION)
    return runtime


def _install_node(folder: Path, runtime: NodeRuntime, progress: Progress) -> None:
    progress(f"installing Node {NODE_PACKAGE_VERSION} from npm into {folder}")
    cache.remove_marker(folder)
    shutil.rmtree(folder / "node_modules", ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    _write_json(folder / "package.json", {"name": "n8nlock-testbed-node", "private": True})
    package = f"{_node_package_name()}@{NODE_PACKAGE_VERSION}"
    npm = [npm_executable(), "install", "--save-exact", *NPM_INSTALL_FLAGS, package]
    _run_logged(npm, cwd=folder, env=None, log=folder / "install.log", progress=progress)
    if not _node_works(runtime):
        raise SetupFailed(f"{runtime.node} does not report v{NODE_PACKAGE_VERSION}")


def _node_package_name() -> str:
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}
    return f"node-linux-{arch.get(platform.machine().lower(), 'x64')}"


def _node_works(runtime: NodeRuntime) -> bool:
    if not runtime.node.is_file():
        return False
    result = subprocess.run([str(runtime.node), "-v"], capture_output=True, text=True, check=False)
    return result.stdout.strip() == f"v{NODE_PACKAGE_VERSION}"


def _n8n_ready(app_dir: Path, version: str, runtime: NodeRuntime) -> bool:
    """True when the cached install is complete; adopts a finished install that lacks a marker.

    An install counts as finished without our marker only if its log ends with DONE: that is
    how the hand-run install script of the notes reports success.
    """
    marked = cache.read_marker(app_dir) == version
    if not (marked or _log_says_done(app_dir)) or not _n8n_smoke_ok(app_dir, runtime):
        return False
    if not marked:
        cache.write_marker(app_dir, version)
    return True


def _log_says_done(app_dir: Path) -> bool:
    try:
        lines = (app_dir / "install.log").read_text(errors="replace").split()
    except OSError:
        return False
    return bool(lines) and lines[-1] == "DONE"


def _n8n_smoke_ok(app_dir: Path, runtime: NodeRuntime) -> bool:
    if not (app_dir / "node_modules" / "n8n" / "bin" / "n8n").is_file():
        return False
    # sqlite3 is the one native module we build; loading it proves the build matches this Node.
    probe = [str(runtime.node), "-e", "require('sqlite3')"]
    result = subprocess.run(probe, cwd=app_dir, capture_output=True, env=runtime.env(), check=False)
    return result.returncode == 0


def _install_n8n(app_dir: Path, version: str, runtime: NodeRuntime, progress: Progress) -> None:
    watch = Stopwatch()
    log = app_dir / "install.log"
    progress(f"installing n8n {version} into {app_dir} (takes ~5 min; log: {log})")
    cache.remove_marker(app_dir)
    shutil.rmtree(app_dir / "node_modules", ignore_errors=True)
    app_dir.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    _write_json(app_dir / "package.json", _n8n_package_json(version))
    npm = npm_executable()
    env = runtime.env()
    # --ignore-scripts: of the 16 install scripts only sqlite3's is needed, and it is rebuilt
    # from source below because its prebuilt download would go to GitHub.
    install = [npm, "install", "--ignore-scripts", *NPM_INSTALL_FLAGS]
    _run_logged(install, cwd=app_dir, env=env, log=log, progress=progress)
    rebuild = [npm, "rebuild", "sqlite3", "--build-from-source"]
    _run_logged(rebuild, cwd=app_dir, env=env, log=log, progress=progress)
    if not _n8n_smoke_ok(app_dir, runtime):
        raise SetupFailed(f"n8n {version} installed but sqlite3 does not load; see {log}")
    cache.write_marker(app_dir, version)
    progress(f"n8n {version} installed in {watch}")


def _n8n_package_json(version: str) -> dict[str, object]:
    return {
        "name": "n8nlock-testbed-n8n",
        "private": True,
        "dependencies": {"n8n": version},
        # n8n-nodes-base pins xlsx to a tarball URL outside the registry.
        "overrides": {"xlsx": "0.18.5"},
    }


def _write_json(path: Path, data: dict[str, object]) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n")


def _run_logged(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str] | None,
    log: Path,
    progress: Progress,
) -> None:
    """Run a slow command with output in `log`, printing a heartbeat so CI does not look hung."""
    label = " ".join(Path(argv[0]).name if i == 0 else a for i, a in enumerate(argv))
    progress(f"running: {label}")
    watch = Stopwatch()
    with log.open("ab") as out:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            while proc.poll() is None:
                try:
                    proc.wait(timeout=HEARTBEAT_SECONDS)
                except subprocess.TimeoutExpired:
                    progress(f"still running after {watch}: {label}")
        except BaseException:
            proc.kill()  # interrupted (Ctrl-C, CI cancel): leave no npm writing into the cache
            raise
    if proc.returncode != 0:
        raise SetupFailed(f"`{label}` failed with exit code {proc.returncode}:\n{_tail(log)}")
    progress(f"done in {watch}: {label}")


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _wait_for_foreign_npm(app_dir: Path, progress: Progress) -> None:
    """Wait while an npm not started by us (so not under our lock) works in `app_dir`.

    It must finish before we judge the install, else we would delete a half-built tree.
    """
    if not _npm_pids_in(app_dir):
        return
    watch = Stopwatch()
    last_report = -HEARTBEAT_SECONDS
    quiet_checks = 0
    while quiet_checks < 5:  # npm install and npm rebuild run back to back: bridge the gap
        if not _npm_pids_in(app_dir):
            quiet_checks += 1
        else:
            quiet_checks = 0
            if watch.elapsed > FOREIGN_INSTALL_TIMEOUT:
                raise SetupFailed(f"an npm process in {app_dir} did not finish in 30 min")
            if watch.elapsed - last_report >= HEARTBEAT_SECONDS:
                last_report = watch.elapsed
                progress(f"waiting for an npm started elsewhere in {app_dir} ({watch})")
        time.sleep(1.0)


def _npm_pids_in(directory: Path) -> list[int]:
    """Processes whose command line is npm and whose working directory is `directory`."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cwd = (proc / "cwd").resolve(strict=True)
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cwd == directory.resolve() and _is_npm(argv):
            pids.append(int(proc.name))
    return pids


def _is_npm(argv: list[bytes]) -> bool:
    # npm renames its process to "npm install"; older npm shows node .../npm-cli.js
    words = b" ".join(argv).split()
    return any(Path(w.decode(errors="replace")).name in ("npm", "npm-cli.js") for w in words)
