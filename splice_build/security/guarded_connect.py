"""The connection layer of the guarded client: DNS-time address checks inside urllib3.

``Guard.connect`` is every guarded connection's ``_new_conn``: it resolves the name once,
refuses the request if any answer is not public (or not loopback for a ``localhost``
grant), connects only to those checked addresses and compares the peer with them again.
It keeps the sockets it opened so ``abort`` (the session is done) and ``expire`` (a request
reached its deadline) can shut them from another thread.
``adapter(guard)`` is the ``requests`` adapter whose pools use such connections and never
a proxy.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from splice_build.records import dataclass, field
from splice_build.security.addresses import (
    address_key,
    is_ip_literal,
    is_loopback_address,
    is_public_address,
)
from splice_build.security.net_causes import dns_cause
from splice_build.security.net_errors import (
    REASON_NOT_DECLARED,
    REASON_NOT_PUBLIC,
    NetworkDenied,
    NetworkFailure,
)
from splice_build.security.netpolicy import NetPolicy
from splice_build.security.targets import bare_host, host_grant
from splice_build.spec.permissions import host_allowed

if TYPE_CHECKING:
    import requests

Resolver = Callable[[str], Sequence[str]]


def system_resolver(name: str) -> list[str]:
    """Every address the OS resolver gives for ``name`` (hosts file included), in order."""
    try:
        infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except UnicodeError as exc:
        # Python's idna codec refuses a label over 63 characters before any look-up; the
        # URL standard allows it, and for Node's fetch such a name is not found.
        raise socket.gaierror(socket.EAI_NONAME, f"getaddrinfo ENOTFOUND {name}") from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass
class Guard:
    """What the connection class needs: patterns, policy, resolver; counts lookups."""

    patterns: tuple[str, ...]
    policy: NetPolicy
    resolver: Resolver
    lookups: int = 0
    connected: list[str] = field(default_factory=list)
    sockets: list[socket.socket] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    aborted: bool = False
    expiries: int = 0  # how many times ``expire`` ran: a connection begun before one is cut

    def checked_addresses(self, raw_host: str) -> list[str]:
        """(4) Resolve once and check every answer; the connection uses exactly these."""
        host = bare_host(raw_host)
        if not host_allowed(host, self.patterns):  # defence in depth: checked before too
            raise NetworkDenied(
                f'Network access to "{host}" is denied: it is not an allowed host.',
                REASON_NOT_DECLARED,
                host=host,
            )
        grant = host_grant(host, self.patterns, self.policy)
        if is_ip_literal(host):
            return [host]
        self.lookups += 1
        try:
            answers = [str(a) for a in self.resolver(host)]
        except OSError as exc:
            raise NetworkFailure(
                f'Could not resolve "{host}": {exc}', cause=dns_cause(exc)
            ) from exc
        if not answers:
            raise NetworkFailure(f'Could not resolve "{host}": no addresses', cause="ENOTFOUND")
        for address in answers:
            if grant == "localhost":
                ok, kind = is_loopback_address(address, self.policy), "a loopback"
            else:
                ok, kind = is_public_address(address, self.policy), "a public"
            if not ok:
                raise NetworkDenied(
                    f'Network access to "{host}" is denied: it resolves to {address},'
                    f" which is not {kind} address.",
                    REASON_NOT_PUBLIC,
                    host=host,
                )
        return answers

    def connect(
        self,
        host: str,
        port: int,
        timeout: float | None,
        socket_options: Sequence[tuple[int, int, int | bytes]] | None,
    ) -> socket.socket:
        with self.lock:
            started = self.expiries
        addresses = self.checked_addresses(host)
        allowed = {address_key(a) for a in addresses}
        last: OSError | None = None
        for address in addresses:
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            with self.lock:
                if self.aborted:
                    sock.close()
                    raise NetworkFailure("The request was aborted", cause="ABORT_ERR")
                # Closed sockets are let go: a long-lived session keeps only its open ones.
                self.sockets = [s for s in self.sockets if s.fileno() != -1]
                self.sockets.append(sock)
            try:
                for option in socket_options or ():
                    sock.setsockopt(*option)
                sock.settimeout(timeout)
                # A deadline that came during the name look-up (which nothing can interrupt)
                # or the connect (a socket not yet connected cannot be shut) ends it here.
                self._check_not_expired(started)
                sock.connect((address, port))
                self._check_not_expired(started)
                peer = sock.getpeername()[0]
                if address_key(peer) not in allowed:
                    raise NetworkDenied(
                        f'Network access to "{host}" is denied: the connection reached an'
                        " unchecked address.",
                        REASON_NOT_PUBLIC,
                        host=host,
                    )
                self.connected.append(peer)
                return sock
            except OSError as exc:
                sock.close()
                last = exc
            except BaseException:
                sock.close()
                raise
        assert last is not None, "BUG: no address to connect to"
        raise last

    def _check_not_expired(self, started: int) -> None:
        with self.lock:
            if self.expiries != started:
                raise TimeoutError("the request's deadline came while connecting")

    def abort(self) -> None:
        """Shut every socket opened so far (a read blocked on one returns at once) and refuse
        new connections: the session is done."""
        with self.lock:
            self.aborted = True
        self.expire()

    def expire(self) -> None:
        """Shut every socket opened so far, leaving the session usable: a request reached its
        deadline, and the next one opens new connections (a shut pooled connection is seen
        as dropped and replaced)."""
        with self.lock:
            self.expiries += 1
            sockets, self.sockets = self.sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _connection_classes(guard: Guard) -> tuple[type, type]:
    """urllib3 pool classes whose connections resolve and check inside ``_new_conn``."""
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
    from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

    def new_conn(self: Any) -> socket.socket:
        try:
            return guard.connect(self.host, self.port, self.timeout, self.socket_options)
        except TimeoutError as exc:
            raise ConnectTimeoutError(self, f"Connection to {self.host} timed out") from exc
        except OSError as exc:
            raise NewConnectionError(self, f"Failed to establish a new connection: {exc}") from exc

    http_conn = type("GuardedHTTPConnection", (HTTPConnection,), {"_new_conn": new_conn})
    https_conn = type("GuardedHTTPSConnection", (HTTPSConnection,), {"_new_conn": new_conn})
    http_pool = type("GuardedHTTPPool", (HTTPConnectionPool,), {"ConnectionCls": http_conn})
    https_pool = type("GuardedHTTPSPool", (HTTPSConnectionPool,), {"ConnectionCls": https_conn})
    return http_pool, https_pool


def adapter(guard: Guard) -> requests.adapters.HTTPAdapter:
    from requests.adapters import HTTPAdapter

    http_pool, https_pool = _connection_classes(guard)

    class GuardedAdapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = {"http": http_pool, "https": https_pool}

        def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
            raise NetworkDenied("Proxies are not used by the guarded client.", REASON_NOT_DECLARED)

        def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
            kwargs["proxies"] = None
            return super().send(request, *args, **kwargs)

    return GuardedAdapter(max_retries=0)
