"""n8n in queue mode (N8NLOCK_TEST_TOPOLOGY=queue): a main process that receives the webhooks
and enqueues executions in Redis (Bull), two `n8n worker` processes that run them, and
PostgreSQL for the state they share. Settings are n8n's documented ones (docs: "Queue mode
environment variables", "Enable queue mode").

Which worker ran an execution is read from the workers' own logs ("Worker started execution
<id> (job <n>)", logged at info level by n8n's job processor).
"""

from __future__ import annotations

import re
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from .endpoints import RedisEndpoint
from .install import N8nInstall
from .n8n_process import n8n_env, start_n8n, wait_until_started
from .ports import free_ports
from .postgres import PostgresEndpoint
from .process import ManagedProcess, start_process
from .progress import Progress, Stopwatch
from .readiness import worker_is_ready

WORKER_COUNT = 2
# Jobs each worker runs at once. Two cores: 2 × 5 keeps the machine responsive while a lock's
# waiters (each holds a slot while it polls) still leave room for the holder. n8n warns below 5.
WORKER_CONCURRENCY = 5
# Main and workers must share it: workers decrypt the credentials the main process stored.
ENCRYPTION_KEY = "n8nlock-test-bed-queue-mode"
# Bull's hold on a running job (renewed every 10 s) and its check for jobs whose worker died:
# n8n's defaults, set explicitly because tests derive the time to detect a dead worker from them.
BULL_LOCK_MS = 60_000
BULL_STALLED_INTERVAL_MS = 30_000
# Finished Bull jobs kept, far more than the executions a test bed runs at once.
KEEP_LAST_JOBS = 1000
_STARTED = re.compile(r"Worker started execution (\d+) \(job")
_WORKER_SAID = re.compile(r"Worker (started|finished) execution (\d+)")
_ENQUEUED = re.compile(r"Enqueued execution (\d+)")
_ENDED = re.compile(r"^Execution (\d+) \(job \d+\) (?:finished|failed)", re.M)


def queue_settings(bull: RedisEndpoint, postgres: PostgresEndpoint) -> dict[str, str]:
    """What main and workers both need: the queue's Redis, the shared database, the key."""
    settings = {
        "EXECUTIONS_MODE": "queue",
        "QUEUE_BULL_REDIS_HOST": bull.host_for_n8n,
        "QUEUE_BULL_REDIS_PORT": str(bull.port_for_n8n),
        "QUEUE_BULL_REDIS_DB": str(bull.db),
        "N8N_ENCRYPTION_KEY": ENCRYPTION_KEY,
        "QUEUE_WORKER_LOCK_DURATION": str(BULL_LOCK_MS),
        "QUEUE_WORKER_STALLED_INTERVAL": str(BULL_STALLED_INTERVAL_MS),
        # n8n 2.x removes a finished job from Bull at once by default; main then never hears of
        # a job that ended before it began to watch (Bull's job.finished() race, OptimalBits/
        # bull#1906) and its webhook caller is never answered. Keeping the last jobs closes it
        # (docs/queue-mode.md). n8n 1.x hard-codes the removal and has no such setting.
        "N8N_EXECUTIONS_QUEUE_KEEP_LAST_COMPLETED": str(KEEP_LAST_JOBS),
        "N8N_EXECUTIONS_QUEUE_KEEP_LAST_FAILED": str(KEEP_LAST_JOBS),
        **postgres.n8n_env(),
    }
    if bull.password:
        settings["QUEUE_BULL_REDIS_PASSWORD"] = bull.password
    return settings


@dataclass
class QueueWorker:
    """One `n8n worker` process, restartable after a crash the test caused."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    log_path: Path
    health_url: str
    process: ManagedProcess | None = None

    def start(self, stack: ExitStack) -> None:
        self.process = start_process(
            self.name, self.argv, cwd=self.cwd, env=self.env, log_path=self.log_path
        )
        stack.callback(self.process.stop)

    def wait_ready(self) -> None:
        assert self.process is not None
        wait_until_started(self.process, self.health_url, self.name, check=worker_is_ready)

    def crash(self) -> None:
        """SIGKILL the worker and its task runner, as a machine or OOM-kill would."""
        assert self.process is not None
        self.process.kill()

    def executions(self) -> set[str]:
        """Ids of the executions this worker started, from its log (all its lives)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return set()
        return set(_STARTED.findall(text))


