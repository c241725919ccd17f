"""An in-memory stand-in for n8n's public API, for CLI tests of push's decisions.

It answers the calls push makes, records them, and copies the behaviour push depends on, as
measured on n8n 2.41.1 and 1.123.81 (tests/e2e proves push against the real ones):
- a workflow is created unpublished; an update of a published workflow republishes it;
- 2.x refuses to publish a workflow whose Execute Workflow node calls an unpublished one,
  and when that happens on update it keeps the update as a draft (400);
- 1.x refuses to activate a workflow whose only triggers are Execute Workflow / Error Trigger;
- an old-style credential reference `{"type": "Name"}` is stored as `{"id": null, "name"}`;
- settings left at "DEFAULT" are dropped on update, and node ids are added;
- a workflow carries what the API adds (id, versionId, active, meta, timestamps, tags,
  shared, pinData), and `GET /workflows` lists them a page at a time (`nextCursor`).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import responses
from requests import PreparedRequest

BASE = "http://n8n.test"
API_KEY = "test-api-key-not-for-printing"
Reply = tuple[int, dict[str, str], str]
INTERNAL_TRIGGERS = {"n8n-nodes-base.executeWorkflowTrigger", "n8n-nodes-base.errorTrigger"}


class FakeN8n:
    def __init__(self, major: int = 2) -> None:
        self.major = major
        self.workflows: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.next_id = 1
        self.page_size = 250  # the API's maximum; tests lower it to see pull follow pages
        # workflow name -> n8n's message, to refuse creating or publishing that workflow
        self.refuse_create: dict[str, str] = {}
        self.refuse_publish: dict[str, str] = {}
        # Credentials made in n8n's editor (as if), by id; those POSTed are added.
        self.credentials: dict[str, dict[str, Any]] = {
            key: {"id": key, "name": "Redis dev", "type": "redis"} for key in ("c1", "cred-9")
        }
        api = re.compile(rf"{re.escape(BASE)}/api/v1/.*")
        for method in ("GET", "POST", "PUT"):
            responses.add_callback(method, api, callback=self.handle)
        for method in ("PUT", "POST"):
            responses.add_callback(
                method, re.compile(rf"{re.escape(BASE)}/webhook/.*"), callback=self.webhook_probe
            )

    @property
    def writes(self) -> list[tuple[str, str]]:
        return [c for c in self.calls if c[0] != "GET"]

    def by_name(self, name: str) -> dict[str, Any]:
        return next(w for w in self.workflows.values() if w["name"] == name)

    def published(self) -> set[str]:
        return {w["name"] for w in self.workflows.values() if w["active"]}

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
            self.credentials["cred-1"] = {"id": "cred-1", "name": name, "type": "redis"}
            return self.reply(200, self.credentials["cred-1"])
        if method == "GET" and (found := re.fullmatch(r"/credentials/([^/]+)", path)):
            if self.major == 1:
                return self.reply(405, {"message": "GET method not allowed"})
            credential = self.credentials.get(found.group(1))
            return self.reply(
                *((200, credential) if credential else (404, {"message": "Not Found"}))
            )
        if method == "GET" and path == "/credentials/schema/redis":
            props = {"host": {"type": "string"}, "port": {"type": "number"}}
            return self.reply(200, {"properties": props, "required": []})
        if method == "GET" and path.split("?")[0] == "/workflows":
            return self.listing(request)
        return self.existing(method, path, body)

    def add(self, workflow: dict[str, Any]) -> str:
        """A workflow made in n8n's editor (as if): returns its id."""
        return str(json.loads(self.create(workflow)[2])["id"])

    def listing(self, request: PreparedRequest) -> Reply:
        query = parse_qs(urlsplit(request.url or "").query)
        start = int(query.get("cursor", ["0"])[0])
        limit = min(int(query.get("limit", ["100"])[0]), self.page_size)
        workflows = list(self.workflows.values())
        end = start + limit
        cursor = str(end) if end < len(workflows) else None
        return self.reply(200, {"data": workflows[start:end], "nextCursor": cursor})

    def create(self, body: dict[str, Any]) -> Reply:
        if "active" in body:
            return self.reply(400, {"message": "request/body/active is read-only"})
        if body.get("name") in self.refuse_create:
            return self.reply(400, {"message": self.refuse_create[body["name"]]})
        workflow_id = f"wf{self.next_id}"
        self.next_id += 1
        stored = {"id": workflow_id, "active": False, "activeVersionId": None, "versionId": ""}
        stored.update(
            createdAt="2026-11-23T08:00:00.000Z",
            updatedAt="2026-11-23T08:00:00.000Z",
            isArchived=False,
            meta={"templateCredsSetupCompleted": True},
            tags=[],
            shared=[{"role": "workflow:owner", "projectId": "p1"}],
            pinData={},
        )
        self.workflows[workflow_id] = stored
        self.save(stored, body)
        return self.reply(200, stored)

    def save(self, stored: dict[str, Any], body: dict[str, Any]) -> None:
        """Store as n8n does: new version on change, ids added, references rewritten."""
        nodes = json.loads(json.dumps(body.get("nodes", [])))
        for index, node in enumerate(nodes):
            node.setdefault("id", f"{stored['id']}-node-{index}")
            for kind, ref in (node.get("credentials") or {}).items():
                if isinstance(ref, str):
                    node["credentials"][kind] = {"id": None, "name": ref}
        changed = (nodes, body.get("connections")) != (
            stored.get("nodes"),
            stored.get("connections"),
        )
        settings = {**stored.get("settings", {}), **body.get("settings", {})}
        stored.update({**body, "nodes": nodes, "settings": settings})
        if stored["versionId"] and "settings" in body:
            for key in ("timezone", "errorWorkflow"):
                if settings.get(key) == "DEFAULT":
                    del settings[key]
        if changed:
            stored["versionId"] = f"v{self.next_id}-{len(self.calls)}"

    def existing(self, method: str, path: str, body: dict[str, Any] | None) -> Reply:
        match = re.fullmatch(r"/workflows/([^/]+)(/activate)?", path)
        if not match or match.group(1) not in self.workflows:
            return self.reply(404, {"message": "Not Found"})
        stored = self.workflows[match.group(1)]
        if match.group(2):
            return self.publish(stored)
        if method == "PUT" and body is not None:
            self.save(stored, body)
            if stored["active"]:
                return self.publish(stored)
        return self.reply(200, stored)

    def publish(self, stored: dict[str, Any]) -> Reply:
        problem = self.publish_refusal(stored)
        if problem:
            return self.reply(400, {"message": problem})
        stored["active"] = True
        stored["activeVersionId"] = stored["versionId"]
        return self.reply(200, stored)

    def publish_refusal(self, stored: dict[str, Any]) -> str:
        if stored["name"] in self.refuse_publish:
            return self.refuse_publish[stored["name"]]
        triggers = {
            n["type"] for n in stored["nodes"] if n["type"].endswith(("Trigger", "webhook"))
        }
        if self.major == 1 and triggers and triggers <= INTERNAL_TRIGGERS:
            return f'Workflow "{stored["name"]}" has no node to start the workflow'
        if self.major == 1:
            return ""
        for node in stored["nodes"]:
            if node["type"] != "n8n-nodes-base.executeWorkflow":
                continue
            called = node["parameters"]["workflowId"]["value"]
            if not self.workflows.get(called, {}).get("activeVersionId"):
                return (
                    f'Cannot publish workflow: Node "{node["name"]}" references workflow '
                    f"{called} which is not published. Please publish all referenced "
                    "sub-workflows first."
                )
        return ""

    def webhook_probe(self, request: PreparedRequest) -> Reply:
        return self.reply(404, {"message": "Did you mean to make a POST request?"})

    @staticmethod
    def reply(status: int, body: dict[str, Any]) -> Reply:
        return status, {"Content-Type": "application/json"}, json.dumps(body)
