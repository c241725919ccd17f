"""The nodes n8nlock adds to a workflow: how they look, and how they are recognised.

Every added node carries the note `n8nlock:<role>`; that is how a later run finds them.
"""

from __future__ import annotations

from typing import Any

from n8n_lockkit.primitives import nodekit
from n8n_lockkit.primitives.formats import MARK, role_of
from n8n_lockkit.primitives.nodekit import if_parameters, js_literal

__all__ = ["MARK", "if_parameters", "js_literal", "role_of"]


owned = nodekit.node  # every node n8nlock adds is made the same way


def call(primitive: str, values: dict[str, Any]) -> dict[str, Any]:
    return {
        "source": "database",
        "workflowId": {
            "__rl": True,
            "mode": "id",
            "value": f"{{{{@:env:workflows.{primitive}.id}}}}",
        },
        "workflowInputs": {
            "mappingMode": "defineBelow",
            "value": values,
            "matchingColumns": [],
            "schema": [],
        },
        "mode": "once",
        "options": {"waitForSubWorkflow": True},
    }


def code(source: str) -> dict[str, Any]:
    return {"mode": "runOnceForAllItems", "language": "javaScript", "jsCode": source}


def restore_items(trigger: str, output: int = 0) -> dict[str, Any]:
    # `.all(n)` reads the items of the trigger's output n (a webhook answers each HTTP
    # method on its own output).
    items = f"all({output})" if output else "all()"
    return code(
        f"// n8nlock: hand the body the trigger's items again\n"
        f"return $({js_literal(trigger)}).{items};"
    )


def acquired(acquires: list[str], field: str) -> str:
    if len(acquires) == 1:
        return f"={{{{ $({js_literal(acquires[0])}).first().json.{field} }}}}"
    names = js_literal(acquires)
    return f"={{{{ {names}.map((n) => $(n)).find((n) => n.isExecuted).first().json.{field} }}}}"


def output_code(terminals: list[tuple[str, int]]) -> dict[str, Any]:
    # n8n answers a "last node" webhook with the first output of the node that ran last;
    # of the body's end nodes, the one that ran last is the last of them that ran at all.
    names = js_literal(list(dict.fromkeys(name for name, _ in terminals)))
    return code(
        "// n8nlock: answer as the body's last node would (for 'last node' webhooks)\n"
        f"const ends = {names};\n"
        "for (const name of ends.reverse()) {\n"
        "  if ($(name).isExecuted) return $(name).all(0);\n"
        "}\n"
        "return [];"
    )
