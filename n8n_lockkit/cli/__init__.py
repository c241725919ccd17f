"""The command line: parse options, call one library function, print. Nothing else."""

from n8n_lockkit.cli import (
    check_commands,
    ops_commands,
    remote_commands,
    upgrade_commands,
    workspace_commands,
    wrap_commands,
)
from n8n_lockkit.cli.app import main

__all__ = [
    "check_commands",
    "main",
    "ops_commands",
    "remote_commands",
    "upgrade_commands",
    "workspace_commands",
    "wrap_commands",
]
