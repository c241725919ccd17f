"""Answer a "last node" webhook with a Respond to Webhook node of ours, and give it back.

A wrap that parks its waiters (a Wait "On Webhook Call") cannot keep a `lastNode` webhook: n8n
answers such a caller at once, with the Wait's items, when its execution parks. A
`responseNode` caller is answered by the Respond to Webhook node that runs, after the park. So
`respond_by_node` turns the webhook into `responseNode` and adds Lock Respond where every path
of the (wrapped) workflow ends, made to answer what n8n answers for `lastNode`
(`webhooks/webhook-helpers.ts`, `webhook-last-node-response-extractor.ts`):

- status: the webhook's response code (a top-level `responseCode`, else
  `options.responseCode`, else 200);
- headers: `options.responseHeaders`, and `options.responseContentType` as content-type for
  "first entry JSON";
- body, by `responseData`: "firstEntryJson" (the default) the first item's JSON of the last
  node's first output; "allEntries" the JSON of all its items, as a list; "noData" none.

What has no exact equivalent is refused: "firstEntryBinary", `responsePropertyName`, and
expressions in these options (the webhook evaluates them at the request, Lock Respond at the
end). The webhook's parameters as they were are noted on Lock Respond, so that `restore`
(`unwrap`) gives them back byte for byte.

Not the same at run time (measured, tests/e2e/test_respond_by_node.py): "first entry" of a
last node with no items (Lock Respond does not run; n8n answers an empty 200), and on n8n 1.x a
failed execution (n8n 1.x answers a responseNode call with an empty 200 when its execution
ends, failed or not). "All entries" and "no data" of no items are the same: see
`_answer_no_items`.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from n8n_lockkit.primitives import nodekit
from n8n_lockkit.rewrite.canvas import placement
from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.graphs.graph import Node, Workflow
from n8n_lockkit.rewrite.wrapping.builder import STEP
from n8n_lockkit.rewrite.wrapping.configs import WrapError
from n8n_lockkit.rewrite.wrapping.nodes import js_literal, owned, role_of

ROLE = "lock-respond"
NAME = "Lock Respond"
FRAME_ROLE = "frame-respond"
FRAME_NAME = "n8nlock · Lock Respond"
FRAME_TEXT = (
    "## Lock Respond\nAnswers the webhook as 'last node' did, after the lock's release. "
    "**Remove**: `n8nlock unwrap`."
)
WEBHOOK = "n8n-nodes-base.webhook"
RESPOND = "n8n-nodes-base.respondToWebhook"
STOP = "n8n-nodes-base.stopAndError"  # fails the execution: both modes answer 500 then
BEFORE_MARK = "\nwebhook before n8nlock: "
RESPOND_WITH = {
    "firstEntryJson": "firstIncomingItem",
    "allEntries": "allIncomingItems",
    "noData": "noData",
}
# The webhook options that only `lastNode` (and `onReceived`) read; Lock Respond answers them.
ANSWER_OPTIONS = (
    "responseCode",
    "responseHeaders",
    "responseContentType",
    "responsePropertyName",
    "responseBinaryPropertyName",
)
# What a refusal offers instead of the rewrite, by why the rewrite was asked for.
KEEP_AWAKE = "keep the workflow's waiters awake (do not park it)"
KEEP_SKIP = "keep --on-duplicate skip (a duplicate is then answered `skipped`, not replayed)"
OUTPUT_ROLE = "lock-output"
MERGE = "n8n-nodes-base.merge"
CODE_ENDS = "const ends = "  # the line of Lock Output's Code node that lists the ends


def _refuse(trigger: str, what: str, hint: str = "", fallback: str = KEEP_AWAKE) -> WrapError:
    return WrapError(
        f"webhook {trigger!r}: {what}, which a Respond to Webhook node cannot answer exactly as "
        "'last node' does",
        hint=hint
        or f"answer with a Respond to Webhook node of your own (Respond: 'Using Respond to "
        f"Webhook Node'), or {fallback}",
    )


def _is_expression(value: object) -> bool:
    return isinstance(value, str) and value.startswith("=")


def _status(trigger: str, parameters: dict[str, Any], fallback: str) -> object:
    """The response code n8n's Webhook node gives (its `getResponseCode`)."""
    options = graph.as_dict(parameters.get("options"))
    code: object = parameters.get("responseCode") or options.get("responseCode") or 200
    if isinstance(code, dict):  # v2: {"values": {"responseCode": 200 | "customCode", …}}
        values = graph.as_dict(code.get("values"))
        code = values.get("responseCode", 200)
        # n8n drops customCode unless "Custom Code" is chosen (its displayOptions)
        if code == "customCode":
            code = values.get("customCode")
    if _is_expression(code) or not isinstance(code, int) or isinstance(code, bool):
        raise _refuse(trigger, f"its response code is {code!r}", "", fallback)
    return code


