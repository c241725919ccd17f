"""The rule registry: every rule n8nlock validate applies, with its id and severity.

An error means n8n refuses the file (the API answers 400, or refuses to publish it) or a
primitive's contract is broken; a warning means n8n accepts the file but it risks misbehaving,
or uses something deprecated. Each severity below was checked against n8n 2.41.1's API and
runtime (the facts are in each rule's module).
"""

from __future__ import annotations

from n8n_lockkit.check.findings import Severity
from n8n_lockkit.check.rules import (
    code,
    env,
    expressions,
    hygiene,
    markers,
    schema,
    stamps,
    structure,
)
from n8n_lockkit.check.rules.base import Problem, Rule, WorkflowContext

ERROR = Severity.ERROR
WARNING = Severity.WARNING


def _summary(check: object) -> str:
    """The first paragraph of a rule's docstring, on one line: whole sentences."""
    first = (getattr(check, "__doc__", None) or "").strip().split("\n\n")[0]
    return " ".join(first.split())


RULES: tuple[Rule, ...] = tuple(
    Rule(rule_id, severity, _summary(check), check)
    for rule_id, severity, check in (
        ("json-syntax", ERROR, schema.json_syntax),
        ("workflow-schema", ERROR, schema.workflow_schema),
        ("unique-node-names", ERROR, structure.unique_node_names),
        ("unique-node-ids", ERROR, structure.unique_node_ids),
        ("connection-source-exists", ERROR, structure.connection_sources_exist),
        ("connection-target-exists", ERROR, structure.connection_targets_exist),
        # n8n saves it; the expression fails when it runs.
        ("node-reference-exists", WARNING, structure.node_references_exist),
        # The API refuses it, but push sends only the keys the API takes: the key is lost.
        ("api-top-level-keys", WARNING, structure.api_top_level_keys),
        ("api-settings-keys", ERROR, structure.api_settings_keys),
        ("api-settings-values", ERROR, structure.api_settings_values),
        ("api-node-keys", ERROR, structure.api_node_keys),
        ("primitive-marker-required", ERROR, markers.marker_required),
        ("primitive-marker-forbidden", ERROR, markers.marker_forbidden),
        ("code-sandbox", WARNING, code.code_sandbox),
        ("code-no-function-node", WARNING, code.deprecated_function_nodes),
        ("lock-redis-once", ERROR, hygiene.redis_runs_once),
        ("lock-no-retry", ERROR, hygiene.no_retry),
        ("lock-minimum-values", ERROR, hygiene.minimum_values),
        ("wait-explicit-interval", WARNING, hygiene.wait_states_interval),
        # n8n saves it but refuses to publish it.
        ("sub-trigger-explicit-inputs", ERROR, hygiene.sub_trigger_states_inputs),
        # n8n saves it, and reads it as a workflow id: it never evaluates it.
        ("error-workflow-literal", WARNING, hygiene.error_workflow_is_literal),
        # A file of another format: its lock and this n8nlock's do not exclude each other.
        ("format-current", WARNING, stamps.format_current),
        # A rate limit that counts in other keys than this n8nlock's: no shared budget.
        ("rate-engine-current", WARNING, stamps.rate_engine_current),
        # n8n runs it, with a lock, guard or rate limit on one scope for every execution.
        ("expression-braced", WARNING, expressions.expressions_braced),
        # push refuses to send a workflow whose placeholders do not resolve.
        ("env-placeholder-resolves", ERROR, env.placeholders_resolve),
        ("workflow-reference-cycle", ERROR, env.no_reference_cycle),
        # n8n runs it, and answers the webhook's caller with an empty 200 at the park.
        ("park-webhook-queue-mode", ERROR, env.park_webhook_in_queue_mode),
    )
)
RULE_IDS = frozenset(rule.id for rule in RULES)

__all__ = ["RULES", "RULE_IDS", "Problem", "Rule", "WorkflowContext"]
