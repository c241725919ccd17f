"""A bad option value of a wrapping command is one `Error:` line and one `Hint:` line, exit 3,
and nothing written: never click's usage block."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_add_lock import locked
from tests.conftest import Invoke, explain, snapshot

__all__ = ["locked"]  # the fixture: a workspace with every primitive and two corpus workflows

LOCK = ("add-lock-to-workflow", "--workflow-key", "order_update", "--scope-expression", "orders")
DEDUPE = ("add-dedupe", "--workflow-key", "order_update", "--key-expression", "nightly",
          "--window-seconds", "600")  # fmt: skip
RATE = ("add-rate-limit", "--workflow-key", "order_update", "--scope-expression", "api",
        "--limit", "5", "--window-seconds", "60")  # fmt: skip
TTL_HINT = (
    "Hint: a lock's release and its renewals refuse within 2 s of its expiry, so a TTL under "
    "5 s leaves the body no time: give the longest the body runs plus a margin (or `default`)"
)


BAD_VALUES = [
    (LOCK, "--max-concurrent 0", "--max-concurrent must be at least 1, not 0"),
    (LOCK, "--ttl-seconds -5", "--ttl-seconds must be at least 5, not -5"),
    (LOCK, "--ttl-seconds 1", "--ttl-seconds must be at least 5, not 1"),
    (LOCK, "--ttl-seconds abc", "--ttl-seconds takes a whole number or `default`, not 'abc'"),
    (LOCK, "--max-wait-seconds 0", "--max-wait-seconds must be at least 1, not 0"),
    (LOCK, "--on-busy never", "--on-busy 'never' is not one of wait, error, skip, buffer-one"),
    (
        LOCK,
        "--fail-fast --on-busy skip",
        "--fail-fast (--on-busy error) contradicts --on-busy skip",
    ),
    (
        LOCK,
        "--renew-before Think --no-renew-before",
        "--no-renew-before contradicts --renew-before",
    ),
    (DEDUPE, "--ttl-seconds 4", "--ttl-seconds must be at least 5, not 4"),
    (DEDUPE, "--window-seconds 0", "--window-seconds must be at least 1, not 0"),
    (DEDUPE, "--window-seconds default", "--window-seconds takes a whole number, not 'default'"),
    (DEDUPE, "--on-duplicate drop", "--on-duplicate 'drop' is not one of skip, error, replay"),
    (RATE, "--limit 0", "--limit must be at least 1, not 0"),
    (RATE, "--window-seconds -1", "--window-seconds must be at least 1, not -1"),
    (RATE, "--max-wait-seconds 0", "--max-wait-seconds must be at least 1, not 0"),
    (RATE, "--algorithm leaky", "--algorithm 'leaky' is not one of sliding, fixed"),
]


@pytest.mark.parametrize(("base", "flags", "error"), BAD_VALUES, ids=[b[1] for b in BAD_VALUES])
def test_a_bad_value_is_our_error_and_hint_not_clicks_usage_block(
    locked: Path, invoke: Invoke, base: tuple[str, ...], flags: str, error: str
) -> None:
    before = snapshot(locked)
    result = invoke(*base, *flags.split(), cwd=locked)
    assert result.exit_code == 3, explain(result)
    error_line, hint_line = result.stderr.splitlines()
    assert error_line == f"Error: {error}"
    assert hint_line.startswith("Hint: ") and "Usage:" not in result.output
    if error.startswith("--ttl-seconds must"):
        assert hint_line == TTL_HINT
    assert snapshot(locked) == before


def test_the_shortest_ttl_is_accepted(locked: Path, invoke: Invoke) -> None:
    result = invoke(*LOCK, "--ttl-seconds", "5", cwd=locked)
    assert result.exit_code == 0, explain(result)
