"""Validation rules for workflow files. Each rule is one small function with an id.

A rule receives a `WorkflowContext` whose workflow already passed the structure schema, and
yields `Problem`s; `validate.py` turns them into located findings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from n8n_lockkit.primitives import PRIMITIVES

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
SETTINGS_KEYS = frozenset(
    {
        "saveExecutionProgress",
        "saveManualExecutions",
        "saveDataErrorExecution",
        "saveDataSuccessExecution",
        "executionTimeout",
        "errorWorkflow",
        "timezone",
        "executionOrder",
        "binaryMode",
        "callerPolicy",
        "callerIds",
        "timeSavedMode",
        "timeSavedPerExecution",
        "redactionPolicy",
        "availableInMCP",
        "customTelemetryTags",
        "credentialResolverId",
    }
)
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
REDIS = "n8n-nodes-base.redis"
WAIT = "n8n-nodes-base.wait"
EXECUTE_WORKFLOW = "n8n-nodes-base.executeWorkflow"
SUB_TRIGGER = "n8n-nodes-base.executeWorkflowTrigger"
ERROR_TRIGGER = "n8n-nodes-base.errorTrigger"
DEPRECATED_CODE = frozenset({"n8n-nodes-base.function", "n8n-nodes-base.functionItem"})

Path = tuple[str | int, ...]


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
    text: str = ""

    @property
    def is_primitive(self) -> bool:
        return self.key in PRIMITIVES

    @property
    def nodes(self) -> list[dict[str, Any]]:
        nodes: list[dict[str, Any]] = self.workflow.get("nodes", [])
        return nodes

    def nodes_of(self, *types: str) -> Iterator[tuple[int, dict[str, Any]]]:
        return ((i, n) for i, n in enumerate(self.nodes) if n.get("type") in types)

    @property
    def node_names(self) -> set[str]:
        return {n["name"] for n in self.nodes}


@dataclass(frozen=True)
class Rule:
    id: str
    summary: str
    check: Callable[[WorkflowContext], Iterator[Problem]] = field(repr=False)
    needs_env: bool = False


def strings_in(value: Any, where: Path = ()) -> Iterator[tuple[Path, str]]:
    """Every string inside a JSON value, with its path."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings_in(item, (*where, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from strings_in(item, (*where, index))


def code_of(node: dict[str, Any]) -> tuple[str, str]:
    """(parameter name, source) of a Code node."""
    parameters = node.get("parameters", {})
    language = parameters.get("language", "javaScript")
    name = "pythonCode" if language in ("python", "pythonNative") else "jsCode"
    source = parameters.get(name, "")
    return name, source if isinstance(source, str) else ""


def literal_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def calls_primitive(node: dict[str, Any], key: str) -> bool:
    """Whether an Execute Workflow node calls primitive `key` through its env placeholder."""
    if node.get("type") != EXECUTE_WORKFLOW:
        return False
    workflow_id = node.get("parameters", {}).get("workflowId")
    value = workflow_id.get("value") if isinstance(workflow_id, dict) else workflow_id
    return isinstance(value, str) and f"workflows.{key}.id" in value
