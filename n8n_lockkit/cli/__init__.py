"""The command line: parse options, call one library function, print. Nothing else."""

from n8n_lockkit.cli.app import main

__all__ = ["main"]
