"""The user's workspace: where it is, and where its env and workflow files live."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from n8n_lockkit.errors import EnvError, LockkitError, WorkspaceNotFound

ENVS_DIR = "envs"
WORKFLOWS_DIR = "workflows"
WORKFLOW_SUFFIX = ".template.json"
# This checkout's own records (what was last pushed and pulled): never committed.
STATE_DIR = ".n8nlock"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")

_HOW_TO_MAKE_ONE = "run `n8nlock init` to create one here, or pass --workspace PATH"


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
    """A folder holding `envs/<env>.yml` and `workflows/<key>.template.json`."""

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
        return self.workflows_dir / f"{check_name('workflow key', key)}{WORKFLOW_SUFFIX}"

    def workflow_files(self) -> list[Path]:
        if not self.workflows_dir.is_dir():
            return []
        return sorted(p for p in self.workflows_dir.rglob("*.json") if p.is_file())

    def relative(self, path: Path) -> str:
        """A path as the user should read it: relative to the workspace when inside it."""
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)


def workflow_key(path: Path) -> str:
    """`workflows/orders.template.json` → `orders`."""
    name = path.name
    for suffix in (WORKFLOW_SUFFIX, ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name