def _headers(
    trigger: str, options: dict[str, Any], data: str, fallback: str
) -> list[dict[str, Any]]:
    entries = [
        dict(e) for e in graph.as_list(graph.as_dict(options.get("responseHeaders")).get("entries"))
    ]
    content_type = options.get("responseContentType")
    if content_type and data == "firstEntryJson":  # n8n sets it over a header of that name
        entries.append({"name": "content-type", "value": content_type})
    for entry in entries:
        if _is_expression(entry.get("name")) or _is_expression(entry.get("value")):
            raise _refuse(
                trigger, f"its response header {entry.get('name')!r} is an expression", "", fallback
            )
    return entries


def answer(trigger: str, parameters: dict[str, Any], fallback: str = KEEP_AWAKE) -> dict[str, Any]:
    """The Respond to Webhook parameters that answer what the `lastNode` webhook answers
    (`fallback`: what a refusal's hint offers instead)."""
    data = parameters.get("responseData", "firstEntryJson")
    options = graph.as_dict(parameters.get("options"))
    if data == "firstEntryBinary":
        raise _refuse(
            trigger, "it answers with binary data (responseData firstEntryBinary)", "", fallback
        )
    if data not in RESPOND_WITH:
        raise _refuse(trigger, f"its response data is {data!r}", "", fallback)
    if options.get("responsePropertyName") and data == "firstEntryJson":
        raise _refuse(
            trigger, "it answers with one property of the item (responsePropertyName)", "", fallback
        )
    answered: dict[str, Any] = {}
    status = _status(trigger, parameters, fallback)
    if status != 200:
        answered["responseCode"] = status
    headers = _headers(trigger, options, str(data), fallback)
    if headers:
        answered["responseHeaders"] = {"entries": headers}
    return {"respondWith": RESPOND_WITH[str(data)], "options": answered}


def _responding(parameters: dict[str, Any]) -> dict[str, Any]:
    """The webhook's parameters as `responseNode`: its answer options go to Lock Respond."""
    result = {
        k: copy.deepcopy(v)
        for k, v in parameters.items()
        if k not in ("responseData", "responseCode")
    }
    result["responseMode"] = "responseNode"
    if isinstance(result.get("options"), dict):
        result["options"] = {k: v for k, v in result["options"].items() if k not in ANSWER_OPTIONS}
    return result


def _ends(workflow: Workflow, trigger: str, fallback: str) -> list[str]:
    """The nodes where the trigger's paths end (but fail): 'last node' answers with their
    first output's items, so Lock Respond hangs off that output of each."""
    by_name = {n["name"]: n for n in graph.nodes(workflow)}
    ends: list[str] = []
    for name, output in graph.terminal_outputs(workflow, [trigger]):
        if by_name[name].get("type") == STOP or (name == NAME and role_of(by_name[name]) == ROLE):
            continue
        if by_name[name].get("type") == RESPOND and role_of(by_name[name]):
            continue  # n8nlock's own answer (a replaying guard's duplicates): answered there
        if output != 0:
            raise _refuse(
                trigger,
                f"a path can end at output {output + 1} of {name!r} (last node answers with the "
                "first output's items)",
                hint=f"connect that output of {name!r} to a node, or {fallback}",
            )
        ends.append(name)
    if not ends:
        raise _refuse(trigger, "no path of it ends without failing", hint=fallback)
    # n8nlock's own ends (Lock Output, Lock Skipped, Rate Limit Denied) never run in one
    # execution together; two of the user's can, and 'last node' answers the one that ran last.
    users = list(dict.fromkeys(e for e in ends if not role_of(by_name[e])))
    if len(users) > 1:
        raise _refuse(
            trigger,
            f"its paths end at several nodes ({', '.join(map(repr, users))}) and it answers "
            "with the one that ends last",
            hint=f"wrap it with a lock (Lock Output joins the ends), or {fallback}",
        )
    return list(dict.fromkeys(ends))


