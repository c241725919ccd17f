"""An in-memory stand-in for n8n's public API, for CLI tests of error mapping and ordering.

The real behaviour of push is proven against a real n8n in tests/e2e; this fake only answers
the calls push makes, and records them.
"""

from __future__ import annotations

import json
import re
from typing import Any

import responses
from requests import PreparedRequest

BASE = "http://n8n.test"
API_KEY = "test-api-key-not-for-printing"
Reply = tuple[int, dict[str, str], str]


class FakeN8n:
    def __init__(self) -> None:
        self.workflows: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.next_id = 1
        self.refuses_internal_triggers = False  # n8n 1.x will not activate sub-workflows
        api = re.compile(rf"{re.escape(BASE)}/api/v1/.*")
        for method in ("GET", "POST", "PUT"):
            responses.add_callback(method, api, callback=self.handle)
        responses.add_callback(
            "PUT", re.compile(rf"{re.escape(BASE)}/webhook/.*"), callback=self.webhook_probe
        )
        responses.add_callback(
            "POST", re.compile(rf"{re.escape(BASE)}/webhook/.*"), callback=self.webhook_probe
        )

    @property
    def writes(self) -> list[tuple[str, str]]:
        return [c for c in self.calls if c[0] != "GET"]

    def handle(self, request: PreparedRequest) -> Reply:
        path = (request.path_url or "").removeprefix("/api/v1")
        method = str(request.method)
        self.calls.append((method, path))
        body = json.loads(request.body) if request.body else None
        if request.headers.get("X-N8N-API-KEY") != API_KEY:
            return self.reply(401, {"message": "unauthorized"})
        if method == "POST" and path == "/workflows":
            return self.create(body or {})
        if method == "POST" and path == "/credentials":
            name = (body or {}).get("name")
            return self.reply(200, {"id": "cred-1", "name": name, "type": "redis"})
        if method == "GET" and path == "/credentials/schema/redis":
            props = {"host": {"type": "string"}, "port": {"type": "number"}}
            return self.reply(200, {"properties": props, "required": []})
        return self.existing(method, path, body)

    def create(self, body: dict[str, Any]) -> Reply:
        if "active" in body:
            return self.reply(400, {"message": "request/body/active is read-only"})
        workflow_id = f"wf{self.next_id}"
        self.next_id += 1
        self.workflows[workflow_id] = {**body, "id": workflow_id, "active": False}
        return self.reply(200, self.workflows[workflow_id])

    def existing(self, method: str, path: str, body: dict[str, Any] | None) -> Reply:
        match = re.fullmatch(r"/workflows/([^/]+)(/activate)?", path)
        if not match or match.group(1) not in self.workflows:
            return self.reply(404, {"message": "Not Found"})
        stored = self.workflows[match.group(1)]
        if match.group(2):
            types = {n["type"] for n in stored["nodes"]}
            if self.refuses_internal_triggers and "n8n-nodes-base.webhook" not in types:
                return self.reply(400, {"message": "has no node to start the workflow"})
            stored["active"] = True
        elif method == "PUT" and body is not None:
            stored.update(body)
        return self.reply(200, stored)

    def webhook_probe(self, request: PreparedRequest) -> Reply:
        return self.reply(404, {"message": "Did you mean to make a POST request?"})

    @staticmethod
    def reply(status: int, body: dict[str, Any]) -> Reply:
        return status, {"Content-Type": "application/json"}, json.dumps(body)
