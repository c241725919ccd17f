from __future__ import annotations

from pathlib import Path

import pytest

from n8n_lockkit.errors import EnvError, EnvSelectionError
from n8n_lockkit.workspace.envconfig import load_env, select_envs
from n8n_lockkit.workspace.layout import Workspace
from n8n_lockkit.workspace.scaffold import env_text


def make(tmp_path: Path, envs: dict[str, str]) -> Workspace:
    (tmp_path / "envs").mkdir()
    for name, text in envs.items():
        (tmp_path / "envs" / f"{name}.yml").write_text(text)
    return Workspace(tmp_path)


def test_init_env_text_is_valid(tmp_path: Path) -> None:
    env = load_env(make(tmp_path, {"dev": env_text("dev")}), "dev")
    assert env.data["lockScopes"] == []
    assert env.data["n8n"]["apiKeyEnv"] == "N8N_API_KEY"


def test_schema_error_names_file_and_key_path(tmp_path: Path) -> None:
    text = env_text("dev").replace("apiKeyEnv: N8N_API_KEY", "apiKeyEnv: 12")
    with pytest.raises(EnvError, match=r"envs/dev\.yml::\$\.n8n\.apiKeyEnv: 12 is not of type"):
        load_env(make(tmp_path, {"dev": text}), "dev")


def test_name_must_match_the_file_name(tmp_path: Path) -> None:
    with pytest.raises(EnvError, match=r"says 'prod' but the file is named dev\.yml"):
        load_env(make(tmp_path, {"dev": env_text("prod")}), "dev")


def test_lock_scopes_must_be_a_list_of_strings(tmp_path: Path) -> None:
    text = env_text("dev").replace("lockScopes: []", "lockScopes: global")
    with pytest.raises(EnvError, match=r"\$\.lockScopes"):
        load_env(make(tmp_path, {"dev": text}), "dev")


def test_the_only_env_is_the_default(tmp_path: Path) -> None:
    assert [e.name for e in select_envs(make(tmp_path, {"dev": env_text("dev")}), [])] == ["dev"]


def test_several_envs_and_none_chosen_is_refused(tmp_path: Path) -> None:
    workspace = make(tmp_path, {"dev": env_text("dev"), "prod": env_text("prod")})
    with pytest.raises(EnvSelectionError, match=r"several envs \(dev, prod\)") as caught:
        select_envs(workspace, [])
    assert caught.value.hint and "--env" in caught.value.hint


def test_unknown_env_lists_the_available_ones(tmp_path: Path) -> None:
    with pytest.raises(EnvSelectionError, match="unknown env 'stage'") as caught:
        select_envs(make(tmp_path, {"dev": env_text("dev")}), ["stage"])
    assert caught.value.hint == "available envs: dev"


def test_registering_twice_adds_one_entry_and_keeps_comments(tmp_path: Path) -> None:
    env = load_env(make(tmp_path, {"dev": env_text("dev")}), "dev")
    env.register_workflow("lock_release", "Lock Release")
    env.register_workflow("lock_release", "Other Name")
    text = env.document.dumps()
    assert text.count("lock_release") == 1
    assert "# static scopes that error_handler_lock_cleanup cleans" in text
    assert env.data["workflows"] == {"lock_release": {"id": "", "name": "Lock Release"}}


def test_lock_scope_is_added_once(tmp_path: Path) -> None:
    env = load_env(make(tmp_path, {"dev": env_text("dev")}), "dev")
    assert env.add_lock_scope("orders") is True
    assert env.add_lock_scope("orders") is False
    assert env.data["lockScopes"] == ["orders"]