def _into(workflow: Workflow, target: str) -> list[tuple[str, int, int]]:
    """The links into `target`: (source, its output, target's input)."""
    return [
        (str(source), index, int(link.get("index", 0)))
        for source in graph.connections(workflow)
        for index, links in enumerate(graph.outputs(workflow, source))
        for link in links
        if link.get("node") == target
    ]


def _read_by_output(workflow: Workflow, output: Node) -> list[tuple[str, int]]:
    """The (node, output) pairs whose items Lock Output hands on: a Merge's input 1, or the
    ends its Code node picks the last of (their first outputs)."""
    if output.get("type") == MERGE:
        return [(s, o) for s, o, i in _into(workflow, output["name"]) if i == 0]
    code = str(graph.as_dict(output.get("parameters")).get("jsCode"))
    line = next(x for x in code.splitlines() if x.startswith(CODE_ENDS))
    return [(str(name), 0) for name in json.loads(line.removeprefix(CODE_ENDS).rstrip(";"))]


def _released_by(workflow: Workflow, output: Node) -> list[tuple[str, int]]:
    """What leads into Lock Output once the release has run (its other inputs)."""
    read = _read_by_output(workflow, output)
    return list(
        dict.fromkeys((s, o) for s, o, _ in _into(workflow, output["name"]) if (s, o) not in read)
    )


def _answer_no_items(workflow: Workflow, ends: list[str], respond: Node) -> list[tuple[str, int]]:
    """Where the answer is "all entries" or "no data", Lock Respond answers a body that ends
    with no items too (n8n runs no node on an empty input, and runs Lock Output then only at
    the end of the execution, without its targets): it follows the release, as Lock Output
    does, and reads the items where Lock Output reads them, the last of the ends that ran.

    Returns the outputs that lead into Lock Respond."""
    by_name = {n["name"]: n for n in graph.nodes(workflow)}
    feeds: list[tuple[str, int]] = []
    read: list[tuple[str, int]] = []
    for end in ends:
        if role_of(by_name[end]) == OUTPUT_ROLE:
            feeds += _released_by(workflow, by_name[end])
            read += _read_by_output(workflow, by_name[end])
        else:
            feeds.append((end, 0))
            read.append((end, 0))
    if respond["parameters"]["respondWith"] == "allIncomingItems":
        # `{` and `}` escaped: a node name with "}}" must not end the expression
        pairs = js_literal([list(p) for p in read]).replace("{", "\\u007b")
        pairs = pairs.replace("}", "\\u007d")
        items = (
            f"(() => {{ for (const [n, k] of {pairs}.reverse()) "
            "{ if ($(n).isExecuted) return $(n).all(k); } return []; })()"
        )
        respond["parameters"] = {
            "respondWith": "json",
            "responseBody": f"={{{{ {items}.map((i) => i.json) }}}}",
            "options": respond["parameters"]["options"],
        }
    return list(dict.fromkeys(feeds))


