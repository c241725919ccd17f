"""How a new lock's waiters wait when add-lock-to-workflow is not told (`--park`/`--no-park`).

They park wherever parking works (issue 33: a waiter that sleeps awake holds an n8n
concurrency slot, or a queue-mode worker's job slot, for its whole wait, and a line longer than
the limit stops every other workflow). They wait awake where a parked waiter would go wrong:

- the lock is called as a sub-workflow (`--via-subworkflow`): a sub-workflow that parks
  answers its parent at once;
- the callers do not wait (`--on-busy error|skip|buffer-one`): nobody parks, and the park's
  nodes would only lengthen the workflow;
- an env the lock registers in runs n8n in queue mode (`n8n.queueMode: true`) and a webhook
  waits for its answer: n8n answers such a caller with an empty 200 when its job ends at the
  park (a debounce in front answers every caller before the lock, so its waiters may park);
- the webhook answers with its last node and the answer cannot be given by Lock Respond
  instead (a binary answer, a response code from an expression, …: `respond.py`).

The plan says which of these kept the waiters awake, and how to change it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from n8n_lockkit.rewrite.graphs import graph
from n8n_lockkit.rewrite.wrapping.compose import compose
from n8n_lockkit.rewrite.wrapping.configs import LockConfig, Rates, WrapError
from n8n_lockkit.rewrite.wrapping.debounce_wrap import DebounceConfig
from n8n_lockkit.workspace.envconfig import EnvFile

WEBHOOK = "n8n-nodes-base.webhook"
# A webhook in these modes waits for an answer that a parked execution cannot give in queue mode.
ANSWERS_AFTER_RUN = ("responseNode", "lastNode")
_HOW = "docs/parking.md"


def _awaited_webhooks(body: dict[str, Any]) -> list[str]:
    return [
        str(node.get("name"))
        for node in graph.nodes(body)
        if node.get("type") == WEBHOOK
        and graph.as_dict(node.get("parameters")).get("responseMode", "onReceived")
        in ANSWERS_AFTER_RUN
    ]


def _queue_envs(envs: Sequence[EnvFile]) -> list[str]:
    return [env.name for env in envs if graph.as_dict(env.data.get("n8n")).get("queueMode") is True]


def default_park(
    body: dict[str, Any],
    key: str,
    lock: LockConfig,
    rate: Rates,
    guard: LockConfig | None,
    debounce: DebounceConfig | None,
    envs: Sequence[EnvFile],
    *,
    own_cleanup: bool,
) -> tuple[LockConfig, list[str]]:
    """`lock` with `park` set as a new lock's waiters wait by default, and the plan's note
    when they wait awake for a reason the user may want to know."""
    if lock.via_subworkflow or lock.on_busy != "wait":
        return replace(lock, park=False), []
    awaited = [] if debounce is not None else _awaited_webhooks(body)
    queue = _queue_envs(envs)
    if awaited and queue:
        return replace(lock, park=False), [
            f"waiters wait awake: env {queue[0]} runs n8n in queue mode, where a webhook that "
            f"waits for its answer ({awaited[0]!r}) would get an empty 200 if its waiter "
            f"parked; each waiter holds a worker job slot while it waits ({_HOW})"
        ]
    parked = replace(lock, park=True)
    try:
        compose(body, key, parked, rate, guard, debounce, own_cleanup=own_cleanup)
    except WrapError as refusal:
        return replace(lock, park=False), [
            "waiters wait awake (each holds an n8n concurrency slot while it waits): a parked "
            f"waiter's webhook is answered by Lock Respond, and {refusal.message}; to let them "
            f"park, answer with a Respond to Webhook node of your own ({_HOW})"
        ]
    return parked, []
