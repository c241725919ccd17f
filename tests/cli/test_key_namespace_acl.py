"""The Redis ACL lines of docs/key-namespaces.md let n8nlock do all it does in one key namespace,
and nothing outside it.

Each `ACL SETUSER` line of the page runs against a real redis-server (password filled in). As
that user, on database 1 (so that the connection SELECTs too): every command n8n's Redis node
sends for the operations n8nlock's generated nodes use, and, for the operators' line, every
operator command (`locks`, `release`, `reap`, `reap --idle`, `stats`, `forget`) through the CLI.
Redis's ACL LOG stays empty throughout, and a key outside the namespace is refused.
"""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis

from n8n_lockkit.cli import ops_commands
from n8n_lockkit.ops import drain
from n8n_lockkit.primitives import keys
from tests.cli.fake_n8n import API_KEY, BASE
from tests.cli.test_ops_commands import stub_execution
from tests.conftest import Invoke, explain
from tests.redis_fixtures import record_for
from tests.unit.test_byte_identity import CASES

ROOT = Path(__file__).parent.parent.parent
PAGE = ROOT / "docs" / "key-namespaces.md"
CORPUS = ROOT / "tests" / "corpus"
PASSWORD = "acl-test-password"
PREFIX = "staging:"
SCHEMA = keys.KeySchema(PREFIX)
DB = 1
# n8n's Redis node (n8n-nodes-base 2.41.1, nodes/Redis: Redis.node.js and utils.js, on
# node-redis 4) connects (AUTH, then SELECT when the credential's database is not 0), sends
# PING, then per operation and key type the commands below; `set` and `incr` add EXPIRE when
# the node sets a TTL. A keyType that is an expression or `automatic` is a string or a hash.
# The debounce's lists: Push with Tail is RPUSH; Get of a list is LRANGE 0 -1; Set of a list with
# an empty value (its only use: a TTL) writes no element and EXPIREs.
N8N_SENDS: dict[tuple[str, str], list[list[Any]]] = {
    ("get", "string"): [["GET", "{key}"]],
    ("get", "hash"): [["HGETALL", "{key}"]],
    ("set", "string"): [["SET", "{key}", "{}"], ["EXPIRE", "{key}", 60]],
    ("set", "hash"): [["HSET", "{key}", "orders", "{}"], ["EXPIRE", "{key}", 60]],
    ("incr", "-"): [["INCR", "{key}"], ["EXPIRE", "{key}", 60]],
    ("push", "-"): [["RPUSH", "{list}", "e"]],
    ("get", "list"): [["LRANGE", "{list}", 0, -1]],
    ("set", "list"): [["EXPIRE", "{list}", 60]],
}


def acl_lines() -> dict[str, list[str]]:
    """Each `ACL SETUSER` line of the page's code blocks, by user name, with the password."""
    found = {}
    for raw in PAGE.read_text().splitlines():
        line = raw.strip()
        if line.startswith("ACL SETUSER "):
            words = shlex.split(line.replace(">PASSWORD", f">{PASSWORD}"))
            found[words[2]] = words
    return found


LINES = acl_lines()
# A debounce's claims list, for the list operations.
LIST_KEY = SCHEMA.debounce_base("wf1", "chat:42") + keys.DEBOUNCE_CLAIM_SUFFIX + "1"


def send(client: redis.Redis, *words: Any) -> Any:
    """One Redis command, word by word, as a client sends it."""
    return client.execute_command(*words)  # type: ignore[no-untyped-call]


