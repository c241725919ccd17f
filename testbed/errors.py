"""Errors raised while setting up the test bed (not by the code under test)."""

from __future__ import annotations


class SetupFailed(RuntimeError):
    """Redis or n8n could not be provided; the message says what to look at."""


class ConfigError(SetupFailed):
    """The N8NLOCK_TEST_* environment variables contradict each other."""
