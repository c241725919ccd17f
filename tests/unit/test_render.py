from __future__ import annotations

import json
from pathlib import Path

import pytest

from n8n_lockkit.check.rules.base import CODE, MARKER, REDIS, code_of
from n8n_lockkit.check.validate import check_workflow
from n8n_lockkit.errors import TemplateError
from n8n_lockkit.primitives.catalogue import PRIMITIVES, Primitive
from n8n_lockkit.primitives.render import RenderOptions, dump_workflow, render_primitive
from tests.conftest import assert_golden

GOLDEN = Path(__file__).parent.parent / "fixtures" / "golden"
ALL = pytest.mark.parametrize("primitive", PRIMITIVES.values(), ids=list(PRIMITIVES))


@ALL
def test_rendered_primitive_matches_golden_file(primitive: Primitive, update_goldens: bool) -> None:
    text = dump_workflow(render_primitive(primitive))
    assert_golden(GOLDEN / f"{primitive.key}.template.json", text, update_goldens)


@ALL
def test_rendering_twice_gives_identical_bytes(primitive: Primitive) -> None:
    assert dump_workflow(render_primitive(primitive)) == dump_workflow(render_primitive(primitive))


@ALL
def test_every_code_node_opens_with_the_marker(primitive: Primitive) -> None:
    workflow = render_primitive(primitive)
    codes = [code_of(n)[1] for n in workflow["nodes"] if n["type"] == CODE]
    assert codes, "a primitive without Code nodes would make this test vacuous"
    assert all(code.startswith(MARKER) for code in codes)


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
        assert node["retryOnFail"] is False


def test_node_ids_differ_between_primitives() -> None:
    ids = [n["id"] for p in PRIMITIVES.values() for n in render_primitive(p)["nodes"]]
    assert len(ids) == len(set(ids))


def test_poll_interval_is_the_wait_amount() -> None:
    workflow = render_primitive(PRIMITIVES["lock_acquisition"], RenderOptions(0.25))
    (wait,) = [n for n in workflow["nodes"] if n["type"] == "n8n-nodes-base.wait"]
    assert wait["parameters"] == {"resume": "timeInterval", "amount": 0.25, "unit": "seconds"}


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
    ]
    assert trigger["parameters"]["inputSource"] == "workflowInputs"


def test_defaults_reach_the_context_code() -> None:
    workflow = render_primitive(PRIMITIVES["lock_acquisition"])
    (context,) = [n for n in workflow["nodes"] if n["name"] == "Build Lock Context"]
    assert "input.ttl_seconds, 86400)" in context["parameters"]["jsCode"]
    assert "input.max_wait_seconds, 86400)" in context["parameters"]["jsCode"]


def test_handler_code_carries_the_lock_scopes_placeholder() -> None:
    text = json.dumps(render_primitive(PRIMITIVES["error_handler_lock_cleanup"]))
    assert "const LOCK_SCOPES = {{@:env:lockScopes}};" in text


@pytest.mark.parametrize("poll", [0.0, 61.0])
def test_out_of_range_poll_interval_is_refused(poll: float) -> None:
    with pytest.raises(TemplateError, match="poll interval"):
        render_primitive(PRIMITIVES["lock_acquisition"], RenderOptions(poll))