def generated_operations() -> set[tuple[str, str]]:
    """(operation, key type) of every Redis node n8nlock generates: the primitives, and one
    workflow of the corpus in every form the wrapping commands make."""
    used = set()
    for case, render in CASES.items():
        if not case.startswith(("primitive/", "wrap/order_update/", "debounce/order_update/")):
            continue
        rendered = render()
        if rendered.startswith("refused:"):  # a form this workflow cannot take (--park)
            continue
        for node in json.loads(rendered).get("nodes", []):
            managed = "n8nlock" in (node.get("notes") or "") or case.startswith("primitive/")
            if node["type"] == "n8n-nodes-base.redis" and managed:
                parameters = node["parameters"]
                kind = str(parameters.get("keyType", "-"))
                either = kind.startswith("=") or kind == "automatic"
                used |= {
                    (parameters["operation"], k) for k in (["string", "hash"] if either else [kind])
                }
    return used


@pytest.fixture
def admin(redis_url: str) -> Iterator[redis.Redis]:
    """The server's default user, on an emptied database 1, with an empty ACL LOG; the users
    the lines made are gone afterwards."""
    database = urlsplit(redis_url)._replace(path=f"/{DB}").geturl()
    client = redis.Redis.from_url(database, decode_responses=True)
    client.flushdb()
    client.acl_log_reset()
    client.script_flush()
    yield client
    for user in LINES:
        client.acl_deluser(user)
    client.flushdb()
    client.close()


def user_url(redis_url: str, user: str) -> str:
    return f"redis://{user}:{PASSWORD}@127.0.0.1:{urlsplit(redis_url).port}/{DB}"


def refusals(admin: redis.Redis) -> list[Any]:
    return list(admin.acl_log())


def test_the_page_gives_a_line_for_n8n_and_one_for_n8n_and_the_operators() -> None:
    assert sorted(LINES) == ["n8n-staging", "n8nlock-staging"], LINES
    for words in LINES.values():
        assert f"~{PREFIX}*" in words, words


def test_every_redis_operation_of_the_generated_nodes_is_one_the_test_knows() -> None:
    unknown = generated_operations() - set(N8N_SENDS)
    assert not unknown, (
        f"n8nlock's nodes now use {sorted(unknown)}: add what n8n's Redis node sends for it to "
        "N8N_SENDS, and to the ACL lines of docs/key-namespaces.md if it needs a new command"
    )


@pytest.mark.parametrize("user", sorted(LINES))
def test_the_line_lets_n8ns_redis_node_run_every_operation_of_the_generated_nodes(
    user: str, admin: redis.Redis, redis_url: str
) -> None:
    send(admin, *LINES[user])
    client = redis.Redis.from_url(user_url(redis_url, user), decode_responses=True)
    key_of = {"string": SCHEMA.holder_key("orders", 1), "hash": SCHEMA.index_key("wf1", "57"),
              "-": SCHEMA.ticket_key("orders")}  # fmt: skip
    for operation, kind in sorted(generated_operations()):
        client.ping()
        for command in N8N_SENDS[operation, kind]:
            send(client, *[LIST_KEY if w == "{list}" else key_of.get(kind) if w == "{key}" else w
                           for w in command])  # fmt: skip
    assert refusals(admin) == []
    with pytest.raises(redis.exceptions.NoPermissionError):
        client.get(keys.SCHEMA.holder_key("orders", 1))  # the keys of no namespace


def _hold(admin: redis.Redis, scope: str, ticket: int, execution_id: str) -> None:
    """Ticket `ticket` holds `scope` as format 4 leaves it, one caller in line behind it."""
    record = {**record_for(scope, ticket=ticket, execution_id=execution_id), "format": 4}
    admin.set(SCHEMA.ticket_key(scope), ticket + 1)
    if ticket > 1:
        admin.set(SCHEMA.served_key(scope, 0), ticket - 1)
    admin.set(SCHEMA.holder_key(scope, ticket), json.dumps(record), ex=300)
    admin.set(SCHEMA.lane_meta_key(scope, 0), json.dumps(record), ex=300)


