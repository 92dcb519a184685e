"""The guarded fetch end to end: real tools in the real sandbox against local servers on
127.0.0.1, with the Python-only fake resolver for DNS answers (issue #4, Done when)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from splice_build.errors import ErrorCode
from splice_build.runtime import SpliceRuntime, ToolResult
from testing.hostile_packages import write_package
from testing.netns import run_in_private_netns
from testing.netservers import NetServer, drip_server, serve, serve_tls
from testing.recording_listeners import recording_listeners

pytestmark = pytest.mark.node

PUBLIC_V6 = "2606:4700:4700::1111"  # public; unroutable here, so a connection fails fast


@pytest.fixture(scope="module")
def server() -> Iterator[NetServer]:
    with serve() as running:
        yield running


@pytest.fixture(scope="module")
def other() -> Iterator[NetServer]:
    """A second origin (another port) for cross-origin redirects."""
    with serve() as running:
        yield running


@pytest.fixture
def fetch_tool(tmp_path: Path) -> Callable[..., ToolResult]:
    """``fetch_tool(body, network=[...], resolver=None)`` runs ``body`` as the tool module."""
    project = tmp_path / "project"
    project.mkdir()
    counter = iter(range(1000))

    def run(body: str, *, network: list[str], resolver: dict[str, Any] | None = None) -> ToolResult:
        pkg = write_package(
            tmp_path / "pkgs",
            body,
            name=f"n{next(counter)}",
            permissions={"network": network},
            timeout_ms=20000,
        )
        runtime = SpliceRuntime(project_root=project, env={}, _unsafe_test_resolver=resolver)
        return runtime.execute(runtime.load(pkg), "t", {})

    return run


def _returning(expression: str) -> str:
    return f"export default async () => {{ {expression} }};"


def _error_of(call: str) -> str:
    """A tool body returning {name, message, code, cause} of the rejection of ``call``."""
    return (
        "export default async () => { try { await " + call + "; return { ok: true }; }"
        " catch (e) { return { name: e.name, message: e.message, code: e.code ?? null,"
        " cause: e.cause ? String(e.cause.message) : null, causeCode: e.cause?.code ?? null }; } };"
    )


def _denied(result: ToolResult) -> str:
    assert result.error is not None, result.to_json()
    assert result.error.code == ErrorCode.PERMISSION_DENIED, result.to_json()
    return result.error.message


def test_declared_literal_reaches_the_server(fetch_tool, server: NetServer) -> None:
    result = fetch_tool(
        _returning(
            f"const r = await fetch('{server.url('/echo?x=1')}');"
            " const j = await r.json();"
            " return { status: r.status, ok: r.ok, url: r.url, redirected: r.redirected,"
            " type: r.headers.get('content-type'), path: j.path, host: j.headers.host };"
        ),
        network=["127.0.0.1"],
    )
    assert result.ok, result.to_json()
    assert result.output == {
        "status": 200,
        "ok": True,
        "url": server.url("/echo?x=1"),
        "redirected": False,
        "type": "application/json",
        "path": "/echo?x=1",
        "host": f"127.0.0.1:{server.port}",
    }


def test_a_tool_declaring_0_0_0_0_reaches_no_local_service(fetch_tool) -> None:
    """A connect to 0.0.0.0 is a connect to this machine: the tool port-scanned its loopback
    (an open port 'reached an unchecked address' after the handshake, a closed one
    ECONNREFUSED), found by the net_walk fuzz target. Refused before any connection."""
    with recording_listeners() as where:
        port = where.ports["127.0.0.1"]
        result = fetch_tool(_error_of(f"fetch('http://0.0.0.0:{port}/')"), network=["0.0.0.0"])
        where.settle()
        assert where.taken() == []
    assert result.output == {
        "name": "Error",
        "message": 'Network access to "0.0.0.0" is denied: it is not a public address.',
        "code": "ERR_ACCESS_DENIED",
        "cause": None,
        "causeCode": None,
    }


def test_any_public_host_does_not_cover_loopback(fetch_tool, server: NetServer) -> None:
    before = len(server.seen)
    message = _denied(fetch_tool(_returning(f"return fetch('{server.url()}');"), network=["*"]))
    assert message == 'Network access to "127.0.0.1" is denied: it is not a public address.'
    assert len(server.seen) == before


@pytest.mark.parametrize(
    ("to", "fragment"),
    [
        ("http://127.0.0.2:{port}/echo", '"127.0.0.2" is denied: it is not a public address'),
        ("http://127.1.2.3/", '"127.1.2.3" is denied'),
        ("http://169.254.169.254/latest/meta-data/", '"169.254.169.254" is denied'),
        ("http://[::1]:{port}/echo", '"::1" is denied'),
        ("http://[::ffff:127.0.0.1]:{port}/echo", '"::ffff:7f00:1" is denied'),
        ("http://internal.test:{port}/echo", "resolves to 10.0.0.7, which is not a public"),
        ("http://localhost:{port}/echo", '"localhost" is denied'),
        ("file:///etc/passwd", 'URL scheme "file:" is denied'),
        ("http://user:pw@127.0.0.1:{port}/echo", "credentials"),
    ],
)
def test_redirects_into_refused_targets(
    fetch_tool, server: NetServer, to: str, fragment: str
) -> None:
    target = to.format(port=server.port)
    start = server.url("/redirect?to=" + target.replace("&", "%26"))
    before = len(server.seen)
    result = fetch_tool(
        _returning(f"return fetch({json.dumps(start)});"),
        network=["127.0.0.1", "*"],
        resolver={"internal.test": [["10.0.0.7"]]},
    )
    message = _denied(result)
    assert message.startswith("Redirect blocked: "), message
    assert fragment in message
    # (the parent's HTTP client percent-encodes "[" and "]" in a query, as RFC 3986 wants)
    seen = [unquote(s.path) for s in server.seen[before:]]
    assert seen == [start.split(str(server.port), 1)[1]]


def test_five_redirects_are_followed_six_are_not(fetch_tool, server: NetServer) -> None:
    ok = fetch_tool(
        _returning(
            f"const r = await fetch('{server.url('/chain/5')}');"
            " return { status: r.status, redirected: r.redirected, url: r.url };"
        ),
        network=["127.0.0.1"],
    )
    assert ok.output == {"status": 200, "redirected": True, "url": server.url("/echo")}
    failed = fetch_tool(_error_of(f"fetch('{server.url('/chain/6')}')"), network=["127.0.0.1"])
    assert failed.output == {
        "name": "TypeError",
        "message": "fetch failed",
        "code": None,
        "cause": "more than 5 redirects",
        "causeCode": None,
    }


@pytest.mark.parametrize(
    ("status", "method", "body"),
    [
        (303, "GET", ""),
        (302, "GET", ""),
        (301, "GET", ""),
        (307, "POST", "data"),
        (308, "POST", "data"),
    ],
)
def test_post_redirect_method_rules(
    fetch_tool, server: NetServer, status: int, method: str, body: str
) -> None:
    url = server.url(f"/redirect?status={status}&to=/echo")
    result = fetch_tool(
        _returning(
            f"const r = await fetch('{url}', {{ method: 'POST', body: 'data',"
            " headers: { 'content-type': 'text/plain' } });"
            " const j = await r.json(); return { method: j.method, body: j.body,"
            " type: j.headers['content-type'] ?? null };"
        ),
        network=["127.0.0.1"],
    )
    assert result.output == {
        "method": method,
        "body": body,
        "type": "text/plain" if method == "POST" else None,
    }


CREDENTIALS = {"authorization": "Bearer t0ken", "cookie": "a=b", "proxy-authorization": "Basic x"}


def _headers_after_redirect(fetch_tool, start: str) -> dict[str, str]:
    result = fetch_tool(
        _returning(
            f"const r = await fetch('{start}', {{ headers: {json.dumps(CREDENTIALS)} }});"
            " return (await r.json()).headers;"
        ),
        network=["127.0.0.1"],
    )
    assert result.ok, result.to_json()
    return result.output


def test_credentials_kept_on_same_origin_redirect(fetch_tool, server: NetServer) -> None:
    headers = _headers_after_redirect(fetch_tool, server.url("/redirect?to=/echo"))
    assert {k: headers.get(k) for k in CREDENTIALS} == CREDENTIALS


def test_credentials_dropped_on_cross_origin_redirect(
    fetch_tool, server: NetServer, other: NetServer
) -> None:
    headers = _headers_after_redirect(fetch_tool, server.url("/redirect?to=" + other.url("/echo")))
    assert not set(CREDENTIALS) & set(headers)
    assert other.seen[-1].path == "/echo"


def test_abort_and_timeout(fetch_tool, server: NetServer) -> None:
    slow = server.url("/slow?ms=3000")
    abort = fetch_tool(
        "export default async () => { const c = new AbortController();"
        " setTimeout(() => c.abort(), 100);"
        f" try {{ await (await fetch('{slow}', {{ signal: c.signal }})).text(); return 'done'; }}"
        " catch (e) { return e.name; } };",
        network=["127.0.0.1"],
    )
    assert abort.output == "AbortError"
    timeout = fetch_tool(
        _error_of(f"fetch('{slow}', {{ signal: AbortSignal.timeout(200) }}).then((r) => r.text())"),
        network=["127.0.0.1"],
    )
    assert timeout.output["name"] == "TimeoutError"


def test_dns_rebinding_cannot_reach_the_second_answer() -> None:
    """First answer public, second private: the connection goes to the checked (public)
    address; the next lookup's private answer is refused; 127.0.0.1 never sees a request.
    Runs in a loopback-only network namespace so the public attempt never leaves the machine."""
    outcome = run_in_private_netns("sandbox_rebinding")
    assert outcome["result"]["output"] == ["failed", "denied"], outcome
    assert outcome["seen"] == 0


def test_the_connection_goes_to_the_checked_address() -> None:
    """With the public first answer reachable (on the namespace's lo): the request arrives at
    exactly that address, the next lookup's 127.0.0.1 is refused, nothing else is reached."""
    outcome = run_in_private_netns("sandbox_rebinding_reachable")
    assert outcome["result"]["output"] == [PUBLIC_V6, "denied"], outcome
    assert outcome["seen"] == [PUBLIC_V6]


def test_one_private_answer_among_public_ones_is_refused(fetch_tool, server: NetServer) -> None:
    result = fetch_tool(
        _returning(f"return fetch('http://mixed.test:{server.port}/echo');"),
        network=["mixed.test"],
        resolver={"mixed.test": [[PUBLIC_V6, "93.184.215.14", "127.0.0.1"]]},
    )
    assert _denied(result) == (
        'Network access to "mixed.test" is denied: it resolves to 127.0.0.1,'
        " which is not a public address."
    )


def test_declared_name_resolving_privately_is_refused(fetch_tool, server: NetServer) -> None:
    result = fetch_tool(
        _returning(f"return fetch('http://api.internal.test:{server.port}/echo');"),
        network=["api.internal.test"],
        resolver={"api.internal.test": [["192.168.0.10"]]},
    )
    assert "resolves to 192.168.0.10" in _denied(result)


def test_unknown_name_is_a_network_error(fetch_tool) -> None:
    result = fetch_tool(_error_of("fetch('http://nowhere.test/')"), network=["*"], resolver={})
    assert result.output["name"] == "TypeError"
    assert result.output["causeCode"] == "ENOTFOUND"


def test_declared_localhost_is_an_explicit_grant(fetch_tool, server: NetServer) -> None:
    result = fetch_tool(
        _returning(
            f"const r = await fetch('http://localhost:{server.port}/echo');"
            " return (await r.json()).headers.host;"
        ),
        network=["localhost"],
        resolver={"localhost": [["127.0.0.1"]]},
    )
    assert result.output == f"localhost:{server.port}"


def test_localhost_grant_accepts_only_loopback_answers(fetch_tool, server: NetServer) -> None:
    result = fetch_tool(
        _returning(f"return fetch('http://localhost:{server.port}/echo');"),
        network=["localhost"],
        resolver={"localhost": [["10.1.2.3"]]},
    )
    assert "not a loopback address" in _denied(result)


@pytest.mark.parametrize("coding", ["gzip", "deflate", "deflate-raw", "br"])
def test_encoded_bodies_are_decoded(fetch_tool, server: NetServer, coding: str) -> None:
    result = fetch_tool(
        _returning(f"return (await fetch('{server.url('/' + coding)}')).json();"),
        network=["127.0.0.1"],
    )
    assert result.output == {"coding": coding}


@pytest.mark.parametrize("path", ["/big?bytes=17000000", "/gzip-bomb?bytes=40000000"])
def test_bodies_are_size_limited(fetch_tool, server: NetServer, path: str) -> None:
    result = fetch_tool(
        _error_of(f"fetch('{server.url(path)}').then((r) => r.arrayBuffer())"),
        network=["127.0.0.1"],
    )
    assert result.output["message"] == "fetch failed"
    assert result.output["causeCode"] == "ERR_SPLICE_RESPONSE_TOO_LARGE"


def test_a_head_with_control_characters_never_reaches_the_tool(fetch_tool) -> None:
    """A NUL in a header value fails the fetch as Node's own parser would; a folded value
    reaches the tool unfolded, never with its CR LF."""
    bad = b"HTTP/1.1 200 OK\r\nX-Nul: a\x00b\r\nContent-Length: 1\r\n\r\nz"
    with drip_server([bad], 0) as drip:
        result = fetch_tool(
            _error_of(f"fetch('http://127.0.0.1:{drip.port}/')"), network=["127.0.0.1"]
        )
    assert result.output["message"] == "fetch failed"
    assert result.output["causeCode"] == "HPE_INVALID_HEADER_TOKEN"
    folded = b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 1\r\n\r\nz"
    with drip_server([folded], 0) as drip:
        result = fetch_tool(
            _returning(
                f"return (await fetch('http://127.0.0.1:{drip.port}/')).headers.get('x-folded');"
            ),
            network=["127.0.0.1"],
        )
    assert result.output == "a b"


def test_tls_is_always_verified(fetch_tool, tmp_path: Path) -> None:
    with serve_tls(tmp_path) as (port, _ca):
        result = fetch_tool(
            "export default async () => { process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';"
            f" try {{ await fetch('https://127.0.0.1:{port}/echo'); return 'connected'; }}"
            " catch (e) { return [e.message, e.cause?.code ?? null]; } };",
            network=["127.0.0.1"],
        )
    assert result.output == ["fetch failed", "UNABLE_TO_GET_ISSUER_CERT_LOCALLY"]


def test_request_url_and_response_api(fetch_tool, server: NetServer) -> None:
    result = fetch_tool(
        _returning(
            f"const req = new Request('{server.url('/echo')}', {{ method: 'PUT', body: 'b',"
            " headers: new Headers({ 'x-a': '1' }) });"
            " const r1 = await fetch(req); const j1 = await r1.json();"
            f" const r2 = await fetch(new URL('{server.url('/echo')}'));"
            " const bytes = new Uint8Array(await r2.arrayBuffer()).length;"
            f" const r3 = await fetch('{server.url('/echo')}');"
            " const reader = r3.body.getReader(); const first = await reader.read();"
            f" const m = await fetch('{server.url('/redirect?to=/echo')}', {{ redirect: 'manual' }});"
            f" let e = null; try {{ await fetch('{server.url('/redirect?to=/echo')}', {{ redirect: 'error' }}); }}"
            " catch (err) { e = err.message; }"
            " return { m1: j1.method, b1: j1.body, h1: j1.headers['x-a'], bytes: bytes > 0,"
            " stream: first.value.length > 0, manual: [m.status, m.headers.get('location')], e };"
        ),
        network=["127.0.0.1"],
    )
    assert result.output == {
        "m1": "PUT",
        "b1": "b",
        "h1": "1",
        "bytes": True,
        "stream": True,
        "manual": [302, "/echo"],
        "e": "fetch failed",
    }


def test_host_header_cannot_be_forged(fetch_tool, server: NetServer) -> None:
    result = fetch_tool(
        _returning(
            f"const r = await fetch('{server.url('/echo')}', {{ headers: {{ host: 'internal.corp' }} }});"
            " return (await r.json()).headers.host;"
        ),
        network=["127.0.0.1"],
    )
    assert result.output == f"127.0.0.1:{server.port}"
