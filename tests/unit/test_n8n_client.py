from __future__ import annotations

import json

import pytest
import responses

from n8n_lockkit.errors import ExitCode, RemoteError
from n8n_lockkit.remote.n8n_client import (
    N8nAuthError,
    N8nClient,
    N8nNotFound,
    N8nRejected,
    N8nServerError,
    WebhookNotLive,
)

BASE = "http://n8n.test"
KEY = "secret-key-123"


def client() -> N8nClient:
    return N8nClient(BASE, KEY, retries=2, sleep=lambda _: None)


def test_the_key_travels_in_the_header() -> None:
    responses.add("GET", f"{BASE}/api/v1/workflows/1", json={"id": "1"})
    assert client().get_workflow("1") == {"id": "1"}
    assert responses.calls[0].request.headers["X-N8N-API-KEY"] == KEY


@pytest.mark.parametrize("status", [401, 403])
def test_refused_key_says_which_variable_to_check_and_never_shows_the_key(status: int) -> None:
    responses.add(
        "GET", f"{BASE}/api/v1/workflows/1", status=status, json={"message": "unauthorized"}
    )
    with pytest.raises(N8nAuthError) as caught:
        client().get_workflow("1")
    assert caught.value.exit_code is ExitCode.REMOTE
    assert KEY not in caught.value.message and KEY not in (caught.value.hint or "")
    assert "apiKeyEnv" in (caught.value.hint or "")


def test_400_carries_n8n_own_message() -> None:
    responses.add(
        "POST",
        f"{BASE}/api/v1/workflows",
        status=400,
        json={"message": "request/body/active is read-only"},
    )
    with pytest.raises(N8nRejected, match="request/body/active is read-only") as caught:
        client().create_workflow({"name": "x"})
    assert caught.value.status == 400


def test_404_is_not_found() -> None:
    responses.add("GET", f"{BASE}/api/v1/workflows/gone", status=404, json={"message": "Not Found"})
    with pytest.raises(N8nNotFound, match="no workflow gone"):
        client().get_workflow("gone")


def test_5xx_is_retried_then_reported() -> None:
    responses.add("PUT", f"{BASE}/api/v1/workflows/1", status=502, body="bad gateway")
    with pytest.raises(N8nServerError, match="failed PUT /workflows/1 with 502") as caught:
        client().update_workflow("1", {"name": "x"})
    assert len(responses.calls) == 3
    assert "try again later" in (caught.value.hint or "")


def test_a_retry_that_succeeds_is_silent() -> None:
    url = f"{BASE}/api/v1/workflows/1"
    responses.add("GET", url, status=429, headers={"Retry-After": "1"})
    responses.add("GET", url, status=503)
    responses.add("GET", url, json={"id": "1"})
    assert client().get_workflow("1") == {"id": "1"}


def test_create_is_not_resent_after_a_500() -> None:
    responses.add("POST", f"{BASE}/api/v1/workflows", status=500, json={"message": "boom"})
    with pytest.raises(RemoteError):
        client().create_workflow({"name": "x"})
    assert len(responses.calls) == 1


def test_unreachable_host_says_so() -> None:
    with pytest.raises(RemoteError, match=r"cannot reach n8n at http://n8n\.test") as caught:
        client().create_workflow({"name": "x"})
    assert "n8n.url" in (caught.value.hint or "")


def test_activation_posts_an_empty_object() -> None:
    responses.add("POST", f"{BASE}/api/v1/workflows/1/activate", json={"id": "1", "active": True})
    client().activate_workflow("1")
    assert json.loads(responses.calls[0].request.body or b"null") == {}


def test_a_refused_publish_does_not_send_the_user_to_validate() -> None:
    message = 'Cannot publish workflow: Node "Call" references workflow 7 which is not published'
    responses.add(
        "POST", f"{BASE}/api/v1/workflows/1/activate", status=400, json={"message": message}
    )
    with pytest.raises(N8nRejected) as caught:
        client().activate_workflow("1")
    assert caught.value.server_message == message
    assert "validate" not in (caught.value.hint or "")
    assert "publishing" in (caught.value.hint or "")


def test_a_webhook_that_never_answers_is_its_own_error() -> None:
    responses.add("PUT", f"{BASE}/webhook/orders", status=404, json={"message": "not registered"})
    with pytest.raises(WebhookNotLive, match="POST /webhook/orders did not come up"):
        client().wait_for_webhook("orders", ["POST"], timeout=0.05)
    assert responses.calls[0].request.method == "PUT"  # probed with another method


def test_a_multi_method_webhook_is_probed_with_a_method_it_does_not_take() -> None:
    answer = {"message": "Did you mean to make a GET or POST request?"}
    responses.add("PATCH", f"{BASE}/webhook/orders", status=404, json=answer)
    client().wait_for_webhook("orders", ["GET", "POST", "PUT"])
    assert [c.request.method for c in responses.calls] == ["PATCH"]


def test_a_webhook_that_takes_every_probe_method_is_not_waited_for() -> None:
    client().wait_for_webhook("orders", ["PUT", "POST", "PATCH", "DELETE"])
    assert len(responses.calls) == 0