@pytest.fixture
def staging(tmp_path: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace whose env `staging` has the prefix and the stub n8n, with a duplicate
    guard on order_update."""
    root = tmp_path / "ws"
    made = invoke("init", root, "--env", "staging", "--key-prefix", PREFIX, "--url", BASE)
    assert made.exit_code == 0, explain(made)
    monkeypatch.setenv("N8N_API_KEY", API_KEY)
    monkeypatch.delenv("N8NLOCK_REDIS_URL", raising=False)
    assert invoke("create-lock", "--include-error-handler", cwd=root).exit_code == 0
    shutil.copy(CORPUS / "order_update.template.json", root / "workflows")
    guarded = invoke("add-dedupe", "--workflow-key", "order_update", "--key-expression",
                     "={{ $json.body.orderId }}", "--window-seconds", "600", cwd=root)  # fmt: skip
    assert guarded.exit_code == 0, explain(guarded)
    return root


def test_the_operators_line_lets_every_operator_command_run_in_the_namespace(
    staging: Path,
    invoke: Invoke,
    admin: redis.Redis,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    send(admin, *LINES["n8nlock-staging"])
    url = user_url(redis_url, "n8nlock-staging")
    for scope, ticket, execution in [("order-1", 3, "57"), ("order-2", 1, "58"),
                                     ("order-3", 1, "59")]:  # fmt: skip
        _hold(admin, scope, ticket, execution)
    admin.set(SCHEMA.ticket_key("idle"), 4)
    admin.set(SCHEMA.served_key("idle", 0), 4)
    admin.set(SCHEMA.hold_key("idle"), 250, ex=3600)  # its last release: days ago
    admin.set(SCHEMA.lane_meta_key("stuck", 0), "{not json")  # no TTL, no holder to ask
    seconds, _ = admin.time()
    hour = f"{datetime.fromtimestamp(seconds, tz=timezone.utc):%Y%m%d%H}"
    admin.set(SCHEMA.stats_key(hour, "arrived", "order-1"), 3)
    done = {"execution_id": "512", "workflow_id": "wf1", "done_at": "2026-11-26T06:00:00.000Z"}
    admin.set(SCHEMA.done_key(keys.dedupe_scope("order_update", "evt_1")), json.dumps(done), ex=600)
    outside = keys.SCHEMA.holder_key("order-1", 1)
    admin.set(outside, "not this env's")
    stub_execution("57", "running")
    stub_execution("58", "error")
    stub_execution("59", "running")
    monkeypatch.setattr(ops_commands, "pause", lambda seconds: None)
    runs = [
        ("locks",),
        ("release", "order-3", "--force", "--yes"),
        ("reap", "--grace", "5"),
        ("reap", "--idle"),
        ("stats",),
        ("forget", "--workflow-key", "order_update", "--key", "evt_1"),
    ]
    for args in runs:
        result = invoke(*args, "--redis-url", url, cwd=staging)
        assert result.exit_code == 0, f"n8nlock {' '.join(args)}\n{explain(result)}"
    assert refusals(admin) == []
    assert admin.get(SCHEMA.served_key("order-2", 0)) == "1"  # reaped: its execution ended
    assert admin.exists(SCHEMA.ticket_key("idle"), SCHEMA.lane_meta_key("stuck", 0)) == 0
    assert admin.exists(SCHEMA.done_key(keys.dedupe_scope("order_update", "evt_1"))) == 0
    assert admin.get(outside) == "not this env's"


def test_a_user_of_the_new_namespace_cannot_run_the_drain_check_of_a_move_from_the_old_one(
    admin: redis.Redis, redis_url: str
) -> None:
    """Why the page says to push a namespace change with --redis-url of a user that reads both:
    the drain check reads the old namespace (here: none), outside the user's keys."""
    send(admin, *LINES["n8nlock-staging"])
    admin.set(keys.SCHEMA.ticket_key("order-1"), 2)
    client = redis.Redis.from_url(user_url(redis_url, "n8nlock-staging"), decode_responses=True)
    assert drain.namespace_activity(client, PREFIX) == []
    with pytest.raises(redis.exceptions.NoPermissionError):
        drain.namespace_activity(client, "")
