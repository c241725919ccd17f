"""n8n's own Redis node code runs every operation of n8nlock's nodes as the ACL users of
docs/key-namespaces.md.

tests/cli/test_key_namespace_acl.py sends, with redis-py, the commands n8n's Redis node sends;
here the node's own helpers (n8n-nodes-base's nodes/Redis/utils.js, on n8n's node-redis, from
the installed n8n of each version under test) connect as each user, to database 1, and run
each operation the way Redis.node.js does. So a version of n8n that sends another command
fails here before it fails a user's lock.
"""

from __future__ import annotations

import json
import subprocess
from urllib.parse import urlsplit

import pytest
import redis

from testbed.install import ensure_n8n
from testbed.progress import Progress
from testbed.settings import n8n_version_params
from tests.cli.test_key_namespace_acl import (
    DB,
    LINES,
    LIST_KEY,
    PASSWORD,
    SCHEMA,
    admin,
    generated_operations,
    send,
)

__all__ = ["admin"]  # the fixture, here on the test bed's Redis

# One operation of Redis.node.js's execute(): connect, PING, the operation, QUIT. The key of a
# hash operation holds a hash, of a list operation a list (a debounce's claims), the others a
# string or a counter. A refused SELECT makes
# node-redis reconnect for minutes (as it would inside n8n): each operation gets 10 s.
SCRIPT = r"""
const utils = require(process.argv[1]);
const [credentials, operations, keyOf] = JSON.parse(process.argv[2]);
const node = { getNode: () => ({}) };
const run = async (client, operation, kind) => {
  const key = keyOf[kind];
  await client.connect();
  await client.ping();
  if (operation === 'get') await utils.getValue(client, key, kind);
  else if (operation === 'set' && kind === 'list') {
    await utils.setValue.call(node, client, key, '', true, 60, 'list', true);
  } else if (operation === 'set') {
    const value = kind === 'hash' ? { orders: '{}' } : '{}';
    await utils.setValue.call(node, client, key, value, true, 60, 'automatic', true);
  } else if (operation === 'push') {
    await client.rPush(keyOf.list, 'e');
  } else if (operation === 'incr') {
    await client.incr(key);
    await client.expire(key, 60);
  } else throw new Error(`no such operation in this script: ${operation}`);
  await client.quit();
};
(async () => {
  const done = [];
  for (const [operation, kind] of operations) {
    const client = utils.setupRedisClient(credentials);
    const late = new Promise((_, reject) =>
      setTimeout(() => reject(new Error('no answer in 10 s')), 10000));
    try {
      await Promise.race([run(client, operation, kind), late]);
      done.push([operation, kind, 'ok']);
    } catch (error) {
      done.push([operation, kind, String(error.message || error)]);
      await client.disconnect().catch(() => {});
    }
  }
  console.log(JSON.stringify(done));
  process.exit(0);
})();
"""


@pytest.mark.parametrize("version", n8n_version_params())
@pytest.mark.parametrize("user", sorted(LINES))
def test_n8ns_redis_node_runs_every_operation_of_the_generated_nodes_as_the_user(
    user: str, version: str, admin: redis.Redis, redis_url: str, testbed_progress: Progress
) -> None:
    install = ensure_n8n(version, testbed_progress)
    utils = install.app_dir / "node_modules" / "n8n-nodes-base" / "dist" / "nodes" / "Redis"
    send(admin, *LINES[user])
    where = urlsplit(redis_url)
    credentials = {"host": where.hostname, "port": where.port, "database": DB, "user": user,
                   "password": PASSWORD, "ssl": False}  # fmt: skip
    key_of = {"string": SCHEMA.holder_key("orders", 1), "hash": SCHEMA.index_key("wf1", "57"),
              "-": SCHEMA.ticket_key("orders"), "list": LIST_KEY}  # fmt: skip
    argument = json.dumps([credentials, sorted(generated_operations()), key_of])
    run = subprocess.run(
        [str(install.runtime.node), "-e", SCRIPT, str(utils / "utils.js"), argument],
        env=install.runtime.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout.strip().splitlines()[-1])
    assert [r for r in results if r[2] != "ok"] == [], results
    assert len(results) == len(generated_operations())
    assert list(admin.acl_log()) == []
