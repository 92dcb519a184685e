"""The guarded fetch against a real local HTTP server: declared hosts only, redirects
re-checked, credentials refused (the network-guard issue adds address checks)."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from splice_build.errors import ErrorCode
from testing.netservers import serve_handler

pytestmark = pytest.mark.node


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/redirect-out":
            self.send_response(302)
            self.send_header("Location", "http://evil.example.org/")
            self.end_headers()
            return
        if self.path == "/redirect-in":
            self.send_response(302)
            self.send_header("Location", "/hello")
            self.end_headers()
            return
        body = b'{"hello":"world"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serve_handler(_Handler) as url:
        yield url


NET = {"network": ["127.0.0.1"]}


def test_declared_host_is_reachable(run_tool, server: str) -> None:
    body = (
        f"export default async () => {{ const r = await fetch('{server}/redirect-in');"
        " return { status: r.status, json: await r.json(), redirected: r.redirected,"
        " type: r.headers.get('content-type') }; };"
    )
    result = run_tool(body, permissions=NET)
    assert result.ok, result.to_json()
    assert result.output == {
        "status": 200,
        "json": {"hello": "world"},
        "redirected": True,
        "type": "application/json",
    }


def test_redirect_to_undeclared_host_is_blocked(run_tool, server: str) -> None:
    result = run_tool(f"export default () => fetch('{server}/redirect-out');", permissions=NET)
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED
    assert result.error.message.startswith('Redirect blocked: Network access to "evil.example.org"')


@pytest.mark.parametrize(
    "url",
    ["http://user:pw@127.0.0.1:1/", "file:///etc/hostname", "ftp://127.0.0.1/"],
)
def test_refused_urls(run_tool, url: str) -> None:
    result = run_tool(f"export default () => fetch('{url}');", permissions=NET)
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED


def test_no_network_without_declaration(run_tool, server: str) -> None:
    result = run_tool(f"export default () => fetch('{server}/hello');")
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED


@pytest.mark.parametrize(
    "answer",
    [b"HTTP/1.1 103 Early Hints\r\n\r\n", b"HTTP/1.1 101 Switching Protocols\r\n\r\n"],
)
def test_a_final_informational_status_fails_the_fetch(run_tool, answer: bytes) -> None:
    from testing.netservers import drip_server

    with drip_server([answer], 0) as drip:
        body = (
            "export default async () => {"
            f" try {{ const r = await fetch('http://127.0.0.1:{drip.port}/'); return r.status; }}"
            " catch (e) { return [e.name, e.message, e.cause.code]; } };"
        )
        result = run_tool(body, permissions=NET)
    assert result.output == ["TypeError", "fetch failed", "ERR_SPLICE_INVALID_RESPONSE"]


def test_a_huge_response_head_is_a_fetch_failure_the_tool_catches(run_tool) -> None:
    """95 header lines of 65,000 quotes: http.client takes them; JSON-escaped in the head frame
    they made 12 MiB, more than the host reads from its channel, and the whole call failed
    with TOOL_ERROR "IPC frame too large" instead of a fetch error."""
    from testing.netservers import drip_server

    lines = b"".join(b"X-H%d: " % i + b'"' * 65_000 + b"\r\n" for i in range(95))
    answer = b"HTTP/1.1 200 OK\r\n" + lines + b"Content-Length: 2\r\n\r\nhi"
    with drip_server([answer], 0) as drip:
        body = (
            "export default async () => {"
            f" try {{ const r = await fetch('http://127.0.0.1:{drip.port}/'); return r.status; }}"
            " catch (e) { return [e.name, e.message, e.cause.code]; } };"
        )
        result = run_tool(body, permissions=NET)
    assert result.ok, result.to_json()
    assert result.output == ["TypeError", "fetch failed", "UND_ERR_HEADERS_OVERFLOW"]


def test_a_url_that_does_not_parse_fails_as_in_node(run_tool) -> None:
    """As Node's fetch: TypeError 'Failed to parse URL from <url>', its cause the parser's
    ERR_INVALID_URL (the shim threw 'Invalid URL: <url>' with no cause, found by the net_walk
    fuzz target), before any request and whatever the grants."""
    urls = ["http://[::ffff:127.0.0.2]:65536/", "https://[::1%25lo]/", "http://a b/", "x"]
    body = (
        f"export default async () => Promise.all({urls!r}.map((u) => fetch(u).then("
        " () => 'fetched', (e) => [e.name, e.message, e.cause?.code ?? null])));"
    )
    result = run_tool(body, permissions={"network": ["*"]})
    assert result.ok, result.to_json()
    assert result.output == [
        ["TypeError", f"Failed to parse URL from {url}", "ERR_INVALID_URL"] for url in urls
    ]
