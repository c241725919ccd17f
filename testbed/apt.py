"""Installing a missing Debian package (redis-server, chromium) without questions."""

from __future__ import annotations

import os
import subprocess

from .errors import SetupFailed


def apt_install(package: str, *, hint: str = "") -> None:
    """Install a Debian package without questions (root, or passwordless sudo).

    `hint` ends the error message: what to do instead when apt-get cannot run.
    """
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [*sudo, "apt-get", "install", "-y", "--no-install-recommends", package]
    # A fresh CI image often has no package lists yet; update only when the first try fails.
    for argv in (install, [*sudo, "apt-get", "update"], install):
        result = subprocess.run(
            argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
        )
        if result.returncode == 0 and argv is install:
            return
    raise SetupFailed(
        f"{package} is not installed and `{' '.join(install)}` failed "
        f"(need root or passwordless sudo): {result.stderr.strip()[-800:]}\n"
        f"Install it yourself (apt-get install {package}){', ' + hint if hint else ''}."
    )
