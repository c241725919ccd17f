"""The test bed's child processes do not outlive a run that is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STARTER = """
import sys, time
from pathlib import Path
from testbed.process import start_process
child = start_process("sleeper", ["sleep", "60"], cwd=Path("."), env={"PATH": "/usr/bin:/bin"},
                      log_path=Path(sys.argv[1]))
print(child.pid, flush=True)
time.sleep(60)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # a zombie is gone
    except (ProcessLookupError, FileNotFoundError):
        return False


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_test_bed_killed_by_timeout_stops_the_processes_it_started(tmp_path: Path) -> None:
    # timeout(1) sends SIGTERM: before, Python died at once and left n8n running for hours.
    run = subprocess.Popen([sys.executable, "-c", STARTER, str(tmp_path / "log")], cwd=ROOT,
                           stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert run.stdout is not None
    child = int(run.stdout.readline())
    assert alive(child)
    run.send_signal(signal.SIGTERM)
    assert run.wait(timeout=20) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the sleeper outlived the killed run"


def test_a_hung_queue_mode_caller_s_report_names_the_executions_main_heard_no_end_of() -> None:
    from testbed.queue import unheard_executions

    logs = {
        "n8n 2.41.1": "Enqueued execution 7 (job 7)\nEnqueued execution 8 (job 9)\n"
        "Enqueued execution 9 (job 8)\nExecution 7 (job 7) finished\n",
        "worker-1": "Worker started execution 7 (job 7)\nWorker finished execution 7 (job 7)\n"
        "Worker started execution 8 (job 9)\nWorker finished execution 8 (job 9)\n",
    }
    assert unheard_executions(logs) == [
        "queue: 3 enqueued, 2 with no end heard by main",
        "  execution 8: worker worker-1: finished",
        "  execution 9: worker never started it",
    ]
    assert unheard_executions({"n8n 2.41.1": "Execution 7 finished"}) == []  # regular mode
