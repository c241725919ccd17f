"""Validation rules for workflow files. Each rule is one small function with an id.

A rule receives a `WorkflowContext` and yields `Problem`s; `validate.py` turns them into
located findings with the rule's severity. The structure schema is one rule among the others,
so a rule may see any JSON: every rule reads the workflow through the tolerant accessors below
(`ctx.nodes()`, `ctx.targets()`, `name_of`, `parameters_of`, `as_dict`, `as_list`) and skips
what is not shaped as n8n stores it, leaving the report of the shape to `workflow-schema`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from n8n_lockkit.check.findings import Severity
from n8n_lockkit.primitives.catalogue import PRIMITIVES

# Re-exported: the rules read every shape helper from here.
from n8n_lockkit.rewrite.graphs.graph import STICKY_NOTE as STICKY_NOTE
from n8n_lockkit.rewrite.graphs.graph import as_dict as as_dict
from n8n_lockkit.rewrite.graphs.graph import as_list as as_list

MARKER = "// @n8n-evol-I:primitive"

# The public API's create/update schema (spec/schemas/workflow.yml): writable keys, and the
# read-only ones that `n8nlock push` strips before sending. Anything else gets a 400.
WRITABLE_TOP_LEVEL = frozenset(
    {"name", "nodes", "connections", "settings", "staticData", "pinData"}
)
STRIPPED_TOP_LEVEL = frozenset(
    {
        "id",
        "active",
        "createdAt",
        "updatedAt",
        "isArchived",
        "versionId",
        "triggerCount",
        "meta",
        "tags",
        "shared",
        "activeVersionId",
        "activeVersion",
        "versionCounter",
        "homeProject",
        "usedCredentials",
        "sharedWithProjects",
        "scopes",
        "parentFolder",
        "description",
    }
)
# The public API's workflowSettings schema (n8n 2.41.1, dist/public-api/v1/openapi.yml): each
# key's JSON type, or its allowed values. The API answers 400 for anything else, null included
# ("request/body/settings/errorWorkflow Expected string, received null").
SETTINGS_TYPES: dict[str, str | frozenset[str]] = {
    "saveExecutionProgress": "boolean",
    "saveManualExecutions": "boolean",
    "saveDataErrorExecution": frozenset({"all", "none"}),
    "saveDataSuccessExecution": frozenset({"all", "none"}),
    "executionTimeout": "number",
    "errorWorkflow": "string",
    "timezone": "string",
    "executionOrder": "string",
    "binaryMode": frozenset({"separate", "combined"}),
    "callerPolicy": frozenset({"any", "none", "workflowsFromAList", "workflowsFromSameOwner"}),
    "callerIds": "string",
    "timeSavedMode": frozenset({"fixed", "dynamic"}),
    "timeSavedPerExecution": "number",
    "redactionPolicy": frozenset({"none", "non-manual", "manual-only", "all"}),
    "availableInMCP": "boolean",
    "customTelemetryTags": "array",
    "credentialResolverId": "string",
}
SETTINGS_KEYS = frozenset(SETTINGS_TYPES)
NODE_KEYS = frozenset(
    {
        "id",
        "name",
        "webhookId",
        "disabled",
        "notesInFlow",
        "notes",
        "type",
        "typeVersion",
        "executeOnce",
        "alwaysOutputData",
        "retryOnFail",
        "maxTries",
        "waitBetweenTries",
        "continueOnFail",
        "onError",
        "position",
        "parameters",
        "credentials",
        "customTelemetryTags",
        "createdAt",
        "updatedAt",
    }
)

CODE = "n8n-nodes-base.code"
IF = "n8n-nodes-base.if"
REDIS = "n8n-nodes-base.redis"
WAIT = "n8n-nodes-base.wait"
EXECUTE_WORKFLOW = "n8n-nodes-base.executeWorkflow"
SUB_TRIGGER = "n8n-nodes-base.executeWorkflowTrigger"
ERROR_TRIGGER = "n8n-nodes-base.errorTrigger"
DEPRECATED_CODE = frozenset({"n8n-nodes-base.function", "n8n-nodes-base.functionItem"})

Path = tuple[str | int, ...]
Node = dict[str, Any]


def name_of(node: Node) -> str:
    """The node's name, or "" when it has none (workflow-schema reports that)."""
    name = node.get("name")
    return name if isinstance(name, str) else ""


