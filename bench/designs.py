"""The two lock designs the benchmark compares, each in its own workspace on the same n8n.

- seed: `main` before engine v2 (commit SEED_REF): the sub-workflow primitives that poll every
  second, installed and wrapped by that commit's own CLI in a subprocess.
- v2: this checkout's engine. Until `add-lock-to-workflow` writes the inline form, the
  workflow is built from `engine.acquire`/`engine.release` here (`--v2-build engine`);
  `--v2-build cli` wraps it with this checkout's CLI instead.

Both workspaces push to one n8n and one Redis. Workflow names, webhook paths and scopes differ
(the seed's primitives are renamed "seed …"), so neither design sees the other's keys.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.harness.workspace import (
    Target,
    bench_workflow,
    checkout,
    cli,
    prepare,
    push,
    tree_cli,
    wrap_args,
    write_template,
)
from n8n_lockkit.primitives import engine, nodekit
from n8n_lockkit.primitives.chain import Chain, Names
from testbed.endpoints import N8nInstance

SEED_REF = "5ecf9dc"  # main before engine v2: 1 s poll, sub-workflow calls
PLAIN, SEED, V2 = "bench_plain", "bench_seed", "bench_v2"


def seed_design(n8n: N8nInstance, tmp: Path, ref: str = SEED_REF) -> Target:
    """The primitives of git ref `ref` (default: the seed; renamed "seed …") and its wrap of
    the bench workflow, made by that ref's own n8nlock."""
    run = tree_cli(checkout(ref, tmp / "seed-tree"))
    root = tmp / "seed"
    prepare(root, n8n, run)
    write_template(root, bench_workflow(SEED))
    run(root, "create-lock", "--force-overwrite", "--poll-interval-seconds", "1")
    # push names a workflow as the env records it: "seed n8nlock: Lock Acquisition", …
    env = root / "envs" / "bench.yml"
    env.write_text(env.read_text().replace("name: 'n8nlock: ", "name: 'seed n8nlock: "))
    run(root, *wrap_args(SEED))
    push(root, run)
    return Target("seed", SEED, root)


def v2_engine_workflow(key: str) -> dict[str, Any]:
    """The bench workflow with the engine's acquire and release inline, as the inline form of
    `add-lock-to-workflow` lays them out: a Merge restores the trigger's items for the body."""
    workflow = bench_workflow(key)
    hook, hold, work = workflow["nodes"]
    for index, body_node in enumerate((hold, work)):
        body_node["position"] = [3600 + 220 * index, 0]
    inputs = engine.LockInputs(
        scope="={{ $json.body.scope }}", ttl_seconds=60, max_wait_seconds=600
    )
    acquire = engine.acquire(key, inputs, (220, 0))
    decision = f"$({json.dumps(Names()('Lock Decide'))}).first().json"
    release = engine.release(key, decision, (4200, 0))
    restore = nodekit.node(
        key, "lock-restore", "Lock Restore", "n8n-nodes-base.merge", 3, [3400, -200],
        {"mode": "chooseBranch", "chooseBranchMode": "waitForAll", "output": "specifiedInput",
         "useDataOfInput": 1, "numberInputs": 2},
    )  # fmt: skip
    output = nodekit.node(
        key, "lock-output", "Lock Output", "n8n-nodes-base.set", 3.4, [5200, 0],
        {"mode": "raw", "jsonOutput": "={{ $('Work').first().json }}",
         "includeOtherFields": False, "options": {}},
        executeOnce=True,
    )  # fmt: skip
    nodes = [hook, *acquire.nodes, restore, hold, work, *release.nodes, output]
    group = Chain(key, nodes=nodes, connections={**acquire.connections, **release.connections})
    group.link(
        [
            ("Webhook", 0, acquire.entry),
            ("Webhook", 0, "Lock Restore", 0),
            *((source, output, "Lock Restore", 1) for source, output in acquire.exits["held"]),
            ("Lock Restore", 0, "Hold"),
            ("Hold", 0, "Work"),
            ("Work", 0, release.entry),
            *((source, output, "Lock Output") for source, output in release.exits["done"]),
        ]
    )
    return {**workflow, "nodes": nodes, "connections": group.connections}


def v2_design(n8n: N8nInstance, tmp: Path, build: str) -> Target:
    """This checkout's lock on the bench workflow, beside the plain (unlocked) copy.

    build "engine": the engine's nodes inline, laid out here; "cli": `add-lock-to-workflow`.
    """
    root = tmp / "v2"
    prepare(root, n8n, cli)
    write_template(root, bench_workflow(PLAIN))
    if build == "engine":
        write_template(root, v2_engine_workflow(V2))
    else:
        write_template(root, bench_workflow(V2))
        cli(root, "create-lock", "--force-overwrite")
        cli(root, *wrap_args(V2))
    push(root)
    return Target("v2", V2, root)
