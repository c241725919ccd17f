from __future__ import annotations

import json
from pathlib import Path

import pytest

from n8n_lockkit.check.rules.base import CODE, MARKER, REDIS, code_of
from n8n_lockkit.check.validate import check_workflow
from n8n_lockkit.errors import TemplateError
from n8n_lockkit.primitives import engine, formats
from n8n_lockkit.primitives.catalogue import PRIMITIVES, Primitive
from n8n_lockkit.primitives.render import RenderOptions, dump_workflow, render_primitive
from tests.conftest import assert_golden, run_once_on_a_stall

GOLDEN = Path(__file__).parent.parent / "fixtures" / "golden"
ALL = pytest.mark.parametrize("primitive", PRIMITIVES.values(), ids=list(PRIMITIVES))


@ALL
def test_rendered_primitive_matches_golden_file(primitive: Primitive, update_goldens: bool) -> None:
    text = dump_workflow(render_primitive(primitive))
    assert_golden(GOLDEN / f"{primitive.key}.template.json", text, update_goldens)


@ALL
def test_rendering_twice_gives_identical_bytes(primitive: Primitive) -> None:
    assert dump_workflow(render_primitive(primitive)) == dump_workflow(render_primitive(primitive))


def test_every_code_node_opens_with_the_marker() -> None:
    codes = [
        code_of(node)[1]
        for primitive in PRIMITIVES.values()
        for node in render_primitive(primitive)["nodes"]
        if node["type"] == CODE
    ]
    assert codes, "no primitive has a Code node: this test would be vacuous"
    assert all(code.startswith(MARKER) for code in codes)


@pytest.mark.parametrize("key", ["lock_acquisition", "lock_release", "lock_renew"])
def test_lock_primitives_decide_in_set_expressions_not_code_nodes(key: str) -> None:
    types = {node["type"] for node in render_primitive(PRIMITIVES[key])["nodes"]}
    assert CODE not in types
    assert "n8n-nodes-base.set" in types


def test_acquisition_runs_the_engines_acquire_chain() -> None:
    """The primitive and the inline form share one builder: same nodes, same decisions."""
    workflow = render_primitive(PRIMITIVES["lock_acquisition"])
    # The primitive's policy is known only at run time, so its chain may skip.
    inline = engine.acquire("lock_acquisition", engine.LockInputs(scope="s"), (0, 0), skips=True)
    by_name = {node["name"]: node for node in workflow["nodes"]}
    for node in inline.nodes:
        if node["name"] == "Lock Context":
            continue  # the inputs differ: the trigger's fields here, a literal scope there
        assert by_name[node["name"]]["parameters"] == node["parameters"], node["name"]


def test_release_runs_the_engines_release_chain_on_the_checked_record() -> None:
    workflow = render_primitive(PRIMITIVES["lock_release"])
    (verdict,) = [n for n in workflow["nodes"] if n["name"] == "Lock Release Verdict"]
    assert (
        'const held = $("Release Check").first().json.held;' in verdict["parameters"]["jsonOutput"]
    )


@ALL
def test_rendered_primitive_passes_validate(primitive: Primitive) -> None:
    findings = check_workflow(render_primitive(primitive), display=primitive.key, key=primitive.key)
    assert findings == []


@ALL
def test_redis_nodes_use_the_env_credential_placeholders(primitive: Primitive) -> None:
    redis_nodes = [n for n in render_primitive(primitive)["nodes"] if n["type"] == REDIS]
    assert redis_nodes
    for node in redis_nodes:
        assert node["credentials"] == {
            "redis": {
                "id": "{{@:env:credentials.redis.id}}",
                "name": "{{@:env:credentials.redis.name}}",
            }
        }
        # The lock engine's nodes run again after a failure (an expression n8n timed out
        # across a stall); the template-made ones (cleanup handler, fixed window) never retry.
        engine_made = formats.node_format(node) is not None
        assert node["retryOnFail"] is engine_made, node["name"]
        if engine_made:
            assert (node["maxTries"], node["waitBetweenTries"]) == (3, 0)


@pytest.mark.parametrize(
    "primitive", [p for k, p in PRIMITIVES.items() if k != "error_handler_lock_cleanup"], ids=str
)
def test_the_engine_primitives_run_every_expression_again_after_a_stall(
    primitive: Primitive,
) -> None:
    """The error handler is the exception: it runs after a failure, and a cleanup that a
    stall fails leaves the lock to its TTL (docs/safety.md)."""
    assert run_once_on_a_stall(render_primitive(primitive)["nodes"]) == []


def test_node_ids_differ_between_primitives() -> None:
    ids = [n["id"] for p in PRIMITIVES.values() for n in render_primitive(p)["nodes"]]
    assert len(ids) == len(set(ids))


def test_acquire_trigger_keeps_the_seed_contract() -> None:
    workflow = render_primitive(PRIMITIVES["lock_acquisition"])
    (trigger,) = [n for n in workflow["nodes"] if n["type"].endswith("executeWorkflowTrigger")]
    names = [v["name"] for v in trigger["parameters"]["workflowInputs"]["values"]]
    assert names == [
        "scope",
        "ttl_seconds",
        "execution_id",
        "wait_till_lock_released",
        "max_wait_seconds",
        "lock_id",
        "workflow_id",
        "workflow_name",
        "max_concurrent",
        "on_busy",  # added after the seed's inputs: callers that do not pass it keep their policy
    ]
    assert trigger["parameters"]["inputSource"] == "workflowInputs"


def test_defaults_reach_the_context_expression() -> None:
    options = RenderOptions(default_ttl_seconds=77, default_max_wait_seconds=88)
    workflow = render_primitive(PRIMITIVES["lock_acquisition"], options)
    (context,) = [n for n in workflow["nodes"] if n["name"] == "Lock Context"]
    script = context["parameters"]["jsonOutput"]
    assert "input.ttl_seconds, 77)" in script
    assert "input.max_wait_seconds, 88)" in script
    assert 'scope: ($("Lock Request").first().json.scope)' in script


def test_handler_code_carries_the_lock_scopes_placeholder() -> None:
    text = json.dumps(render_primitive(PRIMITIVES["error_handler_lock_cleanup"]))
    assert "const LOCK_SCOPES = {{@:env:lockScopes}};" in text


def test_a_default_below_one_second_is_refused() -> None:
    with pytest.raises(TemplateError, match="default_ttl_seconds must be at least 1"):
        render_primitive(PRIMITIVES["lock_acquisition"], RenderOptions(default_ttl_seconds=0))
