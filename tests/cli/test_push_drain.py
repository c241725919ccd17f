"""push's drain check runs when the push replaces, on n8n, a lock of an older format than the
engine sees natively, and only then; when it cannot run, it says why it exists and how to
skip it."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest
import redis

from n8n_lockkit.primitives import formats
from n8n_lockkit.remote.push_compare import replaced_lock_format, replaced_namespace
from tests.cli.fake_n8n import FakeN8n
from tests.cli.test_push import point_at
from tests.conftest import Invoke, explain, snapshot

FORMAT1 = Path(__file__).parents[1] / "fixtures" / "upgrade" / "format1"
CORPUS = Path(__file__).parents[1] / "corpus"


@pytest.fixture
def fake() -> FakeN8n:
    return FakeN8n()


@pytest.fixture
def on_n8n_in_format_1(
    tmp_path: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, fake: FakeN8n
) -> Path:
    """A workspace made before engine v2, pushed as it was, then upgraded here (not pushed)."""
    root = tmp_path / "ws"
    shutil.copytree(FORMAT1, root)
    env = point_at(root, "http://n8n.test", monkeypatch)
    env.write_text(env.read_text().replace('redis: {id: "", name: ""}', "redis: {id: c9, name: R}"))
    first = invoke("push", cwd=root)
    assert first.exit_code == 0, explain(first)
    upgraded = invoke("upgrade", cwd=root)
    assert upgraded.exit_code == 0, explain(upgraded)
    return root


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_push_that_replaces_an_older_lock_without_a_redis_address_says_it_cannot_check(
    on_n8n_in_format_1: Path, invoke: Invoke, fake: FakeN8n
) -> None:
    before, writes = snapshot(on_n8n_in_format_1), len(fake.writes)
    result = invoke("push", "--dry-run", "order_update", cwd=on_n8n_in_format_1)
    assert result.exit_code == 3, explain(result)
    assert snapshot(on_n8n_in_format_1) == before and len(fake.writes) == writes
    error, hint = result.stderr.splitlines()
    assert error == (
        "Error: push replaces order_update (format 1) on n8n; callers of an older lock format, "
        "or of another key namespace, that still hold or wait are invisible to the lock it "
        "brings, so push first checks Redis for them (docs/upgrading.md); envs/dev.yml does not "
        "say where Redis is (no redis: record), so it cannot check; nothing was sent"
    )
    assert "--redis-url" in hint and "`n8nlock push --no-drain-check`" in hint


def test_an_unreachable_redis_names_the_check_and_how_to_skip_it(
    on_n8n_in_format_1: Path, invoke: Invoke
) -> None:
    url = f"redis://127.0.0.1:{unused_port()}/0"
    result = invoke("push", "--dry-run", "--redis-url", url, cwd=on_n8n_in_format_1)
    assert result.exit_code == 4, explain(result)
    error, hint = result.stderr.splitlines()
    assert error.startswith("Error: push replaces ")
    assert f"cannot reach Redis at {url}" in error and "docs/upgrading.md" in error
    assert "--no-drain-check" in hint and "--redis-url" in hint


def test_format_1_waiters_refuse_the_push_and_no_drain_check_skips_it(
    on_n8n_in_format_1: Path,
    invoke: Invoke,
    fake: FakeN8n,
    redis_client: redis.Redis,
    redis_url: str,
) -> None:
    redis_client.set("n8nlock:arrived:order-7", 2)
    redis_client.set("n8nlock:left:order-7", 1)
    writes = len(fake.writes)
    result = invoke("push", "--redis-url", redis_url, cwd=on_n8n_in_format_1)
    assert result.exit_code == 6, explain(result)
    assert result.stderr.startswith(
        "Error: callers the pushed lock cannot see still hold or wait: order-7: 1 caller(s) of "
        "format 1 waiting; "
    )
    assert len(fake.writes) == writes
    skipped = invoke("push", "--redis-url", redis_url, "--no-drain-check", cwd=on_n8n_in_format_1)
    assert skipped.exit_code == 0, explain(skipped)


def test_once_n8n_holds_the_new_format_push_no_longer_asks_redis(
    on_n8n_in_format_1: Path, invoke: Invoke
) -> None:
    pushed = invoke("push", "--no-drain-check", cwd=on_n8n_in_format_1)
    assert pushed.exit_code == 0, explain(pushed)
    (on_n8n_in_format_1 / "workflows" / "plain.json").write_text(
        (CORPUS / "merge_branches.template.json").read_text()
    )
    url = f"redis://127.0.0.1:{unused_port()}/0"  # nothing listens: asking would fail
    again = invoke("push", "--redis-url", url, cwd=on_n8n_in_format_1)
    assert again.exit_code == 0, explain(again)


def test_only_a_lock_of_an_older_format_replaced_by_a_current_one_needs_the_check() -> None:
    def caller(fmt: int | None) -> dict[str, object]:
        notes = "n8nlock:lock-hold — managed by n8nlock" + (f" (format {fmt})" if fmt else "")
        node = {"name": "Lock", "type": "n8n-nodes-base.code", "notes": notes}
        return {"name": "orders", "nodes": [node]}

    plain = {"name": "orders", "nodes": [{"name": "Set", "type": "n8n-nodes-base.set"}]}
    assert replaced_lock_format("orders", caller(3), caller(None)) == 1
    assert replaced_lock_format("orders", caller(3), caller(2)) == 2
    assert replaced_lock_format("orders", caller(3), caller(3)) is None
    assert replaced_lock_format("orders", caller(3), None) is None  # new on n8n
    assert replaced_lock_format("orders", caller(None), caller(None)) is None  # not upgraded
    assert replaced_lock_format("orders", plain, caller(2)) is None  # the lock taken off
    assert replaced_lock_format("orders", caller(3), plain) is None  # no lock on n8n


def test_a_lock_moved_to_another_key_namespace_needs_the_check() -> None:
    def caller(fmt: int, namespace: str) -> dict[str, object]:
        notes = f"n8nlock:lock-context — managed by n8nlock (format {fmt})"
        script = f"={{{{ (() => {{ const base = `{namespace}n8n-lock-${{scope}}`; }})() }}}}"
        node = {"name": "Lock Context", "notes": notes, "parameters": {"jsonOutput": script}}
        return {"name": "orders", "nodes": [node]}

    assert formats.lock_namespace(caller(4, "staging:")) == "staging:"
    assert formats.lock_namespace(caller(3, "")) == ""  # before namespaces: none
    assert replaced_namespace("orders", caller(4, "x"), caller(3, ""), "staging:") == ""
    assert (
        replaced_namespace("orders", caller(4, "x"), caller(4, "staging:"), "prod:") == "staging:"
    )
    assert replaced_namespace("orders", caller(4, "x"), caller(4, "staging:"), "staging:") is None
    assert replaced_namespace("orders", caller(4, "x"), None, "staging:") is None  # new on n8n
