"""Fixtures for end-to-end tests: a real Redis and a real n8n per session (see testbed)."""

from __future__ import annotations

import re
import signal
import sys
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import pytest
import redis

from testbed.backend import Backend, choose_backend, deploy_n8n
from testbed.client import N8nClient
from testbed.endpoints import N8nInstance, RedisEndpoint
from testbed.process import live_processes
from testbed.progress import Progress
from testbed.queue import QueueCluster
from testbed.settings import ENV_TOPOLOGY, n8n_version_params
from tests.e2e.lockbed import API_KEY_VARIABLE, REGISTERED_SCOPE, LockBed, build_workspace

E2E_DIR = Path(__file__).parent
# The suites `make test` runs again with N8NLOCK_TEST_TOPOLOGY=queue (marker queue_suite).
QUEUE_SUITE = frozenset(
    {
        "test_lock_primitives.py",
        "test_lock_engine.py",
        "test_rate_limit.py",
        "test_wrapped_corpus.py",
        "test_queue_mode.py",
        "test_lock_stalls.py",
        "test_overlap_policies.py",
        "test_dedupe.py",
        "test_dedupe_composed.py",
        "test_dedupe_replay.py",
        "test_parking_queue.py",
        "test_parking_queue_slots.py",
        "test_debounce.py",
        "test_debounce_composed.py",
    }
)


def pytest_configure(config: pytest.Config) -> None:
    # CI cancels jobs with SIGTERM, which would skip fixture teardown and orphan n8n; turn it
    # into the KeyboardInterrupt that pytest already handles by tearing fixtures down.
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)


def _raise_keyboard_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_DIR in item.path.parents:
            item.add_marker(pytest.mark.e2e)
            if item.path.name in QUEUE_SUITE:
                item.add_marker(pytest.mark.queue_suite)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop anything a fixture failed to stop, and say so: it is a test-bed bug."""
    leftovers = live_processes()
    for process in leftovers:
        process.stop()
    if leftovers:
        names = ", ".join(f"{p.name} (pid {p.pid})" for p in leftovers)
        print(f"\n[n8nlock testbed] BUG: processes still running at exit: {names}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def testbed_progress(pytestconfig: pytest.Config) -> Progress:
    """Prints past pytest's output capture: installs take minutes and CI should see why."""
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")

    def emit(message: str) -> None:
        with capture.global_and_fixture_disabled():
            print(f"[n8nlock testbed] {message}", file=sys.stderr, flush=True)

    return emit


@pytest.fixture(scope="session")
def testbed_backend(testbed_progress: Progress) -> Iterator[Backend]:
    with ExitStack() as stack:
        yield choose_backend(stack, testbed_progress)


@pytest.fixture(scope="session")
def redis_endpoint(
    testbed_backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RedisEndpoint]:
    with ExitStack() as stack:
        yield testbed_backend.redis(stack, tmp_path_factory.mktemp("redis"))


@pytest.fixture(scope="session")
def redis_url(redis_endpoint: RedisEndpoint) -> str:
    return redis_endpoint.url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


@dataclass(frozen=True)
class Deployment:
    """The n8n under test; in queue mode also its workers, PostgreSQL and the queue."""

    instance: N8nInstance
    cluster: QueueCluster | None


@pytest.fixture(scope="session", params=n8n_version_params(), ids=lambda v: f"n8n-{v}")
def n8n_deployment(
    request: pytest.FixtureRequest,
    testbed_backend: Backend,
    redis_endpoint: RedisEndpoint,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Deployment]:
    version: str = request.param
    with ExitStack() as stack:
        workdir = tmp_path_factory.mktemp(f"n8n-{version}-")
        yield Deployment(*deploy_n8n(testbed_backend, stack, version, redis_endpoint, workdir))


@pytest.fixture(scope="session")
def n8n(n8n_deployment: Deployment) -> N8nInstance:
    """A ready n8n (owner claimed, API key minted) that reaches `redis_endpoint`."""
    return n8n_deployment.instance


@pytest.fixture(scope="session")
def queue_cluster(n8n_deployment: Deployment) -> QueueCluster:
    """The workers and database of queue mode; tests that need them skip on one process."""
    if n8n_deployment.cluster is None:
        pytest.skip(f"needs n8n in queue mode: run with {ENV_TOPOLOGY}=queue")
    return n8n_deployment.cluster


@pytest.fixture
def n8n_client(n8n: N8nInstance) -> Iterator[N8nClient]:
    client = N8nClient(n8n)
    yield client
    client.close()


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    """A name no other test uses, for Redis keys, webhook paths and workflow names."""
    test = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40]
    return f"e2e-{test}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def lockbed(
    n8n: N8nInstance, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LockBed]:
    """The primitives and the test callers, pushed to the test-bed n8n by `n8nlock push`."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(API_KEY_VARIABLE, n8n.api_key)
        root = build_workspace(tmp_path_factory.mktemp("lockbed") / "ws", n8n, [REGISTERED_SCOPE])
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        yield LockBed(root, n8n, client)
        client.close()
