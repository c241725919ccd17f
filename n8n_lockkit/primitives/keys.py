"""The Redis keys n8nlock's primitives write, as the operator commands read them.

The JavaScript in `templates/js/` builds the same names; `tests/e2e` proves both agree.

- `n8n-lock-<scope>`: the holder counter (INCR by the winner), with the lock's TTL.
- `n8n-lock-<scope>:meta`: the ownership record (JSON), with the lock's TTL.
- `n8n-lock-<scope>:fence`: a counter, TTL max(7 days, 2 × TTL) refreshed per acquisition.
- `n8nlock:exec:<workflow id>:<execution id>`: hash scope -> lock_id, TTL + 1 hour: the
  cleanup index (execution ids repeat across n8n instances; workflow ids do not).
- `n8nlock:stats:<yyyymmddhh>:<metric>:<scope>`: counters kept 8 days.
- `n8nlock:arrived:<scope>`, `n8nlock:left:<scope>`: waiters count themselves in at their first
  wait and out when they leave (acquired or timed out); waiting = arrived - left. TTL max wait
  + TTL, refreshed by each count.
"""

from __future__ import annotations

LOCK_PREFIX = "n8n-lock-"
META_SUFFIX = ":meta"
FENCE_SUFFIX = ":fence"
INDEX_PREFIX = "n8nlock:exec:"
STATS_PREFIX = "n8nlock:stats:"
ARRIVED_PREFIX = "n8nlock:arrived:"
LEFT_PREFIX = "n8nlock:left:"
STATS_TTL_SECONDS = 8 * 86400
# A release this close to its lock's expiry leaves the key to its TTL instead of deleting it.
RELEASE_MARGIN_SECONDS = 2
# Histogram buckets of the wait before an acquisition (seconds; `inf` above the last).
WAIT_BUCKETS = (0.1, 0.5, 1, 2, 5, 10, 30, 60, 300)


def lock_key(scope: str) -> str:
    return f"{LOCK_PREFIX}{scope}"


def meta_key(scope: str) -> str:
    return f"{LOCK_PREFIX}{scope}{META_SUFFIX}"


def fence_key(scope: str) -> str:
    return f"{LOCK_PREFIX}{scope}{FENCE_SUFFIX}"


def arrived_key(scope: str) -> str:
    return f"{ARRIVED_PREFIX}{scope}"


def left_key(scope: str) -> str:
    return f"{LEFT_PREFIX}{scope}"


def stats_key(hour: str, metric: str, scope: str) -> str:
    return f"{STATS_PREFIX}{hour}:{metric}:{scope}"


def index_key(workflow_id: str, execution_id: str) -> str:
    return f"{INDEX_PREFIX}{workflow_id}:{execution_id}"
