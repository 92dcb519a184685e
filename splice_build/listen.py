"""The listening TCP socket both servers bind before uvicorn starts (``splice registry serve``,
``splice mcp --http``).

Every accepted connection must run with ``TCP_NODELAY``: on a kept-alive connection a small
response written in two pieces (head, then body) otherwise waits for the client's delayed ACK,
a ~40 ms floor on every request after the first (docs/registry.md#latency). asyncio sets the
option on each accepted socket only when the listening socket was created with
``proto=IPPROTO_TCP`` (a plain ``socket(family, SOCK_STREAM)`` has proto 0, and accepted sockets
inherit it), so the socket is created that way; the option is also set on the listening socket,
which Linux copies to every connection it accepts.
"""

from __future__ import annotations

import errno
import os
import socket

from splice_build.errors import UsageError

BACKLOG = 128

# Every listening socket this process made, for ``close_in_child``.
_LISTENING: list[socket.socket] = []


def listening_socket(host: str, port: int) -> socket.socket:
    """A bound, listening, inheritable TCP socket whose accepted connections have TCP_NODELAY."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
        sock.set_inheritable(True)
    except BaseException:
        sock.close()
        raise
    _LISTENING.append(sock)
    return sock


def cannot_listen(host: str, port: int, exc: OSError) -> UsageError:
    """``USAGE`` for an address a server cannot listen on (in use, not this machine's, not
    resolvable). An address in use says what to do: the message alone left a user who
    started a second server on the default port to guess."""
    hint = None
    if exc.errno == errno.EADDRINUSE:
        hint = (
            "Another process listens there: stop it, or choose another --port (0 picks a free one)."
        )
    return UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", hint=hint)


def close_in_child() -> None:
    """Close this process's listening sockets, in a child between fork and exec (a sandbox's
    ``preexec_fn``, runtime/isolation/child.py). A child holds every descriptor of the server
    until its exec closes them, some milliseconds while it builds its namespaces and file
    view: a ``splice mcp --http`` killed outright (SIGKILL, the OOM killer) still had its port
    accepting then, and a proxy's next POST, connected to a socket nobody would answer, came
    back 502 instead of going to the other instance (tests/deploy). A closed socket's
    ``fileno()`` is -1, so a descriptor number reused since is never closed here."""
    for sock in _LISTENING:
        fd = sock.fileno()
        if fd >= 0:
            os.close(fd)
