"""Recording listeners: TCP on 127.0.0.1, 127.0.0.2, 127.0.0.3 and ::1 and UDP on 127.0.0.1,
each writing down every connection (or datagram) as the kernel hands it over, before a byte
is read, then its request head. ``ports`` and ``Seen.listener`` name a listener by its
address (``udp`` for the datagrams). A request whose path is ``/r/<status>/<Location, percent-
encoded>`` is answered with that redirect, any other with ``200 ok``. The judge of "nothing
reached this address" for the network fuzz target (fuzz/net_targets.py) and the guard's
tests: independent of the guard, it counts connections, not requests. Test code only.
"""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from urllib.parse import unquote

REDIRECT = re.compile(r"/r/(\d+)/(.*)")
SETTLE = b"SETTLE / HTTP/1.1\r\nHost: settle\r\n\r\n"
ADDRESSES = {
    "127.0.0.1": socket.AF_INET,
    "127.0.0.2": socket.AF_INET,
    "127.0.0.3": socket.AF_INET,
    "::1": socket.AF_INET6,
}


@dataclass
class Seen:
    listener: str
    head: str = ""
    # Set once the head is read (or the peer stopped sending): only then is ``head`` judged.
    read: threading.Event = field(default_factory=threading.Event)


@dataclass
class Listeners:
    """Recording listeners: every accepted connection is in ``seen`` before it is read."""

    ports: dict[str, int] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    sockets: list[socket.socket] = field(default_factory=list)

    def clear(self) -> None:
        with self.lock:
            self.seen.clear()

    def taken(self) -> list[Seen]:
        """What reached the listeners, each head read (call ``settle`` first)."""
        with self.lock:
            return list(self.seen)

    def settle(self) -> None:
        """Wait until every connection made before now is in ``seen`` with its head read: a
        connection of ours, queued behind them on each listener, is accepted after them."""
        for listener, family in ADDRESSES.items():
            with socket.socket(family, socket.SOCK_STREAM) as own:
                own.connect((listener, self.ports[listener]))
                own.sendall(SETTLE)
                for _ in range(400):
                    if any(
                        s.listener == listener and s.head == SETTLE.decode() for s in self.taken()
                    ):
                        break
                    threading.Event().wait(0.005)
        for seen in self.taken():
            seen.read.wait(2.0)
        with self.lock:
            self.seen[:] = [s for s in self.seen if s.head != SETTLE.decode()]


def _answer(conn: socket.socket, record: Seen) -> None:
    """Read the request head, write it down, answer 200 or the redirect its path asks for."""
    with conn:
        conn.settimeout(1.0)
        head = b""
        with suppress(OSError):
            while b"\r\n\r\n" not in head and len(head) < 16384:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                head += chunk
        record.head = head.decode("latin-1")
        record.read.set()
        line = record.head.split("\r\n", 1)[0].split(" ")
        path = line[1] if len(line) > 1 else "/"
        found = REDIRECT.fullmatch(path)
        if found:
            reply = (
                f"HTTP/1.1 {found[1]} R\r\nLocation: {unquote(found[2])}\r\n"
                "Content-Length: 0\r\nConnection: close\r\n\r\n"
            )
        else:
            reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        with suppress(OSError):
            conn.sendall(reply.encode("latin-1", "replace"))


def _serve_tcp(where: Listeners, name: str, sock: socket.socket) -> None:
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        record = Seen(name)
        with where.lock:
            where.seen.append(record)
        threading.Thread(target=_answer, args=(conn, record), daemon=True).start()


def _serve_udp(where: Listeners, sock: socket.socket) -> None:
    while True:
        try:
            data, _ = sock.recvfrom(65536)
        except OSError:
            return
        with where.lock:
            record = Seen("udp", data[:200].decode("latin-1"))
            record.read.set()
            where.seen.append(record)


def start_listeners() -> Listeners:
    """The listeners, serving until the process ends (``recording_listeners`` closes them)."""
    where = Listeners()
    for name, family in ADDRESSES.items():
        sock = socket.create_server((name, 0), family=family, backlog=128)
        where.ports[name] = sock.getsockname()[1]
        where.sockets.append(sock)
        threading.Thread(target=_serve_tcp, args=(where, name, sock), daemon=True).start()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", where.ports["127.0.0.1"]))
    where.sockets.append(udp)
    threading.Thread(target=_serve_udp, args=(where, udp), daemon=True).start()
    return where


@contextmanager
def recording_listeners() -> Iterator[Listeners]:
    where = start_listeners()
    try:
        yield where
    finally:
        for sock in where.sockets:
            sock.close()
