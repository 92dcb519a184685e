"""A local stand-in for api.github.com on 127.0.0.1, serving recorded response fixtures.

The fixtures in ``tests/resources/github/*.json`` were written by hand from GitHub's REST API
documentation (status, the headers GitHub sends — ``x-ratelimit-*``, ``link``, ``etag`` — and
the JSON body); no request was ever made to GitHub. One fixture file::

    {"request": "GET /repos/octocat/Hello-World", "status": 200,
     "headers": {"content-type": "...", "x-ratelimit-limit": "60", ...},
     "body": <JSON value>}            # or "bodyText": "<raw text>"

``serve_replies(routes)`` answers ``GET <path>`` (query string ignored for routing, recorded
in ``seen``) with the route's ``Reply``; an unknown path gets GitHub's 404 fixture. A reply
can also stall before its body (``delay``) or close the connection after half of it
(``cut``). Only the headers of the reply are sent (no automatic ``Server``/``Date``), so a
fixture controls exactly what a client sees. The same server answers the @splice/http example
tests. Test code only.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "resources" / "github"
NOT_FOUND_FIXTURE = "error_not_found"


@dataclass(frozen=True)
class Reply:
    """One recorded response."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    delay: float = 0.0  # seconds between the headers and the body
    cut: bool = False  # send half of the body, then close the connection

    def with_headers(self, **changes: str) -> Reply:
        """The same reply with headers added or replaced (``x_ratelimit_remaining="0"``)."""
        headers = dict(self.headers)
        headers.update({name.replace("_", "-"): value for name, value in changes.items()})
        return replace(self, headers=headers)


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]


def fixture_data(name: str) -> dict[str, Any]:
    """The parsed fixture file ``tests/resources/github/<name>.json``."""
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def recorded(name: str) -> Reply:
    """The recorded response of fixture ``name`` (file name without ``.json``)."""
    data = fixture_data(name)
    if "bodyText" in data:
        body = data["bodyText"].encode("utf-8")
    else:
        body = json.dumps(data["body"], indent=2, ensure_ascii=False).encode("utf-8")
    return Reply(status=data["status"], headers=dict(data["headers"]), body=body)


def json_reply(status: int, value: Any, headers: Mapping[str, str] | None = None) -> Reply:
    """A JSON response built in a test (for shapes no fixture needs to record)."""
    body = json.dumps(value).encode("utf-8")
    return Reply(
        status, {"content-type": "application/json; charset=utf-8", **(headers or {})}, body
    )


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        return

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        url = urlsplit(self.path)
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.server.seen.append(Seen(self.command, url.path, dict(parse_qsl(url.query)), headers))
        reply = self.server.routes.get(url.path) or recorded(NOT_FOUND_FIXTURE)
        self.send_response_only(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()
        if reply.delay and self.server.stopping.wait(reply.delay):
            return
        if reply.cut:
            self.wfile.write(reply.body[: len(reply.body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        if self.command != "HEAD":
            self.wfile.write(reply.body)

    do_GET = do_POST = do_HEAD = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, routes: Mapping[str, Reply]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes = dict(routes)
        self.seen: list[Seen] = []
        self.stopping = threading.Event()

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that gave up (a timeout test) is expected; stay quiet."""


@dataclass
class FakeGitHub:
    """A running server; ``base_url`` is ``http://127.0.0.1:<port>``."""

    httpd: _Server = field(repr=False)
    port: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def seen(self) -> list[Seen]:
        return self.httpd.seen

    def url(self, path: str) -> str:
        return self.base_url + path

    def route(self, path: str, reply: Reply) -> None:
        """Serve ``reply`` at ``path`` from now on."""
        self.httpd.routes[path] = reply


@contextmanager
def serve_replies(routes: Mapping[str, Reply] | None = None) -> Iterator[FakeGitHub]:
    """Run the server in a thread for the duration of the block."""
    httpd = _Server(routes or {})
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield FakeGitHub(httpd, httpd.server_address[1])
    finally:
        httpd.stopping.set()
        httpd.shutdown()
        httpd.server_close()