def unheard_executions(logs: dict[str, str]) -> list[str]:
    """From the test bed's logs (process name → text): the executions main enqueued but logged
    no end of, each with the workers' last word on it. Empty in regular mode (main logs no
    "Enqueued"). It finds a lost end message, not Bull's job.finished() race (queue_settings):
    there main logs the end and still never answers the caller."""
    enqueued: set[str] = set()
    ended: set[str] = set()
    worker_said: dict[str, str] = {}
    for name, text in logs.items():
        enqueued.update(_ENQUEUED.findall(text))
        ended.update(_ENDED.findall(text))
        for verb, execution in _WORKER_SAID.findall(text):
            worker_said[execution] = f"{name}: {verb}"
    if not enqueued:
        return []
    unheard = sorted(enqueued - ended, key=int)
    return [f"queue: {len(enqueued)} enqueued, {len(unheard)} with no end heard by main"] + [
        f"  execution {execution}: worker {worker_said.get(execution, 'never started it')}"
        for execution in unheard[:20]
    ]


@dataclass
class QueueCluster:
    base_url: str
    main: ManagedProcess
    bull: RedisEndpoint
    postgres: PostgresEndpoint
    stack: ExitStack  # stops everything, restarted workers included
    workers: list[QueueWorker] = field(default_factory=list)

    def worker_of(self, execution_id: str | int) -> str | None:
        """The name of the worker that ran `execution_id`, or None if no worker logged it."""
        names = [w.name for w in self.workers if str(execution_id) in w.executions()]
        return names[0] if len(names) == 1 else None

    def restart(self, worker: QueueWorker) -> None:
        worker.start(self.stack)
        worker.wait_ready()


def start_queue_cluster(
    stack: ExitStack,
    install: N8nInstall,
    *,
    bull: RedisEndpoint,
    postgres: PostgresEndpoint,
    workdir: Path,
    progress: Progress,
    concurrency: int = WORKER_CONCURRENCY,
) -> QueueCluster:
    """Main first (it runs the DB migrations), then the workers side by side, each running
    `concurrency` jobs at once (`n8n worker --concurrency`)."""
    shared = queue_settings(bull, postgres)
    main_dir = workdir / "main"
    main_dir.mkdir()
    main, base_url = start_n8n(stack, install, main_dir, progress, extra_env=shared)
    cluster = QueueCluster(base_url=base_url, main=main, bull=bull, postgres=postgres, stack=stack)
    watch = Stopwatch()
    # Workers build `$execution.resumeUrl` from WEBHOOK_URL (else their own N8N_PORT): main's,
    # as n8n's queue-mode docs set it on every process, so that a resume reaches main.
    webhooks = {**shared, "WEBHOOK_URL": f"{base_url}/"}
    for index in range(1, WORKER_COUNT + 1):
        folder, name = workdir / f"worker-{index}", f"worker-{index}"
        worker = _worker(install, folder, name, webhooks, concurrency)
        worker.start(stack)
        cluster.workers.append(worker)
    for worker in cluster.workers:
        worker.wait_ready()
    progress(
        f"{WORKER_COUNT} n8n workers (concurrency {concurrency}) ready after {watch} "
        f"(logs: {workdir}/worker-*/n8n.log)"
    )
    return cluster


def _worker(
    install: N8nInstall, folder: Path, name: str, shared: dict[str, str], concurrency: int
) -> QueueWorker:
    folder.mkdir()
    user_folder = folder / "n8n-home"
    user_folder.mkdir()
    # Its own port (unused by a worker), task-runner broker port and health server port.
    port, broker_port, health_port = free_ports(3)
    env = n8n_env(install, user_folder=user_folder, port=port, broker_port=broker_port)
    env.update(shared)
    env.update(
        QUEUE_HEALTH_CHECK_ACTIVE="true",
        QUEUE_HEALTH_CHECK_PORT=str(health_port),
        N8N_WORKER_SERVER_ADDRESS="127.0.0.1",
    )
    argv = [
        str(install.runtime.node),
        str(install.n8n_bin),
        "worker",
        f"--concurrency={concurrency}",
    ]
    return QueueWorker(
        name=name,
        argv=argv,
        env=env,
        cwd=install.app_dir,
        log_path=folder / "n8n.log",
        health_url=f"http://127.0.0.1:{health_port}",
    )