def _check_shared(workflow: Workflow, trigger: str, ends: list[str], fallback: str) -> None:
    """Refuse when another webhook that does not answer by node reaches Lock Respond: n8n
    refuses such a webhook's calls ("Unused Respond to Webhook node found in the workflow")."""
    for other in graph.triggers(workflow):
        mode = graph.as_dict(other.get("parameters")).get("responseMode")
        if other["name"] == trigger or other.get("type") != WEBHOOK or mode == "responseNode":
            continue
        if set(graph.reachable(workflow, [other["name"]])) & set(ends):
            raise _refuse(
                trigger,
                f"webhook {other['name']!r} ({mode or 'onReceived'}) leads to the same end, "
                "and n8n refuses a webhook that does not answer by node when a Respond to "
                "Webhook node follows it",
                hint=f"give each webhook a workflow of its own, or {fallback}",
            )


def _webhook(workflow: Workflow, trigger: str) -> Node:
    node = next((n for n in graph.nodes(workflow) if n["name"] == trigger), None)
    if node is None or node.get("type") != WEBHOOK:
        raise WrapError(
            f"{trigger!r} is not a Webhook node of the workflow",
            hint="name the workflow's Webhook trigger",
        )
    return node


def last_node_webhooks(workflow: Workflow, triggers: list[str]) -> list[str]:
    """Of `triggers`, the Webhook nodes that answer with their last node, once each."""
    return [
        str(n["name"])
        for n in graph.nodes(workflow)
        if n["name"] in triggers
        and n.get("type") == WEBHOOK
        and graph.as_dict(n.get("parameters")).get("responseMode") == "lastNode"
    ]


def respond_by_node(
    workflow: Workflow, trigger: str, key: str, fallback: str = KEEP_AWAKE
) -> Workflow:
    """The workflow (a new dict) with webhook `trigger` answered by Lock Respond instead of
    'last node'. A webhook that does not answer with its last node is left as it is, and so
    is one already answered by Lock Respond (running it twice changes nothing). `fallback` is
    what a refusal offers instead of the rewrite (KEEP_AWAKE for parking, KEEP_SKIP for
    replay)."""
    result = copy.deepcopy(workflow)
    graph.normalise(result)
    webhook = _webhook(result, trigger)
    parameters = graph.as_dict(webhook.get("parameters"))
    if parameters.get("responseMode") != "lastNode":
        return result
    respond_with = answer(trigger, parameters, fallback)
    ends = _ends(result, trigger, fallback)
    _check_shared(result, trigger, ends, fallback)
    x = max(int(n["position"][0]) for n in graph.nodes(result) if n["name"] in ends) + STEP
    y = int(next(n for n in graph.nodes(result) if n["name"] == ends[0])["position"][1])
    node = owned(key, ROLE, NAME, RESPOND, 1.1, placement.free_spot(result, [x, y]), respond_with)
    node["notes"] += BEFORE_MARK + json.dumps({"node": trigger, "parameters": parameters})
    taken = [n["name"] for n in graph.nodes(result) if n["name"] in (NAME, FRAME_NAME)]
    if taken:
        raise WrapError(
            f"the workflow already has a node named {taken[0]!r}",
            hint="rename that node; n8nlock reserves the name",
        )
    feeds = [(end, 0) for end in ends]
    if respond_with["respondWith"] in ("allIncomingItems", "noData"):
        feeds = _answer_no_items(result, ends, node)
    result["nodes"].append(node)
    frame = placement.note(key, FRAME_ROLE, FRAME_NAME, FRAME_TEXT, placement.extent([node]))
    result["nodes"].append(frame)
    for source, output in feeds:
        nodekit.connect(result["connections"], source, output, NAME)
    webhook["parameters"] = _responding(parameters)
    return result


def restore(workflow: Workflow) -> None:
    """Give the webhooks Lock Respond answers their parameters back (in place; unwrap takes
    the node itself off with the rest of n8nlock's nodes)."""
    for node in graph.nodes(workflow):
        notes = str(node.get("notes", ""))
        if role_of(node) != ROLE or BEFORE_MARK not in notes:
            continue
        before = json.loads(notes.split(BEFORE_MARK, 1)[1])
        webhook = next(n for n in graph.nodes(workflow) if n["name"] == before["node"])
        webhook["parameters"] = before["parameters"]
