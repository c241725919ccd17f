"""The wheel carries the templates: an installed n8nlock renders from anywhere."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).parent.parent.parent


def test_a_wheel_renders_the_primitives_outside_the_source_tree(tmp_path: Path) -> None:
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(tmp_path / "dist"),
        ],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = (tmp_path / "dist").glob("n8n_lockkit-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "site")
    assert "n8n_lockkit/templates/error_handler_lock_cleanup.json.j2" in names
    assert "n8n_lockkit/templates/js/engine/decide.js" in names
    assert "n8n_lockkit/templates/js/lock_release/holder.js" in names
    assert "n8n_lockkit/schemas/env.schema.json" in names

    script = (
        "from n8n_lockkit.primitives.catalogue import PRIMITIVES\n"
        "from n8n_lockkit.primitives.render import render_primitive, templates_dir\n"
        "print(templates_dir())\n"
        "print(sum(len(render_primitive(p)['nodes']) for p in PRIMITIVES.values()))\n"
    )
    run = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(tmp_path / 'site')!r})\n{script}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    where, count = run.stdout.split()
    assert Path(where).is_relative_to(tmp_path / "site")
    assert int(count) > 30
