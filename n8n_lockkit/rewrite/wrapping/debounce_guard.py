"""A duplicate guard in front of a debounce (issue 34; `compose.py` layers it), and its
inverse.

    T → Dedupe Context → … (the engine's chain, `wrap.acquire_inline`) → Dedupe Restore
      → Debounce Context → … (the debounce, as `debounce_wrap.py` made it)

An event the guard lets in holds its key until its execution ends, and then writes the key's
done mark: every execution that gets past the guard ends in one of three places of the
debounce, and each of them leads to the guard's release (no Merge needed, one runs):

- a buffered event, after its answer: *Debounce Route*'s last output (the burst's waiter is
  alive) or *Debounce Took?* (false: another event took a stale burst over);
- a waiter or runner: *Debounce Again?* (false: after the body, or after another execution ran
  its burst, no next burst to wait for). Every waiter that cuts goes on as a runner of the cut,
  so this is the only end of a waiter.

So a duplicate of an event that is buffered, waits, or ran within the window is turned away
with the guard's skipped answer. A failed execution (its body, or the debounce's key check)
leaves the key to the cleanup handler, which frees it. The settings the guard changed (the
cleanup handler as the error workflow) are noted on Dedupe Release, for `unguard`.
"""

from __future__ import annotations

import copy
import json

from n8n_lockkit.primitives import engine, nodekit
from n8n_lockkit.primitives.chain import Names
from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.graphs.graph import Workflow
from n8n_lockkit.rewrite.wrapping import release_side
from n8n_lockkit.rewrite.wrapping.builder import Block, Builder, stack_above_notes, trigger_entries
from n8n_lockkit.rewrite.wrapping.configs import LockConfig
from n8n_lockkit.rewrite.wrapping.nodes import role_of
from n8n_lockkit.rewrite.wrapping.settings import GUARD, set_error_workflow, set_execution_order
from n8n_lockkit.rewrite.wrapping.wrap import acquire_inline

# Where an execution the guard let in ends (see the module's docstring).
ENDS = (
    ("Debounce Route", 2),
    ("Debounce Took?", 1),
    ("Debounce Again?", 1),
)
RELEASE_FRAME = "frame-dedupe-release"
RESTORE_FRAME = "frame-dedupe-restore"
RESTORE_NOTE = "n8nlock · Duplicate Guard: waits here"
RESTORE_TEXT = (
    "**n8nlock**: waits for the duplicate guard, then hands the debounce the trigger's items."
)
RELEASE_NOTE = "n8nlock · Duplicate Guard: release"
# What the guard changed in settings, noted on Dedupe Release.
SETTINGS_MARK = "; settings before the guard: "
RELEASE_ROLE = "dedupe-release"


def _release_text(key: str, guard: LockConfig) -> str:
    return "\n".join(
        [
            "## Duplicate guard release",
            "Runs where the execution ends: a buffered event's after the debounce answered "
            "it, the runner's after the body. The key stays used for "
            f"{guard.dedupe_window_seconds} s, so a duplicate of an event already buffered or "
            "run is turned away. A failed execution's key is freed by the cleanup handler.",
            f"**Remove** the guard: `n8nlock unwrap --workflow-key {key} --only dedupe`",
        ]
    )


def guard_debounce(
    workflow: Workflow, key: str, guard: LockConfig, *, own_cleanup: bool = False
) -> Workflow:
    """The debounced workflow with the duplicate guard in front of its debounce (a new dict)."""
    result = copy.deepcopy(workflow)
    graph.normalise(result)
    entry = trigger_entries(result)[0]
    settings = result.get("settings")
    had = isinstance(settings, dict) and "errorWorkflow" in settings
    previous = settings.get("errorWorkflow") if isinstance(settings, dict) else None
    set_execution_order(result)  # the debounce set v1 already
    set_error_workflow(result, GUARD, own_cleanup=own_cleanup)
    graph.shift_body(result, guard.shift)
    b = Builder(key, result, True, 0)
    stack_above_notes(b)
    main = result["connections"][entry.node]["main"]
    debounce_links = main[entry.output]
    main[entry.output] = []
    decision, restore = acquire_inline(b, (entry.node, entry.output), entry, guard)
    nodekit.outputs(result["connections"], restore, 0)[0] = debounce_links
    b.framed.append(Block(RESTORE_FRAME, RESTORE_NOTE, RESTORE_TEXT, [b.node(restore)]))
    x, y = b.position("Debounce Again?")
    names = Names(kind="Dedupe")
    group = engine.release(key, release_side.record([decision]), (x + engine.STEP, y), names)
    added = b.add_group(group)
    for source, output in ENDS:
        b.connect(source, output, group.entry)
    release = next(n for n in added if role_of(n) == RELEASE_ROLE)
    before = {"had_error_workflow": had, "error_workflow": previous}
    release["notes"] += SETTINGS_MARK + json.dumps(before, sort_keys=True)
    b.framed.append(Block(RELEASE_FRAME, RELEASE_NOTE, _release_text(key, guard), added))
    b.frames()
    return result


def is_guard_role(role: str | None) -> bool:
    """Whether a node with this role is the guard's (in front of a debounce)."""
    return role is not None and (
        role.startswith("dedupe-") or role in ("frame-dedupe", RELEASE_FRAME, RESTORE_FRAME)
    )


def unguard_debounce(workflow: Workflow, guard: LockConfig) -> Workflow:
    """The debounced workflow without the guard in front of it (a new dict)."""
    result = copy.deepcopy(workflow)
    graph.normalise(result)
    roles = {str(n["name"]): r for n in graph.nodes(result) if is_guard_role(r := role_of(n))}
    by_role = {r: name for name, r in roles.items()}
    restore = by_role["dedupe-restore"]
    debounce_links = [x for x in graph.outputs(result, restore)[0] if str(x["node"]) not in roles]
    release = next(n for n in graph.nodes(result) if role_of(n) == RELEASE_ROLE)
    before = json.loads(str(release["notes"]).split(SETTINGS_MARK, 1)[1])
    connections = result["connections"]
    for source in list(connections):
        if source in roles:
            del connections[source]
            continue
        for output, links in enumerate(graph.outputs(result, source)):
            kept = [x for x in links if str(x["node"]) not in roles]
            if any(str(x["node"]) == by_role["dedupe-context"] for x in links):
                kept = debounce_links
            connections[source]["main"][output] = kept
    result["nodes"] = [n for n in result["nodes"] if n.get("name") not in roles]
    graph.normalise(result)
    graph.shift_body(result, -guard.shift)
    settings = result["settings"]
    if before["had_error_workflow"]:
        settings["errorWorkflow"] = before["error_workflow"]
    else:
        settings.pop("errorWorkflow", None)
    return result
