"""What wrapping changes in a workflow's settings, and the note that lets unwrap give them back.

Lock Join releases once, after every branch, only under n8n's v1 execution order; --lock-on-error
names the cleanup handler as the error workflow. Both are noted on Lock Release (BEFORE_MARK)
with what was there before, so that unwrap restores the settings exactly.
"""

from __future__ import annotations

from n8n_lockkit.primitives.formats import role_of
from n8n_lockkit.rewrite.graphs.graph import Workflow
from n8n_lockkit.rewrite.wrapping.configs import WrapError

HANDLER_ID = "{{@:env:workflows.error_handler_lock_cleanup.id}}"
# What wrap changed in settings, noted on Lock Release so that unwrap can give back exactly
# what was there: push treats absent settings unlike {} (it adds executionOrder v1 then).
BEFORE_MARK = "; before n8nlock: "
BEFORE_NO_SETTINGS = "no settings"
BEFORE_NO_ORDER = "no executionOrder"
BEFORE_EMPTY_ERROR_WORKFLOW = 'errorWorkflow ""'
# What needs the cleanup handler as the error workflow (set_error_workflow's `needed_by`).
LOCK_ON_ERROR = "--lock-on-error"
GUARD = "the duplicate guard"


def set_execution_order(workflow: Workflow) -> list[str]:
    """Lock Join releases once, after every branch, under n8n's v1 execution order only. n8n's
    editor writes v1 into every workflow since 1.0, but an older export (or `settings: {}`)
    states none, and n8n then runs the legacy order: set v1 there, refuse an explicit v0."""
    settings = workflow.get("settings")
    before = [] if isinstance(settings, dict) else [BEFORE_NO_SETTINGS]
    settings = workflow.setdefault("settings", {})
    order = settings.get("executionOrder")
    if order == "v1":
        return before
    if order is not None:
        raise WrapError(
            f"the workflow runs in n8n's legacy execution order ({order!r}); the lock releases "
            "once after every branch only under v1",
            hint="set Settings → Execution Order to v1 in n8n (check that its branches still "
            'run as you mean), or "executionOrder": "v1" in the file, then run this again',
        )
    settings["executionOrder"] = "v1"
    return [*before, BEFORE_NO_ORDER]


OWN_ERROR_WORKFLOW_DOCS = "docs/safety.md#your-own-error-workflow"


def set_error_workflow(
    workflow: Workflow, needed_by: str, *, own_cleanup: bool = False
) -> list[str]:
    """Name the cleanup handler as the error workflow when something needs it: `needed_by`
    says what ("--lock-on-error", "the duplicate guard"; "" for nothing). An error workflow
    of the user's own that runs the cleanup (`own_cleanup`) is kept."""
    settings = workflow["settings"]
    current = settings.get("errorWorkflow")
    if not needed_by or own_cleanup:
        return []
    if current and current != HANDLER_ID:
        how = f"run the cleanup in your own error workflow ({OWN_ERROR_WORKFLOW_DOCS})"
        raise WrapError(
            f"the workflow already names error workflow {current!r}, and {needed_by} needs "
            "the cleanup handler there to free a failed execution's "
            f"{'key' if needed_by == GUARD else 'locks'}; n8n allows one error workflow",
            hint=f"drop --lock-on-error (the lock then heals by TTL), or {how}"
            if needed_by == LOCK_ON_ERROR
            else f"{how}, then run this again",
        )
    settings["errorWorkflow"] = HANDLER_ID
    return [BEFORE_EMPTY_ERROR_WORKFLOW] if current == "" else []


# The release's Redis node carries what settings held before wrap (the lock's, else the guard's).
RELEASE_ROLES = ("lock-release", "dedupe-release")


def note_before(workflow: Workflow, before: list[str]) -> None:
    if before:
        release = next(n for n in workflow["nodes"] if role_of(n) in RELEASE_ROLES)
        release["notes"] += BEFORE_MARK + ", ".join(before)
