"""Each rule's severity is what n8n does with its fixtures: errors are refused, warnings saved.

Every fixture is sent as `n8nlock push` sends it (the keys push sends, a name, settings).
An error rule about the API's shapes has bad fixtures that n8n 2.x answers with 400; the
sub-workflow trigger rule's bad fixtures are saved but refused on publish; a warning rule's
bad fixtures, and every good fixture, are saved.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from n8n_lockkit.check.findings import Severity
from n8n_lockkit.check.rules import RULES
from n8n_lockkit.remote.push_items import SENT_FIELDS
from testbed.client import N8nApiError, N8nClient
from testbed.endpoints import N8nInstance

FIXTURES = Path(__file__).parent.parent / "fixtures" / "rules"
SEVERITY = {rule.id: rule.severity for rule in RULES}
REFUSED_BY_THE_API = {
    "workflow-schema",
    "unique-node-names",
    "unique-node-ids",
    "connection-source-exists",
    "connection-target-exists",
    "api-settings-keys",
    "api-settings-values",
    "api-node-keys",
}
# n8n 1.x's API checks the types and keys only; it saves structurally broken workflows.
REFUSED_BY_1X = {"api-settings-keys", "api-settings-values", "api-node-keys"}
REFUSED_ON_PUBLISH = {"sub-trigger-explicit-inputs"}
# Errors for n8nlock's own reasons: the primitives' contract, and what push needs.
OUR_CONTRACT = {
    "json-syntax",
    "primitive-marker-required",
    "primitive-marker-forbidden",
    "lock-redis-once",
    "lock-no-retry",
    "lock-minimum-values",
    "env-placeholder-resolves",
    "workflow-reference-cycle",  # push refuses a cycle of workflow references
    "park-webhook-queue-mode",  # n8n runs it, and answers the caller with an empty 200
}
SENDABLE = [
    p
    for p in sorted(FIXTURES.glob("*/*.json"))
    if not p.name.endswith(".case.json") and p.parent.name not in OUR_CONTRACT
]


def body(path: Path) -> dict[str, Any]:
    workflow = json.loads(path.read_text())
    sent = {key: workflow[key] for key in SENT_FIELDS if key in workflow}
    sent["name"] = workflow.get("name", f"severity-{path.parent.name}-{path.stem}")
    sent.setdefault("settings", {"executionOrder": "v1"})
    return sent


@pytest.fixture
def created(n8n_client: N8nClient) -> Iterator[list[str]]:
    ids: list[str] = []
    yield ids
    for workflow_id in ids:
        n8n_client.api("DELETE", f"/workflows/{workflow_id}")


def test_every_error_rule_is_classified() -> None:
    errors = {rule_id for rule_id, severity in SEVERITY.items() if severity is Severity.ERROR}
    assert errors == REFUSED_BY_THE_API | REFUSED_ON_PUBLISH | OUR_CONTRACT


@pytest.mark.parametrize("path", SENDABLE, ids=[f"{p.parent.name}/{p.stem}" for p in SENDABLE])
def test_n8n_does_what_the_severity_says(
    n8n: N8nInstance, n8n_client: N8nClient, created: list[str], path: Path
) -> None:
    rule, good = path.parent.name, path.name.startswith("good")
    refused = not good and rule in REFUSED_BY_THE_API
    if refused and n8n.version.startswith("1.") and rule not in REFUSED_BY_1X:
        pytest.skip("n8n 1.x saves structurally broken workflows; 2.x refuses them")
    try:
        workflow = n8n_client.create_workflow(body(path))
    except N8nApiError as error:
        assert refused, f"n8n {n8n.version} refused {path.name} of {rule}: {error}"
        assert error.status == 400
        return
    created.append(workflow["id"])
    assert not refused, f"n8n {n8n.version} saved {path.name}, which {rule} calls an error"
    if rule in REFUSED_ON_PUBLISH and not good and not n8n.version.startswith("1."):
        with pytest.raises(N8nApiError, match="Missing or invalid required parameters"):
            n8n_client.api("POST", f"/workflows/{workflow['id']}/activate")
