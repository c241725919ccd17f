from __future__ import annotations

import json

import pytest

from n8n_lockkit.errors import PlaceholderError
from n8n_lockkit.workspace.placeholders import find_paths, resolve_text, unresolved

ENV = {
    "credentials": {"redis": {"id": "cred1", "name": 'Redis "main"'}},
    "workflows": {"lock_acquisition": {"id": "", "name": "Acquire"}},
    "lockScopes": ["a", "b"],
    "flag": True,
}


def test_both_spellings_are_found() -> None:
    assert find_paths('"{{@:env:a.b}}" "{{@env:c}}"') == ["a.b", "c"]


def test_strings_are_escaped_for_json() -> None:
    text = '{"name": "{{@:env:credentials.redis.name}}"}'
    assert json.loads(resolve_text(text, ENV)) == {"name": 'Redis "main"'}


def test_lists_become_js_literals_inside_the_code_string() -> None:
    text = json.dumps({"jsCode": "const LOCK_SCOPES = {{@:env:lockScopes}};"})
    assert json.loads(resolve_text(text, ENV))["jsCode"] == 'const LOCK_SCOPES = ["a", "b"];'


def test_booleans_are_json_not_python() -> None:
    assert json.loads(resolve_text('{"x": "{{@env:flag}}"}', ENV)) == {"x": "true"}


def test_missing_lock_scopes_means_an_empty_list() -> None:
    text = json.dumps({"jsCode": "const LOCK_SCOPES = {{@:env:lockScopes}};"})
    assert json.loads(resolve_text(text, {}))["jsCode"] == "const LOCK_SCOPES = [];"


def test_missing_key_is_an_error_naming_the_placeholder() -> None:
    with pytest.raises(PlaceholderError, match=r"\{\{@:env:nope\}\}: not found"):
        resolve_text('"{{@:env:nope}}"', ENV)


def test_empty_workflow_id_blocks_push_but_not_validate() -> None:
    text = '"{{@:env:workflows.lock_acquisition.id}}"'
    assert unresolved(text, ENV, require_ids=False) == []
    (problem,) = unresolved(text, ENV, require_ids=True)
    assert "not on n8n yet" in problem.reason
