"""The user's workspace: where it is, and where its env and workflow files live."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from n8n_lockkit.errors import EnvError, LockkitError, WorkflowFileError, WorkspaceNotFound

ENVS_DIR = "envs"
WORKFLOWS_DIR = "workflows"
# The suffix of the files n8nlock writes; any `*.json` in workflows/ is a workflow file.
WORKFLOW_SUFFIX = ".template.json"
# This checkout's own records (what was last pushed and pulled): never committed.
STATE_DIR = ".n8nlock"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")

_HOW_TO_MAKE_ONE = "run `n8nlock init` to create one here, or pass --workspace PATH"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def check_name(kind: str, name: str) -> str:
    """Env names and workflow keys become file names; keep them to a safe alphabet."""
    if not NAME_PATTERN.match(name):
        raise LockkitError(
            f"invalid {kind} {name!r}",
            hint="use letters, digits, '_' and '-', starting with a letter or digit",
        )
    return name


# A key namespace (`keyPrefix:`) goes into scripts, SCAN patterns and ACL key patterns: no glob
# or quote characters, and none of n8nlock's own prefixes, whose keys it would then look like.
KEY_PREFIX_PATTERN = re.compile(r"[A-Za-z0-9:_-]*")
_OWN_PREFIXES = ("n8n-lock-", "n8n-ratelimit-", "n8nlock:")


def check_key_prefix(prefix: str, where: str) -> str:
    """`prefix` if it can be a key namespace, else an EnvError that says why (`where`: what
    gave it, an option or a file location)."""
    if not KEY_PREFIX_PATTERN.fullmatch(prefix) or prefix.startswith(_OWN_PREFIXES):
        raise EnvError(
            f"{where}: {prefix!r} cannot be a key namespace",
            hint="use letters, digits, ':', '_' and '-' only (e.g. staging:), not starting "
            "with n8n-lock-, n8n-ratelimit- or n8nlock:",
        )
    return prefix


@dataclass(frozen=True)
class Workspace:
    """A folder holding `envs/<env>.yml` and workflow files in `workflows/` (`*.json`)."""

    root: Path

    @classmethod
    def find(cls, start: Path) -> Workspace:
        """The nearest folder at or above `start` that has an `envs/` folder."""
        start = start.resolve()
        for folder in (start, *start.parents):
            if (folder / ENVS_DIR).is_dir():
                return cls(folder)
        raise WorkspaceNotFound(
            f"no n8nlock workspace (a folder with {ENVS_DIR}/) in {start} or any parent",
            hint=_HOW_TO_MAKE_ONE,
        )

    @classmethod
    def at(cls, root: Path) -> Workspace:
        """The workspace named by --workspace, which must exist."""
        if not (root / ENVS_DIR).is_dir():
            raise WorkspaceNotFound(
                f"{root} is not an n8nlock workspace (it has no {ENVS_DIR}/ folder)",
                hint=_HOW_TO_MAKE_ONE,
            )
        return cls(root.resolve())

    @classmethod
    def chosen(cls, option: Path | None) -> Workspace:
        """The workspace --workspace names, else the nearest one above the current folder."""
        return cls.find(Path.cwd()) if option is None else cls.at(option)

    @property
    def envs_dir(self) -> Path:
        return self.root / ENVS_DIR

    @property
    def workflows_dir(self) -> Path:
        return self.root / WORKFLOWS_DIR

    def env_path(self, name: str) -> Path:
        return self.envs_dir / f"{check_name('env name', name)}.yml"

    def env_names(self) -> list[str]:
        return sorted(p.name[: -len(".yml")] for p in self.envs_dir.glob("*.yml") if p.is_file())

    def workflow_path(self, key: str) -> Path:
        """The file of the workflow `key`: the one in workflows/ whose name gives that key,
        else where a new one goes (`workflows/<key>.template.json`)."""
        if not NAME_PATTERN.match(key) and (safe := key_of_name(key)):
            raise LockkitError(
                f"invalid workflow key {key!r}",
                hint=f"{KEY_RULE}: use {safe}",
            )
        check_name("workflow key", key)
        return self.workflow_files_by_key().get(key) or self.new_workflow_path(key)

    def existing_workflow_path(self, key: str) -> Path:
        """The file of the workflow `key`, which must exist."""
        path = self.workflow_path(key)
        if not path.is_file():
            known = ", ".join(self.workflow_keys()) or "none yet"
            raise WorkflowFileError(
                f"no workflow {key!r} in {WORKFLOWS_DIR}/",
                hint=f"workflow keys in this workspace: {known} ({KEY_RULE})",
            )
        return path

    def new_workflow_path(self, key: str) -> Path:
        return self.workflows_dir / f"{check_name('workflow key', key)}{WORKFLOW_SUFFIX}"

    def workflow_files(self) -> list[Path]:
        """Every `*.json` under workflows/; two files that give one key are an error."""
        return sorted(self.workflow_files_by_key().values())

    def workflow_files_by_key(self) -> dict[str, Path]:
        if not self.workflows_dir.is_dir():
            return {}
        found: dict[str, Path] = {}
        for path in sorted(p for p in self.workflows_dir.rglob("*.json") if p.is_file()):
            key = workflow_key(path)
            if key in found:
                first, second = self.relative(found[key]), self.relative(path)
                raise WorkflowFileError(
                    f"{first} and {second} both give the workflow key {key!r}",
                    hint=f"keep one of them, delete or rename the other ({KEY_RULE})",
                )
            found[key] = path
        return found

    def workflow_keys(self) -> list[str]:
        return sorted(self.workflow_files_by_key())

    def relative(self, path: Path) -> str:
        """A path as the user should read it: relative to the workspace when inside it."""
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)


# The rule, as the hints state it; docs/concepts.md#workflow-files says it in full.
KEY_RULE = (
    "a file's key is its name without .template.json or .json, each run of characters other "
    "than letters, digits, _ and - made one _"
)


def key_of_name(name: str) -> str:
    """The key a workflow file name (without `.json`) or a workflow's name gives: kept when
    it is letters, digits, `_` and `-` already; else accents dropped, each run of other
    characters made one `_`, and `_` and `-` trimmed from the ends ("" when nothing is left).

    Example:
        >>> key_of_name("orders"), key_of_name("My workflow (1)"), key_of_name("Café-Sync")
        ('orders', 'My_workflow_1', 'Cafe-Sync')
    """
    if NAME_PATTERN.match(name):
        return name
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    return _UNSAFE.sub("_", plain).strip("_-")


def workflow_key(path: Path) -> str:
    """The key of a workflow file: `orders.template.json` and `orders.json` → `orders`,
    `My workflow (1).json` (a name n8n's download gives) → `My_workflow_1`."""
    stem = path.name.removesuffix(".json").removesuffix(".template")
    key = key_of_name(stem)
    if not key:
        raise WorkflowFileError(
            f"{path.name}: a workflow file name needs a letter or digit to give its key",
            hint=f"rename the file ({KEY_RULE})",
        )
    return key
