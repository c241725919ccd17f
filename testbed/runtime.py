"""The Node.js that runs a given n8n version (and builds its native modules)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

NODE_PACKAGE_VERSION = "24.21.0"  # newest 24.x on the registry; n8n 2.x refuses Node 20


@dataclass(frozen=True)
class NodeRuntime:
    node: Path  # the node executable
    nodedir: Path | None  # headers for node-gyp; None keeps npm's own setting

    @property
    def bin_dir(self) -> Path:
        return self.node.parent

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """Environment in which `node` and `npm` resolve to this runtime."""
        env = dict(os.environ if base is None else base)
        env["PATH"] = f"{self.bin_dir}{os.pathsep}{env.get('PATH', '')}"
        if self.nodedir is not None:
            # Overrides the machine's npmrc `nodedir=/usr` (Node 20 headers) for sqlite3's build.
            env["npm_config_nodedir"] = str(self.nodedir)
        return env


def major_version(version: str) -> int:
    return int(version.split(".", 1)[0])


def needs_node24(n8n_version: str) -> bool:
    return major_version(n8n_version) >= 2


def system_node() -> NodeRuntime:
    """Node 20 from the OS, for n8n 1.x (its engines allow >=20.19)."""
    found = shutil.which("node") or "/usr/bin/node"
    return NodeRuntime(node=Path(found).resolve(), nodedir=None)


def npm_executable() -> str:
    found = shutil.which("npm")
    if found is None:
        raise FileNotFoundError("npm is not on PATH; the local n8n test bed installs n8n with it")
    return found
