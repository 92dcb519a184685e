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

import socket

BACKLOG = 128


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
    return sock
