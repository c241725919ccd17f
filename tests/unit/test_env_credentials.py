"""Named credentials in env files: `redis` is one among others, and old files stay valid."""

from __future__ import annotations

from pathlib import Path

import pytest

from n8n_lockkit.errors import EnvError
from n8n_lockkit.workspace.envconfig import load_env
from n8n_lockkit.workspace.layout import Workspace

HEAD = "name: dev\nn8n: {url: 'http://127.0.0.1:5678', apiKeyEnv: N8N_API_KEY}\n"


def env_at(tmp_path: Path, credentials: str) -> Path:
    (tmp_path / "envs").mkdir(exist_ok=True)
    (tmp_path / "envs" / "dev.yml").write_text(HEAD + credentials)
    return tmp_path


@pytest.mark.parametrize(
    "credentials",
    [
        'credentials:\n  redis: {id: "", name: ""}\n',
        "credentials:\n  redis: {id: c1, name: R}\n  slackApi: {id: c2, name: Slack}\n",
        "credentials:\n  imap: {id: c3}\n",
        "",
    ],
    ids=["as-init-writes-it", "redis-and-another", "id-only", "none"],
)
def test_env_files_with_named_credentials_are_valid(tmp_path: Path, credentials: str) -> None:
    load_env(Workspace(env_at(tmp_path, credentials)), "dev")


def test_a_credential_id_must_be_a_string(tmp_path: Path) -> None:
    root = env_at(tmp_path, "credentials:\n  slackApi: {id: 12}\n")
    with pytest.raises(EnvError, match=r"\$\.credentials\.slackApi\.id: 12 is not of type"):
        load_env(Workspace(root), "dev")


def test_recording_any_named_credential_keeps_the_files_style(tmp_path: Path) -> None:
    root = env_at(tmp_path, 'credentials:\n  redis: {id: "", name: ""}  # the primitives\n')
    env = load_env(Workspace(root), "dev")
    env.record_credential("slackApi", "c2", "Slack")
    env.record_credential("redis", "c1", "Redis")
    assert env.document.dumps() == HEAD + (
        'credentials:\n  redis: {id: "c1", name: "Redis"} # the primitives\n'
        "  slackApi: {id: c2, name: Slack}\n"
    )
    assert env.credential_ids() == {"c1": "redis", "c2": "slackApi"}
    assert env.credential("slackApi") == {"id": "c2", "name": "Slack"}
