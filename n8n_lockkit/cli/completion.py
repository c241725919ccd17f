"""Values for shell completion: the workspace's workflow keys and env names, the primitives.

The shell runs n8nlock on every Tab, before any command runs: these read the workspace the
command line names (--workspace, else the one above the current folder) and never fail.
"""

from __future__ import annotations

from pathlib import Path

import click
from click.shell_completion import CompletionItem

from n8n_lockkit.errors import LockkitError
from n8n_lockkit.workspace.layout import Workspace


def _workspace(ctx: click.Context) -> Workspace | None:
    option = ctx.find_root().params.get("workspace")
    try:
        return Workspace.chosen(Path(option) if option else None)
    except LockkitError:
        return None


def _matching(names: list[str], incomplete: str) -> list[CompletionItem]:
    return [CompletionItem(name) for name in names if name.startswith(incomplete)]


def workflow_keys(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The key of every workflow file in workflows/ (docs/concepts.md#workflow-files)."""
    workspace = _workspace(ctx)
    try:
        keys = [] if workspace is None else workspace.workflow_keys()
    except LockkitError:
        return []  # two files for one key: the command itself says so
    return _matching(keys, incomplete)


def env_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """NAME of every envs/NAME.yml."""
    workspace = _workspace(ctx)
    return [] if workspace is None else _matching(workspace.env_names(), incomplete)


def primitive_names(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Every primitive `copy-primitive` can copy."""
    from n8n_lockkit.primitives.catalogue import PRIMITIVES

    return _matching(list(PRIMITIVES), incomplete)
