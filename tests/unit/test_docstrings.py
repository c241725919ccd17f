"""The examples in the package's docstrings (`>>>`) still run as written."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import n8n_lockkit

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(n8n_lockkit.__path__, "n8n_lockkit.")
    if not m.ispkg and m.name != "n8n_lockkit.__main__"  # importing it runs the CLI
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run_as_written(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
