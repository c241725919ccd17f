"""Our error types: each carries a message, a hint and an exit code.

Library modules raise these; `cli/app.py` (LockkitGroup) turns them into output in exactly
one place. Anything else that escapes is a bug and keeps its traceback.
"""

from __future__ import annotations

import enum
from typing import ClassVar


class ExitCode(enum.IntEnum):
    """Exit codes, documented in docs/exit-codes.md."""

    OK = 0
    FINDINGS = 1  # validate found errors
    USAGE = 2  # click's own usage errors
    INPUT = 3  # a file, env or argument we were given is wrong or missing
    REMOTE = 4  # the n8n instance refused or could not be reached
    WRITE = 5  # a file could not be written (permissions, read-only, escapes the workspace)
    DRAIN = 6  # push refused: callers of an older lock format it replaces still hold or wait
    CONFLICT = 7  # pull refused: a local file changed since it was synced, and n8n's differs


class LockkitError(Exception):
    """An expected failure with something the user can do about it."""

    exit_code: ClassVar[ExitCode] = ExitCode.INPUT

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class WorkspaceNotFound(LockkitError):
    """No folder with `envs/` above the start directory."""


class EnvError(LockkitError):
    """An env file is missing, unreadable, malformed or fails its schema."""


class EnvSelectionError(LockkitError):
    """`--env` was needed and missing, or names an env that does not exist."""


class OptionError(LockkitError):
    """A command's option has a value it cannot take (a number below its minimum, a word not
    among its choices), contradicts another option, or is missing where it is needed."""


class WorkflowFileError(LockkitError):
    """A workflow file is missing or is not valid workflow JSON."""


class PrimitiveNotFound(LockkitError):
    """An unknown primitive name."""


class TemplateError(LockkitError):
    """A primitive template failed to render (a bug in our templates, or a bad parameter)."""


class PlaceholderError(LockkitError):
    """An `{{@:env:…}}` placeholder does not resolve in the chosen env."""


class WriteError(LockkitError):
    """A file could not be written; nothing was changed."""

    exit_code = ExitCode.WRITE


class RemoteError(LockkitError):
    """The n8n instance refused a request or could not be reached."""

    exit_code = ExitCode.REMOTE