def parameters_of(node: Node) -> dict[str, Any]:
    return as_dict(node.get("parameters"))


@dataclass(frozen=True)
class Problem:
    where: Path
    message: str
    hint: str = ""


@dataclass
class WorkflowContext:
    key: str
    workflow: dict[str, Any]
    env: Mapping[str, Any] | None = None
    # The workflows a push of the workspace sends: their ids exist by the time it needs them.
    pushed: frozenset[str] = frozenset()
    # key -> the workflows each workflow file of the workspace references (by placeholder).
    references: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    _strings: dict[int, list[tuple[Path, str]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def is_primitive(self) -> bool:
        return self.key in PRIMITIVES

    def nodes(self, *types: str) -> Iterator[tuple[int, Node]]:
        """(index, node) for every node that is a JSON object; only `types` when given."""
        for index, node in enumerate(as_list(self.workflow.get("nodes"))):
            if isinstance(node, dict) and (not types or node.get("type") in types):
                yield index, node

    def parameter_strings(self, index: int, node: Node) -> list[tuple[Path, str]]:
        """Every string in the parameters of node `index`, with its path; several rules read
        them, so they are collected once per workflow."""
        found = self._strings.get(index)
        if found is None:
            where = ("nodes", index, "parameters")
            found = self._strings[index] = list(strings_in(parameters_of(node), where))
        return found

    @property
    def node_names(self) -> set[str]:
        return {name_of(node) for _, node in self.nodes()} - {""}

    @property
    def connections(self) -> dict[str, Any]:
        return as_dict(self.workflow.get("connections"))

    @property
    def settings(self) -> dict[str, Any]:
        return as_dict(self.workflow.get("settings"))

    def targets(self) -> Iterator[tuple[Path, dict[str, Any]]]:
        """(path, target) of every connection target that is a JSON object.

        A `null` output (older exports write `"main": [null, [...]]`) is an empty output.
        """
        for source, by_kind in self.connections.items():
            for kind, outputs in as_dict(by_kind).items():
                for output, targets in enumerate(as_list(outputs)):
                    for position, target in enumerate(as_list(targets)):
                        if isinstance(target, dict):
                            yield ("connections", source, kind, output, position), target


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    summary: str
    check: Callable[[WorkflowContext], Iterator[Problem]] = field(repr=False)


def strings_in(value: Any, where: Path = ()) -> Iterator[tuple[Path, str]]:
    """Every string inside a JSON value, with its path."""
    if isinstance(value, str):
        yield where, value
        return
    items: Iterable[tuple[str | int, Any]]
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    # Leaves are handled here rather than by a call each: most values are leaves, and a
    # generator per leaf made this the most called function of `validate`.
    for key, item in items:
        if isinstance(item, str):
            yield (*where, key), item
        elif isinstance(item, (dict, list)):
            yield from strings_in(item, (*where, key))


def code_of(node: Node) -> tuple[str, str]:
    """(parameter name, source) of a Code node."""
    parameters = parameters_of(node)
    name = "pythonCode" if is_python(node) else "jsCode"
    source = parameters.get(name, "")
    return name, source if isinstance(source, str) else ""


def is_python(node: Node) -> bool:
    return parameters_of(node).get("language") in ("python", "pythonNative")


def literal_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def calls_primitive(node: Node, key: str) -> bool:
    """Whether an Execute Workflow node calls primitive `key` through its env placeholder."""
    if node.get("type") != EXECUTE_WORKFLOW:
        return False
    workflow_id = parameters_of(node).get("workflowId")
    value = workflow_id.get("value") if isinstance(workflow_id, dict) else workflow_id
    return isinstance(value, str) and f"workflows.{key}.id" in value
