"""What n8n does when a waiting execution is parked and resumed: the facts a lock that parks its
waiters (issue 33) is built on, measured in a real n8n with a concurrency limit.

    .venv/bin/python -m bench.park_probe --versions 2.41.1,1.123.81 [--limit 2]

Regular mode, `N8N_CONCURRENCY_PRODUCTION_LIMIT` = `--limit`. A parker workflow (Webhook,
Respond with `responseNode` → Redis SET its `$execution.resumeUrl` → an in-memory Wait of
`pre_ms` → Wait "On Webhook Call" (limit `limit_s`) → Set → Respond to Webhook) and a resumer
workflow (Webhook → Redis GET the parker's URL → a holding Wait of `hold_ms` → HTTP Request
POST to it, `timeout_ms`, never failing) run side by side. It reports, per version:

- `early`: a resume that arrives before the execution parked (during its in-memory Wait):
  the answer to the resume, and when the parker's caller was answered (after its limit: the
  wake-up was lost, and nothing else went wrong).
- `parked`: a resume of a parked execution: its answer, and how long after it the parker's
  caller got the resumed run's answer.
- `twice`: a second resume of the same execution, after the first: its answer.
- `full`: a resume sent from inside n8n while the resumer itself holds the only free slot:
  how long the resumer's HTTP Request took (does it wait for a slot the resumer holds?), and
  whether the parker still ran afterwards.
- `leak`: after 5 resumes that n8n refused (the execution was running), whether the instance
  still runs as many executions at once as its limit allows (a failed resume leaked a slot
  before n8n #24396).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis
import requests

from bench.harness.results import command, measured, write_report
from bench.harness.session import running_bed
from testbed.client import N8nClient
from testbed.endpoints import N8nInstance

RESULTS = Path(__file__).parent / "results"


def _node(
    name: str, kind: str, version: float, x: int, parameters: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "name": name,
        "type": kind,
        "typeVersion": version,
        "position": [x, 0],
        "parameters": parameters,
        **extra,
    }


def _chain(*names: str) -> dict[str, Any]:
    return {
        a: {"main": [[{"node": b, "type": "main", "index": 0}]]}
        for a, b in itertools.pairwise(names)
    }


def parker(path: str, credential: dict[str, str]) -> dict[str, Any]:
    body = "$('Webhook').first().json.body"
    nodes = [
        _node(
            "Webhook",
            "n8n-nodes-base.webhook",
            2,
            0,
            {"httpMethod": "POST", "path": path, "responseMode": "responseNode", "options": {}},
            webhookId=str(uuid.uuid4()),
        ),
        _node(
            "Register",
            "n8n-nodes-base.redis",
            1,
            200,
            {
                "operation": "set",
                "key": f"={{{{ 'probe-park-' + {body}.id }}}}",
                "value": "={{ $execution.resumeUrl }}",
                "expire": True,
                "ttl": 600,
            },
            credentials={"redis": credential},
        ),
        _node(
            "Before",
            "n8n-nodes-base.wait",
            1.1,
            400,
            {
                "resume": "timeInterval",
                "amount": f"={{{{ ({body}.pre_ms || 10) / 1000 }}}}",
                "unit": "seconds",
            },
            webhookId=str(uuid.uuid4()),
        ),
        _node(
            "Park",
            "n8n-nodes-base.wait",
            1.1,
            600,
            {
                "resume": "webhook",
                "httpMethod": "POST",
                "limitWaitTime": True,
                "limitType": "afterTimeInterval",
                "resumeAmount": f"={{{{ {body}.limit_s || 20 }}}}",
                "resumeUnit": "seconds",
                "options": {},
            },
            webhookId=str(uuid.uuid4()),
        ),
        _node(
            "Answer",
            "n8n-nodes-base.set",
            3.4,
            800,
            {
                "mode": "raw",
                "jsonOutput": "={{ { answer: 'after-park', at: Date.now() } }}",
                "options": {},
            },
        ),
        _node(
            "Respond",
            "n8n-nodes-base.respondToWebhook",
            1.1,
            1000,
            {"respondWith": "firstIncomingItem", "options": {}},
        ),
    ]
    names = [n["name"] for n in nodes]
    return {
        "name": f"probe parker {path}",
        "nodes": nodes,
        "connections": _chain(*names),
        "settings": {"executionOrder": "v1"},
    }


def resumer(path: str, credential: dict[str, str]) -> dict[str, Any]:
    body = "$('Webhook').first().json.body"
    nodes = [
        _node(
            "Webhook",
            "n8n-nodes-base.webhook",
            2,
            0,
            {"httpMethod": "POST", "path": path, "responseMode": "lastNode", "options": {}},
            webhookId=str(uuid.uuid4()),
        ),
        _node(
            "Url",
            "n8n-nodes-base.redis",
            1,
            200,
            {
                "operation": "get",
                "propertyName": "url",
                "key": f"={{{{ 'probe-park-' + {body}.id }}}}",
                "keyType": "string",
                "options": {},
            },
            credentials={"redis": credential},
        ),
        _node(
            "Hold",
            "n8n-nodes-base.wait",
            1.1,
            400,
            {
                "resume": "timeInterval",
                "amount": f"={{{{ ({body}.hold_ms || 10) / 1000 }}}}",
                "unit": "seconds",
            },
            webhookId=str(uuid.uuid4()),
        ),
        _node(
            "Mark",
            "n8n-nodes-base.set",
            3.4,
            600,
            {"mode": "raw", "jsonOutput": "={{ { sent_at: Date.now() } }}", "options": {}},
        ),
        _node(
            "Resume",
            "n8n-nodes-base.httpRequest",
            4.2,
            800,
            {
                "method": "POST",
                "url": "={{ $('Url').first().json.url }}",
                "options": {
                    "timeout": f"={{{{ {body}.timeout_ms || 2000 }}}}",
                    "response": {"response": {"neverError": True, "fullResponse": True}},
                },
            },
            onError="continueRegularOutput",
        ),
        _node(
            "Result",
            "n8n-nodes-base.set",
            3.4,
            1000,
            {
                "mode": "raw",
                "jsonOutput": "={{ { status: $json.statusCode ?? null, "
                "error: $json.error ? String($json.error.message || $json.error) : null, "
                "took_ms: Date.now() - $('Mark').first().json.sent_at } }}",
                "options": {},
            },
        ),
    ]
    names = [n["name"] for n in nodes]
    return {
        "name": f"probe resumer {path}",
        "nodes": nodes,
        "connections": _chain(*names),
        "settings": {"executionOrder": "v1"},
    }


def _post(
    n8n: N8nInstance, path: str, body: dict[str, Any], timeout: float = 120
) -> dict[str, Any]:
    start = time.monotonic()
    response = requests.post(f"{n8n.base_url}/webhook/{path}", json=body, timeout=timeout)
    try:
        payload: Any = response.json()
    except ValueError:
        payload = response.text
    return {
        "status": response.status_code,
        "body": payload,
        "seconds": time.monotonic() - start,
        "done_at": time.time(),
    }


def _resume(url: str) -> dict[str, Any]:
    start = time.monotonic()
    response = requests.post(url, json={}, timeout=60)
    return {
        "status": response.status_code,
        "body": response.text[:200],
        "seconds": round(time.monotonic() - start, 3),
        "at": time.time(),
    }


def _url(client: redis.Redis, key: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = client.get(f"probe-park-{key}")
        if value:
            return str(value)
        time.sleep(0.02)
    raise TimeoutError(f"the parker {key} never registered")


@contextmanager
def _probe_bed(version: str, limit: int) -> Iterator[tuple[N8nInstance, redis.Redis, str, str]]:
    settings = {"N8N_CONCURRENCY_PRODUCTION_LIMIT": str(limit)}
    with running_bed(version, n8n_settings=settings) as bed:
        api = N8nClient(bed.n8n)
        credential = api.create_redis_credential()
        ref = {"id": credential["id"], "name": credential["name"]}
        tag = uuid.uuid4().hex[:6]
        park_path, resume_path = f"probe-park-{tag}", f"probe-resume-{tag}"
        for workflow, path in (
            (parker(park_path, ref), park_path),
            (resumer(resume_path, ref), resume_path),
        ):
            created = api.create_workflow(workflow)
            api.activate_and_wait(created["id"], path, "POST")
        client = redis.Redis.from_url(bed.redis.url, decode_responses=True)
        try:
            yield bed.n8n, client, park_path, resume_path
        finally:
            client.close()
            api.close()


def probe(version: str, limit: int) -> dict[str, Any]:
    out: dict[str, Any] = {"version": version, "limit": limit}
    with _probe_bed(version, limit) as (n8n, client, park, resume), ThreadPoolExecutor(8) as pool:
        # early: resume while the parker still sleeps in memory before its Wait
        call = pool.submit(_post, n8n, park, {"id": "early", "pre_ms": 1500, "limit_s": 6})
        early = _resume(_url(client, "early"))
        answered = call.result()
        out["early"] = {
            "resume": early,
            "caller": answered,
            "caller_after_resume_s": round(answered["done_at"] - early["at"], 2),
        }
        # parked: resume once it parked; then a second resume
        call = pool.submit(_post, n8n, park, {"id": "parked", "pre_ms": 10, "limit_s": 30})
        url = _url(client, "parked")
        time.sleep(1.0)
        first = _resume(url)
        answered = call.result()
        second = _resume(url)
        out["parked"] = {
            "resume": first,
            "caller": answered,
            "caller_after_resume_s": round(answered["done_at"] - first["at"], 3),
        }
        out["twice"] = {"resume": second}
        out["full"] = _full(n8n, client, park, resume, pool, limit)
        out["leak"] = _leak(n8n, client, park, resume, pool, limit)
    return out


def _full(
    n8n: N8nInstance,
    client: redis.Redis,
    park: str,
    resume: str,
    pool: ThreadPoolExecutor,
    limit: int,
) -> dict[str, Any]:
    """Every slot taken: `limit` - 1 resumers hold, one more resumes the parker from inside."""
    call = pool.submit(_post, n8n, park, {"id": "full", "pre_ms": 10, "limit_s": 40})
    _url(client, "full")
    time.sleep(1.0)  # parked: it holds no slot now
    fillers: list[Future[dict[str, Any]]] = [
        pool.submit(_post, n8n, resume, {"id": "none", "hold_ms": 4000}) for _ in range(limit - 1)
    ]
    time.sleep(0.5)
    resumed = _post(n8n, resume, {"id": "full", "hold_ms": 10, "timeout_ms": 2000})
    answered = call.result()
    for filler in fillers:
        filler.result()
    return {
        "resumer": resumed,
        "caller": answered,
        "caller_after_resumer_s": round(answered["done_at"] - resumed["done_at"], 2),
    }


def _leak(
    n8n: N8nInstance,
    client: redis.Redis,
    park: str,
    resume: str,
    pool: ThreadPoolExecutor,
    limit: int,
) -> dict[str, Any]:
    """5 resumes refused (the execution runs its in-memory Wait), then `limit` holders at once:
    do they all run together (no slot lost), or one after another?"""
    call = pool.submit(_post, n8n, park, {"id": "leak", "pre_ms": 3000, "limit_s": 2})
    url = _url(client, "leak")
    refused = [_resume(url)["status"] for _ in range(5)]
    call.result()
    started = time.monotonic()
    holders = [
        pool.submit(_post, n8n, resume, {"id": "none", "hold_ms": 2000}) for _ in range(limit)
    ]
    for holder in holders:
        holder.result()
    wall = time.monotonic() - started
    return {"refused": refused, "holders_wall_s": round(wall, 2), "slots_kept": wall < 2 * 2.0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--versions", default="2.41.1,1.123.81")
    parser.add_argument("--limit", type=int, default=2)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    found = [probe(v.strip(), args.limit) for v in args.versions.split(",") if v.strip()]
    text = measured(command("park_probe", sys.argv[1:] if argv is None else argv))
    text += "\n```json\n" + json.dumps(found, indent=2, default=str) + "\n```\n"
    print(text)
    write_report(args.results, f"park_probe-{time.strftime('%Y-%m-%d')}", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
