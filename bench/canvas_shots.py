"""Screenshots of a wrapped workflow in n8n's editor, before and after, with a small table.

    .venv/bin/python -m bench.canvas_shots --out docs/images [--version 2.41.1]

One test bed (n8n and Redis, as the e2e tests get them). The 5-node webhook workflow (Webhook →
Prepare → Big Order? → Flag / Pass, tests/e2e/canvas_workflows.py) is pushed four times: plain,
with add-lock-to-workflow, with the lock and add-rate-limit, and with the lock
--via-subworkflow. Each is opened in Chromium (1600 × 1000, zoom to fit, testbed/
editor.py). Writes `canvas-<form>.png` and `canvas.md` (the table, also printed) into --out.
Not a test.
"""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness.executions import workflow_ids
from bench.harness.results import progress_for
from bench.harness.session import running_bed
from bench.harness.workspace import cli, prepare, push, write_template
from n8n_lockkit.rewrite.canvas.geometry import bounding_box, generated_names
from testbed.client import N8nClient
from testbed.editor import VIEWPORT, Editor
from testbed.endpoints import N8nInstance
from testbed.session import DEFAULT_VERSION
from tests.e2e.canvas_workflows import webhook_five

LOCK = ("add-lock-to-workflow", "--scope-expression", "canvas-shots", "--ttl-seconds", "120")
RATE = ("add-rate-limit", "--scope-expression", "canvas-shots-rl", "--limit", "10",
        "--window-seconds", "60")  # fmt: skip
FORMS: dict[str, tuple[tuple[str, ...], ...]] = {
    "plain": (),
    "lock": (LOCK,),
    "lock-rate-limit": (LOCK, RATE),
    "via-subworkflow": ((*LOCK, "--via-subworkflow"),),
}
LABELS = {
    "plain": "plain",
    "lock": "inline lock (default)",
    "lock-rate-limit": "inline lock + rate limit",
    "via-subworkflow": "`--via-subworkflow`",
}


@dataclass(frozen=True)
class Shot:
    form: str
    nodes: int
    generated: int
    width: float
    height: float
    zoom: float | None
    image: Path


progress = progress_for("canvas_shots")


def push_forms(n8n: N8nInstance, root: Path) -> dict[str, str]:
    """Form → workflow id, every form of the workflow pushed (not published)."""
    prepare(root, n8n)
    cli(root, "create-lock")  # the primitives --via-subworkflow calls
    token = uuid.uuid4().hex[:6]
    keys = {}
    for form, commands in FORMS.items():
        key = f"canvas_{form.replace('-', '_')}_{token}"
        write_template(root, webhook_five(key, f"canvas-{form}-{token}"))
        for command, *options in commands:
            cli(root, command, "--workflow-key", key, *options)
        keys[form] = key
    cli(root, "validate", "--env", "bench")
    push(root, activate=False)
    ids = workflow_ids(root)
    return {form: ids[key] for form, key in keys.items()}


def shoot(n8n: N8nInstance, ids: dict[str, str], out: Path) -> list[Shot]:
    client = N8nClient(n8n)
    shots = []
    try:
        with Editor(n8n.base_url, progress=progress) as editor:
            for form, workflow_id in ids.items():
                workflow: dict[str, Any] = client.api("GET", f"/workflows/{workflow_id}")
                view = editor.open(workflow_id, out / f"canvas-{form}.png")
                box = bounding_box(workflow)
                generated = len(generated_names(workflow))
                shot = Shot(
                    form, len(workflow["nodes"]), generated, box.width, box.height,
                    view.zoom, view.screenshot,
                )  # fmt: skip
                progress(f"{form}: {shot.nodes} nodes, zoom {shot.zoom}, {shot.image}")
                shots.append(shot)
    finally:
        client.close()
    return shots


def table(shots: Sequence[Shot], version: str) -> list[str]:
    width, height = VIEWPORT
    lines = [
        f"# The 5-node webhook workflow in n8n {version}'s editor (bench/canvas_shots.py)",
        "",
        f"| form | nodes (generated) | bounding box (px) | zoom-to-fit in a {width}×{height} "
        "window | screenshot |",
        "|---|---|---|---|---|",
    ]
    for s in shots:
        zoom = f"{s.zoom:.2f}" if s.zoom is not None else "?"
        lines.append(
            f"| {LABELS[s.form]} | {s.nodes} ({s.generated}) | {s.width:,.0f} × {s.height:,.0f} "
            f"| {zoom} | ![{s.form}]({s.image.name}) |"
        )
    lines += [
        "",
        "Bounding box: every node as a 100 × 100 box at its position (32 px taller per input or "
        "output beyond two), and every sticky note, from the workflow JSON. Zoom: the editor's "
        "scale after key 1 (zoom to fit).",
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the PNGs and canvas.md")
    parser.add_argument("--version", default=DEFAULT_VERSION, help="n8n version of the test bed")
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    with running_bed(args.version) as bed:
        ids = push_forms(bed.n8n, bed.tmp / "ws")
        shots = shoot(bed.n8n, ids, out)
    lines = table(shots, args.version)
    (out / "canvas.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
