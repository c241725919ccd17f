"""Where Redis is: the env file's `redis:` record, and how the operator commands pick a target."""

from __future__ import annotations

from pathlib import Path

import pytest

from n8n_lockkit.errors import EnvError, LockkitError
from n8n_lockkit.ops.redis_access import NoRedisAddress, RedisTarget, target_for
from n8n_lockkit.remote.credentials import RedisSettings
from n8n_lockkit.workspace.envconfig import EnvFile, load_env
from n8n_lockkit.workspace.layout import Workspace
from n8n_lockkit.workspace.scaffold import env_text

COMMENTED = env_text("dev").replace("lockScopes: []", "lockScopes: []  # keep me")


def load(tmp_path: Path, text: str = COMMENTED) -> EnvFile:
    (tmp_path / "envs").mkdir(exist_ok=True)
    (tmp_path / "envs" / "dev.yml").write_text(text)
    return load_env(Workspace(tmp_path), "dev")


def test_an_env_without_the_record_stays_valid(tmp_path: Path) -> None:
    assert load(tmp_path).redis_address() is None


def test_the_record_goes_after_credentials_on_one_line_and_keeps_comments(
    tmp_path: Path,
) -> None:
    env = load(tmp_path)
    record = RedisSettings("redis.internal", 6380, 2, "ops", "REDIS_PASSWORD", True).as_record()
    assert env.record_redis_address(record)
    text = env.document.dumps()
    assert text == COMMENTED.replace(
        "workflows: {}",
        "redis: {host: redis.internal, port: 6380, database: 2, ssl: true, user: ops, "
        "passwordEnv: REDIS_PASSWORD}\nworkflows: {}",
    )
    assert not env.record_redis_address(record), "the same record twice changes nothing"
    assert load(tmp_path, text).redis_address() == record


def test_the_record_never_holds_a_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_PASSWORD", "s3cret")
    record = RedisSettings("r", password_env="REDIS_PASSWORD").as_record()
    assert "s3cret" not in str(record)
    assert RedisSettings.from_record(record) == RedisSettings("r", password_env="REDIS_PASSWORD")


def test_a_misspelt_field_in_the_record_is_refused(tmp_path: Path) -> None:
    text = COMMENTED + "redis: {host: r, pasword: x}\n"
    with pytest.raises(EnvError, match=r"\$\.redis: Additional properties"):
        load(tmp_path, text)


def test_a_url_overrides_the_record(tmp_path: Path) -> None:
    env = load(tmp_path)
    env.record_redis_address({"host": "redis-for-n8n", "port": 6379})
    assert target_for(env, "redis://127.0.0.1:7000/1") == RedisTarget(
        url="redis://127.0.0.1:7000/1"
    )
    assert target_for(env, None).display == "redis://redis-for-n8n:6379/0"


def test_no_record_and_no_url_says_how_to_record_one(tmp_path: Path) -> None:
    with pytest.raises(NoRedisAddress) as caught:
        target_for(load(tmp_path), None)
    assert caught.value.hint and "redis-credential --link" in caught.value.hint
    assert "--redis-url" in caught.value.hint


def test_a_password_is_never_displayed() -> None:
    target = RedisTarget(url="redis://ops:s3cret@redis:6379/0")
    assert target.display == "redis://ops:***@redis:6379/0"


def test_a_url_that_is_not_redis_is_an_input_error() -> None:
    with pytest.raises(LockkitError, match="not a Redis URL: http://redis:6379") as caught:
        RedisTarget(url="http://redis:6379").client()
    assert caught.value.exit_code == 3
