"""Open-file limits in tests that open many sockets to a server (tests/mcp/test_http_limits.py,
tests/registry/test_connections.py)."""

from __future__ import annotations

import resource
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def process_open_files(pid: int) -> tuple[int, int]:
    """The (soft, hard) ``RLIMIT_NOFILE`` of process ``pid``, from ``/proc``."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError("no open-files line")


@contextmanager
def room_for_sockets(count: int = 2048) -> Iterator[list[socket.socket]]:
    """Room for ``count`` client sockets in this process; every socket the caller appends to
    the yielded list is closed afterwards, and the limit restored."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < count and (hard == resource.RLIM_INFINITY or hard > soft):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(count, hard), hard))
    opened: list[socket.socket] = []
    try:
        yield opened
    finally:
        for sock in opened:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
