"""The sockets of one registry request, so that a request past its deadline ends whatever it
is blocked on (docs/registry.md#deadlines).

``HttpRegistryClient`` runs each exchange in a thread of its own and abandons it at the
deadline. Shutting the answer's socket ends a read of the body, but before the head is
parsed there is no answer to reach the socket through: a registry that keeps sending
``100 Continue`` heads (which http.client skips, however many), or a header line a byte at a
time, never lets a read wait out its socket timeout, and the abandoned thread read on for as
long as the registry liked, holding its socket, in every long-lived process (the SDK) that
asked. Here every connection made or used for an exchange is held by it (``Exchange``), so
abandoning the exchange shuts them, and one made after that is shut as it is made.

Not held: a TLS handshake, during which the socket belongs to ``ssl`` alone; it needs no
holding, as CPython bounds the whole handshake by the socket's timeout, the connect timeout
(a registry that sends the handshake a byte every 20 ms is cut off at it).
"""

from __future__ import annotations

import contextlib
import functools
import socket
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import requests


class Exchange:
    """The sockets one request used; ``abandon`` (from any thread) shuts them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._abandoned = False

    def hold(self, sock: socket.socket) -> None:
        with self._lock:
            if not self._abandoned:
                self._sockets.append(sock)
                return
        _shut(sock)

    def abandon(self) -> None:
        with self._lock:
            self._abandoned = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


_current = threading.local()


@contextlib.contextmanager
def exchange_in_this_thread(exchange: Exchange) -> Iterator[None]:
    """Connections made or used by this thread in the block are held by ``exchange``."""
    _current.exchange = exchange
    try:
        yield
    finally:
        _current.exchange = None


def _held(sock: socket.socket | None) -> None:
    exchange = getattr(_current, "exchange", None)
    if exchange is not None and sock is not None:
        exchange.hold(sock)


def mount(session: requests.Session) -> None:
    """Make ``session``'s connections (direct, or through an HTTP proxy) held by the exchange
    of the thread that uses them. A SOCKS proxy's pools are its own and left as they are."""
    from requests.adapters import HTTPAdapter
    from urllib3.poolmanager import pool_classes_by_scheme

    pools = _pool_classes()

    class HeldAdapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = pools

        def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
            manager = super().proxy_manager_for(proxy, **kwargs)
            if manager.pool_classes_by_scheme is pool_classes_by_scheme:
                manager.pool_classes_by_scheme = pools
            return manager

    adapter = HeldAdapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)


@functools.cache
def _pool_classes() -> dict[str, type]:
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    class Held:
        def _new_conn(self) -> socket.socket:
            sock: socket.socket = super()._new_conn()  # type: ignore[misc]
            _held(sock)
            return sock

        def request(self, *args: Any, **kwargs: Any) -> None:
            _held(self.sock)  # type: ignore[attr-defined]  # kept, or HTTPS past its handshake
            super().request(*args, **kwargs)  # type: ignore[misc]

    class HeldHTTPConnection(Held, HTTPConnection):
        pass

    class HeldHTTPSConnection(Held, HTTPSConnection):
        pass

    class HeldHTTPPool(HTTPConnectionPool):
        ConnectionCls = HeldHTTPConnection

    class HeldHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = HeldHTTPSConnection

    return {"http": HeldHTTPPool, "https": HeldHTTPSPool}
