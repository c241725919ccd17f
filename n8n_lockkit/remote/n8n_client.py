"""A small client for n8n's public REST API (/api/v1). Knows nothing of workspaces.

Every failure becomes a `RemoteError` that says what to do. The API key goes in a header and
nowhere else: never into a message, a log line or a file.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import requests
from urllib3.exceptions import NameResolutionError, NewConnectionError

from n8n_lockkit.errors import RemoteError

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# A POST that creates something may have succeeded before a 5xx; only these are safe to resend.
POST_RETRY_STATUSES = frozenset({429, 503})
# Asked in turn to probe a webhook with a method it does not take.
PROBE_METHODS = ("PUT", "POST", "PATCH", "DELETE")
REFUSED_HINT = "run `n8nlock validate` on the workflow; n8n's message says what it refused"
# A publish refusal is about the instance's view of a saved workflow (missing credentials,
# unpublished sub-workflows), which validate cannot see.
PUBLISH_REFUSED_HINT = (
    "n8n's message names what stops it from publishing; fix that in the workflow or on n8n"
)


class N8nNotFound(RemoteError):
    """The instance has no object with that id."""


class N8nAuthError(RemoteError):
    """The API key was refused (401) or lacks a scope (403)."""


class N8nServerError(RemoteError):
    """n8n kept failing (5xx) or throttling (429) after the retries."""


class WebhookNotLive(RemoteError):
    """A just-published webhook did not start answering."""


class N8nRejected(RemoteError):
    """n8n refused the request (400, 409, …) and said why."""

    def __init__(self, message: str, *, status: int, server_message: str, hint: str) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.server_message = server_message


def _server_message(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300] or response.reason
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return str(body)[:300]


class N8nClient:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        retries: int = 4,
        backoff: float = 0.5,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._session = session or requests.Session()
        self._session.headers.update({"X-N8N-API-KEY": api_key, "Accept": "application/json"})
        self._timeout = timeout
        self._retries = retries
        self._backoff = backoff
        self._sleep = sleep

    def close(self) -> None:
        self._session.close()

    # workflows
    def get_workflow(self, workflow_id: str) -> dict[str, Any]:
        return self._json("GET", f"/workflows/{workflow_id}", what=f"workflow {workflow_id}")

    def list_workflows(self) -> list[dict[str, Any]]:
        """Every workflow on the instance, page by page (250 a page, the API's maximum)."""
        found: list[dict[str, Any]] = []
        params = {"limit": "250", "excludePinnedData": "true"}
        while True:
            page = self._json("GET", "/workflows", params=params, what="workflow list")
            found.extend(w for w in page.get("data") or [] if isinstance(w, dict))
            cursor = page.get("nextCursor")
            if not cursor:
                return found
            params = {**params, "cursor": str(cursor)}

    def create_workflow(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._json("POST", "/workflows", json=body, what=f"workflow {body.get('name')!r}")

    def update_workflow(self, workflow_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._json(
            "PUT", f"/workflows/{workflow_id}", json=body, what=f"workflow {workflow_id}"
        )

    def activate_workflow(self, workflow_id: str) -> dict[str, Any]:
        # /activate is "publish" on 2.x (and still accepted there); 1.x knows only /activate.
        return self._json(
            "POST",
            f"/workflows/{workflow_id}/activate",
            json={},
            what=f"workflow {workflow_id}",
            refused_hint=PUBLISH_REFUSED_HINT,
        )

    def wait_for_webhook(self, path: str, methods: Sequence[str], timeout: float = 30.0) -> None:
        """Wait until a just-published webhook answers (n8n 2.x registers it asynchronously).

        The probe asks with an HTTP method the webhook does not take, which never runs the
        workflow: a registered path answers "... Did you mean to make a GET request?". A
        webhook that takes every method cannot be probed, and is not waited for.
        """
        probe = next((m for m in PROBE_METHODS if m not in methods), None)
        if probe is None:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                # A bare request: the API key has no business at a webhook.
                response = requests.request(
                    probe, f"{self.base_url}/webhook/{path}", timeout=self._timeout
                )
            except requests.RequestException:
                response = None
            if response is not None and "Did you mean to make a" in response.text:
                return
            self._sleep(0.1)
        raise WebhookNotLive(
            f"the webhook {'/'.join(methods)} /webhook/{path} did not come up within {timeout:g} s",
            hint="the workflow is published; check n8n's log for a webhook path conflict",
        )

    # executions
    def get_execution(self, execution_id: str) -> dict[str, Any]:
        """One execution's summary (`status`, `workflowId`, …), without its data.

        Raises N8nNotFound when n8n has no such execution (finished and pruned, or deleted).
        Ask per id: the list endpoint has left out `waiting` executions (n8n issue #14748).
        """
        return self._json(
            "GET",
            f"/executions/{execution_id}",
            params={"includeData": "false"},
            what=f"execution {execution_id}",
        )

    # credentials
    def credential_schema(self, credential_type: str) -> dict[str, Any]:
        return self._json(
            "GET", f"/credentials/schema/{credential_type}", what=f"{credential_type} schema"
        )

    def get_credential(self, credential_id: str) -> dict[str, Any]:
        """A credential's id, name and type, never its data (n8n 2.x; 1.x answers 405). Asked
        once: it only checks what the user gave, and a caller goes on without the answer."""
        return self._json(
            "GET",
            f"/credentials/{credential_id}",
            what=f"credential with id {credential_id!r}",
            once=True,
        )

    def create_credential(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._json("POST", "/credentials", json=body, what=f"credential {body['name']!r}")

    def _json(
        self,
        method: str,
        path: str,
        *,
        what: str,
        refused_hint: str = REFUSED_HINT,
        once: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        response = self._request(
            method, path, what=what, refused_hint=refused_hint, once=once, **kwargs
        )
        try:
            body = response.json()
        except ValueError as err:
            raise RemoteError(
                f"n8n answered {method} {path} with something that is not JSON",
                hint=f"is {self.base_url} really an n8n instance?",
            ) from err
        if not isinstance(body, dict):
            raise RemoteError(f"n8n answered {method} {path} with unexpected JSON")
        return body

    def _request(
        self, method: str, path: str, *, what: str, refused_hint: str, once: bool, **kwargs: Any
    ) -> requests.Response:
        url = f"{self.base_url}/api/v1{path}"
        retry_on = POST_RETRY_STATUSES if method == "POST" else RETRY_STATUSES
        retries = 0 if once else self._retries
        for attempt in range(retries + 1):
            try:
                response = self._session.request(
                    method, url, timeout=self._timeout, allow_redirects=False, **kwargs
                )
            except requests.RequestException as err:
                # Nothing listens there, or the name does not resolve: asking again in a few
                # seconds would only delay the answer. A timeout or a dropped connection may
                # pass: a GET is asked again.
                if attempt < retries and method == "GET" and not _no_connection(err):
                    self._sleep(self._backoff * 2**attempt)
                    continue
                raise RemoteError(
                    f"cannot reach n8n at {self.base_url} ({_why_unreachable(err)})",
                    hint="is n8n running? check n8n.url in the env file",
                ) from err
            if response.status_code in retry_on and attempt < retries:
                self._sleep(_retry_after(response) or self._backoff * 2**attempt)
                continue
            return self._checked(response, method, path, what, refused_hint, attempt + 1)
        raise AssertionError("unreachable: the loop returns or raises")

    def _checked(
        self,
        response: requests.Response,
        method: str,
        path: str,
        what: str,
        refused_hint: str,
        attempts: int,
    ) -> requests.Response:
        status = response.status_code
        if status < 300:
            return response
        message = _server_message(response)
        if status in (401, 403):
            raise N8nAuthError(
                f"n8n refused the API key ({status}: {message})",
                hint="check the key in the variable the env's n8n.apiKeyEnv names; it needs "
                "the workflow, credential and execution scopes",
            )
        if status == 404:
            raise N8nNotFound(f"n8n has no {what} ({method} {path}: 404 {message})")
        if 300 <= status < 400:
            raise RemoteError(
                f"n8n redirected {method} {path} ({status})",
                hint="set n8n.url to the instance's final address (scheme and path included)",
            )
        if status >= 500 or status == 429:
            raise N8nServerError(
                f"n8n failed {method} {path} with {status} ({message}) after "
                f"{attempts} attempt{'s' if attempts > 1 else ''}",
                hint="the instance is overloaded or broken; try again later",
            )
        raise N8nRejected(
            f"n8n rejected {what} ({status}): {message}",
            status=status,
            server_message=message,
            hint=refused_hint,
        )


def _reason(err: requests.RequestException) -> object:
    """What urllib3 says went wrong under a requests error (its MaxRetryError's reason)."""
    cause = err.args[0] if err.args else None
    return getattr(cause, "reason", cause)


def _no_connection(err: requests.RequestException) -> bool:
    """The connection was refused or the host name does not resolve."""
    return isinstance(_reason(err), NewConnectionError)


def _why_unreachable(err: requests.RequestException) -> str:
    reason = _reason(err)
    if isinstance(reason, NameResolutionError):
        return "its host name does not resolve"
    if isinstance(reason, NewConnectionError):
        return "connection refused" if "refused" in str(reason).lower() else "no connection"
    if isinstance(err, requests.Timeout):
        return "no answer in time"
    return type(err).__name__


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    try:
        return min(float(value), 30.0)
    except ValueError:
        return None
