"""Talking to n8n: first-start bootstrap (owner, API key) and the public API helpers."""

from __future__ import annotations

import time
import uuid
from typing import Any

import requests

from .endpoints import N8nInstance
from .errors import SetupFailed

OWNER = {
    "email": "owner@example.com",
    "firstName": "Test",
    "lastName": "Owner",
    "password": "Passw0rd!Passw0rd",  # n8n wants 8-64 chars with a digit and an uppercase letter
}
TIMEOUT = 30.0
ACTIVATION_TIMEOUT = 15.0
# Part of n8n's 404 for a webhook that exists under another HTTP method (see activate_and_wait).
REGISTERED_HINT = "Did you mean to make a"


class N8nApiError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path} -> HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


def bootstrap_api_key(base_url: str) -> str:
    """Claim a fresh instance (owner setup, login) and mint an API key with every scope."""
    session = requests.Session()
    # The auth cookie is bound to this header; it must stay the same on every /rest call.
    session.headers["browser-id"] = str(uuid.uuid4())
    _rest(session, "POST", f"{base_url}/rest/owner/setup", OWNER)
    login = {"emailOrLdapLoginId": OWNER["email"], "password": OWNER["password"]}
    _rest(session, "POST", f"{base_url}/rest/login", login)
    scopes = _rest(session, "GET", f"{base_url}/rest/api-keys/scopes")
    body = {"label": "n8nlock-tests", "expiresAt": None, "scopes": scopes}
    key = _rest(session, "POST", f"{base_url}/rest/api-keys", body)
    return str(key["rawApiKey"])


def _rest(session: requests.Session, method: str, url: str, body: object = None) -> Any:
    """The `data` member of an internal /rest answer (they wrap everything in it)."""
    response = session.request(method, url, json=body, timeout=TIMEOUT)
    if response.status_code != 200:
        raise SetupFailed(f"{method} {url} -> HTTP {response.status_code}: {response.text[:500]}")
    return response.json()["data"]


def saved_executions(
    instance: N8nInstance,
    workflow_id: str | None,
    *,
    status: str | None = None,
    with_data: bool = True,
    page_size: int = 20,
) -> list[dict[str, Any]]:
    """Every saved execution of `workflow_id` (None: of every workflow; optionally only
    `status`: error, success, ...), newest first, following the public API's cursor."""
    params = {"limit": str(page_size)}
    if workflow_id is not None:
        params["workflowId"] = workflow_id
    if with_data:
        params["includeData"] = "true"
    if status:
        params["status"] = status
    found: list[dict[str, Any]] = []
    while True:
        response = requests.get(
            f"{instance.base_url}/api/v1/executions",
            params=params,
            headers={"X-N8N-API-KEY": instance.api_key},
            timeout=120,
        )
        response.raise_for_status()
        page = response.json()
        found += page["data"]
        if not page.get("nextCursor"):
            return found
        params["cursor"] = page["nextCursor"]


def server_version(base_url: str) -> str:
    """The version n8n reports in its public settings, or "unknown"."""
    try:
        response = requests.get(f"{base_url}/rest/settings", timeout=TIMEOUT)
        return str(response.json()["data"]["versionCli"])
    except (requests.RequestException, ValueError, KeyError, TypeError):
        return "unknown"


class N8nClient:
    """Public API (/api/v1) and webhook calls against one test n8n."""

    def __init__(self, instance: N8nInstance) -> None:
        self.instance = instance
        self.session = requests.Session()
        self.session.headers["X-N8N-API-KEY"] = instance.api_key
        self.session.headers["Accept"] = "application/json"

    def close(self) -> None:
        self.session.close()

    def api(self, method: str, path: str, json: object = None) -> Any:
        """Call /api/v1`path`; return the decoded body, raise N8nApiError on HTTP >= 400."""
        url = f"{self.instance.base_url}/api/v1{path}"
        response = self.session.request(method, url, json=json, timeout=TIMEOUT)
        if response.status_code >= 400:
            raise N8nApiError(method, path, response.status_code, response.text)
        return response.json() if response.content else None

    def create_redis_credential(self, name: str | None = None) -> dict[str, Any]:
        """A `redis` credential pointing at the test Redis as n8n reaches it."""
        data = {
            "host": self.instance.redis_host,
            "port": self.instance.redis_port,
            "database": self.instance.redis_db,
            "password": self.instance.redis_password,
            "ssl": False,
        }
        body = {"name": name or f"redis-{uuid.uuid4().hex[:8]}", "type": "redis", "data": data}
        result: dict[str, Any] = self.api("POST", "/credentials", body)
        return result

    def create_workflow(self, workflow: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.api("POST", "/workflows", workflow)
        return result

    def activate_and_wait(
        self, workflow_id: str, webhook_path: str | None = None, method: str = "GET"
    ) -> float:
        """Activate (publish) a workflow and wait until its webhook is live; return the wait.

        n8n 2.x applies activation ~0.2 s after the API call returns, through an outbox.
        """
        self.api("POST", f"/workflows/{workflow_id}/activate")
        start = time.monotonic()
        while webhook_path is not None and not self.webhook_registered(webhook_path, method):
            if time.monotonic() - start > ACTIVATION_TIMEOUT:
                raise TimeoutError(f"webhook {method} {webhook_path} not live after activation")
            time.sleep(0.05)
        return time.monotonic() - start

    def webhook_registered(self, path: str, method: str = "GET") -> bool:
        """Side-effect-free probe: ask with another method so no execution starts.

        A registered webhook answers 404 "... Did you mean to make a GET request?", an
        unregistered one 404 "The requested webhook ... is not registered.".
        """
        other = "PUT" if method.upper() == "POST" else "POST"
        response = requests.request(other, self.webhook_url(path), timeout=TIMEOUT)
        return REGISTERED_HINT in response.text

    def webhook_url(self, path: str) -> str:
        return f"{self.instance.base_url}/webhook/{path.lstrip('/')}"

    def call_webhook(
        self, path: str, method: str = "GET", json: object = None, timeout: float = 60.0
    ) -> requests.Response:
        # No shared Session: tests call this from many threads at once.
        return requests.request(method, self.webhook_url(path), json=json, timeout=timeout)
