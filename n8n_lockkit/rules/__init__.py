"""The rule registry: every rule n8nlock validate applies, with its id."""

from __future__ import annotations

from n8n_lockkit.rules import code, env, hygiene, markers, structure
from n8n_lockkit.rules.base import Problem, Rule, WorkflowContext

RULES: tuple[Rule, ...] = tuple(
    Rule(rule_id, (check.__doc__ or "").strip().splitlines()[0], check)
    for rule_id, check in (
        ("unique-node-names", structure.unique_node_names),
        ("unique-node-ids", structure.unique_node_ids),
        ("connection-source-exists", structure.connection_sources_exist),
        ("connection-target-exists", structure.connection_targets_exist),
        ("node-reference-exists", structure.node_references_exist),
        ("api-top-level-keys", structure.api_top_level_keys),
        ("api-settings-keys", structure.api_settings_keys),
        ("api-node-keys", structure.api_node_keys),
        ("primitive-marker-required", markers.marker_required),
        ("primitive-marker-forbidden", markers.marker_forbidden),
        ("code-sandbox", code.code_sandbox),
        ("code-no-function-node", code.deprecated_function_nodes),
        ("lock-redis-once", hygiene.redis_runs_once),
        ("lock-no-retry", hygiene.no_retry),
        ("lock-minimum-values", hygiene.minimum_values),
        ("wait-explicit-interval", hygiene.wait_states_interval),
        ("sub-trigger-explicit-inputs", hygiene.sub_trigger_states_inputs),
        ("error-workflow-literal", hygiene.error_workflow_is_literal),
        ("env-placeholder-resolves", env.placeholders_resolve),
    )
)

__all__ = ["RULES", "Problem", "Rule", "WorkflowContext"]
