from __future__ import annotations

import pytest

from n8n_lockkit.errors import LockkitError
from n8n_lockkit.remote.credentials import RedisSettings, redis_data

SCHEMA_2_41 = {
    "additionalProperties": False,
    "type": "object",
    "properties": {
        "password": {"type": "string"},
        "user": {"type": "string"},
        "host": {"type": "string"},
        "port": {"type": "number"},
        "database": {"type": "number"},
        "ssl": {"type": "boolean"},
        "disableTlsVerification": {"type": "boolean"},
    },
    "required": [],
}


def test_fields_follow_the_schema_types(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_PASSWORD", "s3cret")
    settings = RedisSettings("redis", 6380, 2, "", "REDIS_PASSWORD", False)
    assert redis_data(SCHEMA_2_41, settings) == {
        "host": "redis",
        "port": 6380,
        "database": 2,
        "user": "",
        "password": "s3cret",
        "ssl": False,
    }


def test_tls_verification_is_sent_only_with_ssl() -> None:
    assert redis_data(SCHEMA_2_41, RedisSettings("r", ssl=True))["disableTlsVerification"] is False
    assert "disableTlsVerification" not in redis_data(SCHEMA_2_41, RedisSettings("r"))


def test_fields_the_schema_does_not_know_are_left_out() -> None:
    old_schema = {"properties": {"host": {"type": "string"}, "port": {"type": "number"}}}
    assert redis_data(old_schema, RedisSettings("r")) == {"host": "r", "port": 6379}


def test_required_fields_get_a_typed_default() -> None:
    schema = {
        "properties": {"host": {"type": "string"}, "extra": {"type": "boolean"}},
        "required": ["extra"],
    }
    assert redis_data(schema, RedisSettings("r")) == {"host": "r", "extra": False}


def test_a_missing_password_variable_is_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE", raising=False)
    with pytest.raises(LockkitError, match="NOPE is not set"):
        RedisSettings("r", password_env="NOPE").password()
