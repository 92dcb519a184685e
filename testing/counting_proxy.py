"""A counting reverse proxy in front of a real registry server, for "downloaded once" tests.

``counting_proxy(upstream)`` serves on a free 127.0.0.1 port, forwards every request to
``upstream`` and records ``(method, path)``; ``downloads()`` lists the artifact GETs
(``…/download``) and ``authorized`` the requests that carried an ``Authorization`` header.
With ``rewrite``, each JSON answer is passed through it first (a registry that twists its
answers), and with ``rewrite_headers`` the headers of every answer; otherwise answers go back
unchanged. The registry server itself is untouched.

With ``drip``, the answers to the paths it matches are sent one byte at a time, from the status
line (a registry stalling its headers) or from the body (stalling metadata or a download),
until the client hangs up or the proxy stops.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import urlsplit

Rewrite = Callable[[str, Any], Any]
Headers = list[tuple[str, str]]
RewriteHeaders = Callable[[str, Headers], Headers]


@dataclass(frozen=True)
class Drip:
    """Answers to paths where ``matches(path)`` go out one byte every ``interval`` seconds."""

    matches: Callable[[str], bool]
    phase: Literal["headers", "body"]
    interval: float = 0.05


_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length"}


@dataclass
class CountingProxy:
    url: str
    requests: list[tuple[str, str]] = field(default_factory=list)
    authorized: list[tuple[str, str]] = field(default_factory=list)

    def downloads(self) -> list[str]:
        return [
            path for method, path in self.requests if method == "GET" and path.endswith("/download")
        ]


def _handler(
    upstream: str,
    proxy: CountingProxy,
    rewrite: Rewrite | None,
    drip: Drip | None,
    stop: threading.Event,
    rewrite_headers: RewriteHeaders | None = None,
) -> type[BaseHTTPRequestHandler]:
    target = urlsplit(upstream)
    lock = threading.Lock()

    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            asked = (self.command, self.path.split("?", 1)[0])
            with lock:
                proxy.requests.append(asked)
                if "authorization" in self.headers:
                    proxy.authorized.append(asked)
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            connection = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
            try:
                connection.request(self.command, self.path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
                kind = response.getheader("content-type") or ""
                if rewrite is not None and kind.startswith("application/json"):
                    data = json.dumps(rewrite(self.path, json.loads(data))).encode()
                if drip is not None and drip.matches(self.path.split("?", 1)[0]):
                    self._drip(response, data, drip)
                    return
                self.send_response(response.status)
                headers = response.getheaders()
                if rewrite_headers is not None:
                    headers = rewrite_headers(self.path, headers)
                for key, value in headers:
                    if key.lower() not in _HOP_BY_HOP:
                        self.send_header(key, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            finally:
                connection.close()

        def _drip(self, response: http.client.HTTPResponse, data: bytes, drip: Drip) -> None:
            lines = [f"HTTP/1.1 {response.status} {response.reason}"]
            lines += [
                f"{key}: {value}"
                for key, value in response.getheaders()
                if key.lower() not in _HOP_BY_HOP
            ]
            lines += [f"content-length: {len(data)}", "connection: close", "", ""]
            head = "\r\n".join(lines).encode()
            self.close_connection = True
            if drip.phase == "body":
                self.wfile.write(head)
                slow = data
            else:
                slow = head + data
            try:
                for index in range(len(slow)):
                    if stop.wait(drip.interval):
                        return
                    self.wfile.write(slow[index : index + 1])
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward

        def log_message(self, format: str, *args: object) -> None:
            return None

    return Forward


@contextmanager
def counting_proxy(
    upstream: str,
    rewrite: Rewrite | None = None,
    drip: Drip | None = None,
    rewrite_headers: RewriteHeaders | None = None,
) -> Iterator[CountingProxy]:
    """Serve the proxy in a thread for the ``with`` block; ``rewrite(path, answer)`` twists
    JSON answers, ``rewrite_headers(path, headers)`` the headers of any answer, ``drip``
    stalls some."""
    proxy = CountingProxy("")
    stop = threading.Event()
    handler = _handler(upstream, proxy, rewrite, drip, stop, rewrite_headers)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    proxy.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        thread.join()
