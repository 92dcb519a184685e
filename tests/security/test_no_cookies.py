"""Splice's HTTP clients keep no cookie (security/http_session.py): a registry's
``Set-Cookie`` headers are neither stored nor sent back.

``requests`` kept every cookie an answer set and sent the whole jar with each later request:
a registry that set 90 new cookies of 8 KB per answer and split a version list into pages
made ``splice info`` send a 29 MB ``Cookie`` header by its 42nd request and hold 204 MB,
growing with the square of the pages (a list may have 100,000 of them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread

from splice_build.install.resolve import all_version_entries
from splice_build.registry.client.http import HttpRegistryClient
from splice_build.security.guarded_http import GuardedSession

PAGES = 3


class _Setter(BaseHTTPRequestHandler):
    """Every answer sets two new cookies; each version page names the next."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        seen: list[str | None] = self.server.cookies  # type: ignore[attr-defined]
        seen.append(self.headers.get("cookie"))
        page = int(self.path.rpartition("cursor=c")[2] or 0) if "cursor=" in self.path else 0
        entry = {"version": f"1.0.{page}", "integrity": "sha256-" + "a" * 64}
        answer: dict[str, object] = {"name": "@evil/pkg", "versions": [entry]}
        if page + 1 < PAGES:
            answer["nextCursor"] = f"c{page + 1}"
        body = json.dumps(answer).encode()
        self.send_response(200)
        for name in ("a", "b"):
            self.send_header("set-cookie", f"{name}{len(seen)}={'v' * 100}; Path=/")
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def _registry() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Setter)
    server.cookies = []  # type: ignore[attr-defined]
    thread = Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_the_registry_client_sends_back_no_cookie_a_registry_set() -> None:
    with _registry() as server:
        client = HttpRegistryClient(f"http://127.0.0.1:{server.server_address[1]}")
        entries = all_version_entries(client, "@evil/pkg")
        jar = client._session.cookies
        client.close()
    assert [e["version"] for e in entries] == ["1.0.0", "1.0.1", "1.0.2"]
    assert server.cookies == [None] * PAGES  # type: ignore[attr-defined]
    assert len(jar) == 0


def test_the_guarded_session_sends_back_no_cookie_a_server_set() -> None:
    with _registry() as server, GuardedSession(["127.0.0.1"], timeout_s=5) as http:
        for _ in range(2):
            http.request("GET", f"http://127.0.0.1:{server.server_address[1]}/x")
    assert server.cookies == [None, None]  # type: ignore[attr-defined]
