"""Free TCP ports on the loopback interface."""

from __future__ import annotations

import socket
from contextlib import ExitStack


def free_ports(count: int) -> list[int]:
    """Return `count` distinct ports that were free a moment ago.

    All sockets stay open until every port is picked, so the kernel cannot hand out the same
    port twice; a small race with other programs remains and is accepted for a test bed.
    """
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def free_port() -> int:
    return free_ports(1)[0]
