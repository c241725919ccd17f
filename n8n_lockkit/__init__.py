"""n8nlock: Redis locks and rate limits for n8n, built from n8n's own nodes.

The Python API is internal; the command line is the interface. The version is written once,
in pyproject.toml; `__version__` reads it from the installed package's metadata when asked
(not at import: shell completion runs n8nlock on every Tab).
"""

from __future__ import annotations

DISTRIBUTION = "n8n-lockkit"


def __getattr__(name: str) -> str:
    if name == "__version__":
        from importlib.metadata import version

        return version(DISTRIBUTION)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
