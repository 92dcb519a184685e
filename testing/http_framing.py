"""A request that declares two framings (Content-Length and Transfer-Encoding), followed on
the same connection by a second request: what a proxy that goes by the length would pass
on as one request, and a server that goes by the chunks reads as two (request smuggling).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping


def two_framings(host: str, port: int, path: str, body: bytes, headers: Mapping[str, str]) -> bytes:
    """Send ``body`` chunked under a Content-Length of the whole chunked text, then the same
    request framed by its length alone, and return every byte the server sends until it
    closes the connection. Raises ``TimeoutError`` (20 s) when it keeps it open instead."""
    fields = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    chunked = b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
    first = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\n{fields}Content-Length: {len(chunked)}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode() + chunked
    second = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\n{fields}Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection((host, port), timeout=20) as sock:
        sock.sendall(first + second)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
        except TimeoutError as exc:
            raise TimeoutError(f"the connection stayed open; received {received!r}") from exc
    return received
