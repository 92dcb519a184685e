"""The Python guard (GuardedSession) against real local servers, with the same rules as
the sandbox's fetch: declared literal grants, redirects re-checked, DNS checked at connect
time with the connection going to the checked address, header dropping, limits, TLS."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from splice_build.errors import ErrorCode
from splice_build.security.guarded_http import GuardedSession
from splice_build.security.net_errors import (
    CAUSE_INVALID_RESPONSE,
    NetworkDenied,
    NetworkFailure,
    NetworkTimeout,
    ResponseTooLarge,
)
from testing.netns import run_in_private_netns
from testing.netservers import FakeResolver, NetServer, drip_server, serve, serve_tls
from testing.recording_listeners import recording_listeners

PUBLIC_V6 = "2606:4700:4700::1111"


@pytest.fixture(scope="module")
def server() -> Iterator[NetServer]:
    with serve() as running:
        yield running


@pytest.fixture(scope="module")
def other() -> Iterator[NetServer]:
    with serve() as running:
        yield running


def test_declared_literal_may_reach_it(server: NetServer) -> None:
    with GuardedSession(["127.0.0.1"]) as http:
        response = http.get(server.url("/echo?a=1"))
    assert response.status == 200 and response.ok and not response.redirected
    assert response.json()["path"] == "/echo?a=1"
    assert response.json()["headers"]["host"] == f"127.0.0.1:{server.port}"


@pytest.mark.parametrize("host", ["0.0.0.0", "0", "0x0", "0.0.0.1"])
def test_a_declared_unspecified_address_is_never_connected_to(host: str) -> None:
    """A connect to 0.0.0.0 reaches this machine's loopback: declaring it granted a TCP
    handshake with any local service, refused only after it by the peer check (an open port
    answered 'reached an unchecked address', a closed one ECONNREFUSED: a port scan), found by
    the net_walk fuzz target. No literal grant covers 0.0.0.0/8: not-public, no connection."""
    with recording_listeners() as where:
        port = where.ports["127.0.0.1"]
        declared = "0.0.0.1" if host == "0.0.0.1" else "0.0.0.0"
        with GuardedSession([declared]) as http, pytest.raises(NetworkDenied) as caught:
            http.get(f"http://{host}:{port}/")
        assert caught.value.reason == "not-public"
        assert (
            str(caught.value)
            == f'Network access to "{declared}" is denied: it is not a public address.'
        )
        where.settle()
        assert where.taken() == []


@pytest.mark.parametrize("spelled", ["[::ffff:0.0.0.0]", "[::ffff:0:0]"])
def test_a_declared_ipv4_mapped_unspecified_address_is_never_connected_to(spelled: str) -> None:
    """``::ffff:0.0.0.0`` is 0.0.0.0 to the kernel (an IPv6 socket maps it): declared, it
    reached the 127.0.0.1 listener as 0.0.0.0 did, so what a mapped address embeds is judged
    as that IPv4 address is."""
    with recording_listeners() as where:
        port = where.ports["127.0.0.1"]
        with GuardedSession(["::ffff:0:0"]) as http, pytest.raises(NetworkDenied) as caught:
            http.get(f"http://{spelled}:{port}/")
        assert caught.value.reason == "not-public"
        where.settle()
        assert where.taken() == []


def test_any_public_host_may_not_reach_loopback(server: NetServer) -> None:
    before = len(server.seen)
    with GuardedSession(["*"]) as http, pytest.raises(NetworkDenied) as caught:
        http.get(server.url())
    assert caught.value.code == ErrorCode.PERMISSION_DENIED
    assert caught.value.reason == "not-public"
    assert len(server.seen) == before


@pytest.mark.parametrize(
    "to",
    [
        "http://127.0.0.2:{port}/echo",
        "http://169.254.169.254/",
        "http://[::1]:{port}/",
        "http://[::ffff:127.0.0.1]:{port}/",
        "http://internal.test:{port}/echo",
        "http://localhost:{port}/",
        "file:///etc/passwd",
    ],
)
def test_redirects_into_refused_targets(server: NetServer, to: str) -> None:
    resolver = FakeResolver({"internal.test": [["10.0.0.7"]]})
    before = len(server.seen)
    with (
        GuardedSession(["127.0.0.1", "*"], resolver=resolver) as http,
        pytest.raises(NetworkDenied) as caught,
    ):
        http.get(server.url("/redirect?to=" + to.format(port=server.port)))
    assert caught.value.message.startswith("Redirect blocked: ")
    assert len(server.seen) == before + 1


@pytest.mark.parametrize(
    ("location", "path"),
    [
        ("http:/echo?via=1", "/echo?via=1"),
        ("http:echo?via=2", "/echo?via=2"),
        ("HTTP:\\echo?via=3", "/echo?via=3"),
        (":echo", "/:echo"),
    ],
)
def test_a_location_in_the_same_scheme_without_slashes_is_relative(
    server: NetServer, location: str, path: str
) -> None:
    """WHATWG (and so Node's fetch) reads ``http:echo`` from an ``http:`` URL as a path on
    the same host, never as the host ``echo``; ``:echo`` is a path too."""
    with GuardedSession(["127.0.0.1"]) as http:
        response = http.get(server.url("/redirect?to=" + quote(location, safe="")))
    assert response.redirected
    assert response.json()["path"] == path


def test_redirect_limit(server: NetServer) -> None:
    with GuardedSession(["127.0.0.1"]) as http:
        assert http.get(server.url("/chain/5")).redirected
        with pytest.raises(NetworkFailure, match="more than 5 redirects"):
            http.get(server.url("/chain/6"))


@pytest.mark.parametrize(("status", "method"), [(303, "GET"), (302, "GET"), (307, "POST")])
def test_post_redirects(server: NetServer, status: int, method: str) -> None:
    with GuardedSession(["127.0.0.1"]) as http:
        echo = http.post(server.url(f"/redirect?status={status}&to=/echo"), data="d").json()
    assert echo["method"] == method
    assert echo["body"] == ("d" if method == "POST" else "")


CREDENTIALS = {"authorization": "Bearer t0ken", "cookie": "a=b", "proxy-authorization": "Basic x"}


def test_credentials_same_origin_kept_cross_origin_dropped(
    server: NetServer, other: NetServer
) -> None:
    with GuardedSession(["127.0.0.1"]) as http:
        same = http.get(server.url("/redirect?to=/echo"), headers=CREDENTIALS).json()["headers"]
        cross = http.get(
            server.url("/redirect?to=" + other.url("/echo")), headers=CREDENTIALS
        ).json()["headers"]
    assert {k: same.get(k) for k in CREDENTIALS} == CREDENTIALS
    assert not set(CREDENTIALS) & set(cross)


def test_host_header_is_the_urls(server: NetServer) -> None:
    with GuardedSession(["127.0.0.1"]) as http:
        echo = http.get(server.url(), headers={"Host": "internal.corp"}).json()
    assert echo["headers"]["host"] == f"127.0.0.1:{server.port}"


def test_dns_rebinding_cannot_connect() -> None:
    """First answer public, second private: one checked lookup per connection; 127.0.0.1 never
    sees a request. Runs in a loopback-only network namespace (no packet leaves the machine)."""
    outcome = run_in_private_netns("python_rebinding")
    assert outcome["outcomes"] == ["failed", "denied"], outcome
    assert outcome["lookups"] == 2
    assert outcome["calls"] == ["rebind.test", "rebind.test"]
    assert outcome["seen"] == 0


def test_one_private_answer_among_public_ones(server: NetServer) -> None:
    resolver = FakeResolver({"mixed.test": [[PUBLIC_V6, "8.8.8.8", "127.0.0.1"]]})
    with (
        GuardedSession(["mixed.test"], resolver=resolver) as http,
        pytest.raises(NetworkDenied, match=r"resolves to 127\.0\.0\.1"),
    ):
        http.get(f"http://mixed.test:{server.port}/")


def test_localhost_grant_connects_to_the_checked_address(server: NetServer) -> None:
    resolver = FakeResolver({"localhost": [["127.0.0.1"]]})
    with GuardedSession(["localhost"], resolver=resolver) as http:
        echo = http.get(f"http://localhost:{server.port}/echo").json()
        assert http.connected_addresses == ("127.0.0.1",)
    assert echo["headers"]["host"] == f"localhost:{server.port}"
    with (
        GuardedSession(["localhost"], resolver=FakeResolver({"localhost": [["10.0.0.1"]]})) as http,
        pytest.raises(NetworkDenied, match="not a loopback address"),
    ):
        http.get(f"http://localhost:{server.port}/echo")


def test_tls_keeps_sni_and_verifies(tmp_path: Path) -> None:
    """A name resolved by the guard, connected by address: the certificate is still checked
    against the name (SNI + hostname verification), and an unknown CA is refused."""
    resolver = FakeResolver({"localhost": [["127.0.0.1"]]})
    with serve_tls(tmp_path) as (port, ca):
        with GuardedSession(["localhost"], resolver=resolver, ca_bundle=str(ca)) as http:
            assert http.get(f"https://localhost:{port}/echo").json()["path"] == "/echo"
        with (
            GuardedSession(["localhost"], resolver=resolver) as http,
            pytest.raises(NetworkFailure, match="TLS verification failed") as caught,
        ):
            http.get(f"https://localhost:{port}/echo")
    assert caught.value.cause == "UNABLE_TO_GET_ISSUER_CERT_LOCALLY"


def test_size_limit_also_after_decoding(server: NetServer) -> None:
    with GuardedSession(["127.0.0.1"], max_response_bytes=1_000_000) as http:
        with pytest.raises(ResponseTooLarge) as caught:
            http.get(server.url("/big?bytes=2000000"))
        assert caught.value.code == ErrorCode.RESPONSE_TOO_LARGE
        with pytest.raises(ResponseTooLarge):
            http.get(server.url("/gzip-bomb?bytes=20000000"))
        assert http.get(server.url("/gzip")).json() == {"coding": "gzip"}


def test_time_limit(server: NetServer) -> None:
    with (
        GuardedSession(["127.0.0.1"], timeout_s=0.3) as http,
        pytest.raises(NetworkTimeout) as caught,
    ):
        http.get(server.url("/slow?ms=2000"))
    assert caught.value.code == ErrorCode.TIMEOUT


def test_redirect_modes(server: NetServer) -> None:
    with GuardedSession(["127.0.0.1"]) as http:
        manual = http.get(server.url("/redirect?to=/echo"), redirect="manual")
        assert (manual.status, manual.headers["location"]) == (302, "/echo")
        with pytest.raises(NetworkFailure, match="redirect mode"):
            http.get(server.url("/redirect?to=/echo"), redirect="error")


def test_environment_proxies_are_never_used(
    server: NetServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:1")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:1")
    with GuardedSession(["127.0.0.1"]) as http:
        assert http.get(server.url()).status == 200


def test_an_empty_allow_list_and_tunnel_methods_are_refused(server: NetServer) -> None:
    with pytest.raises(ValueError):
        GuardedSession([])
    with GuardedSession(["127.0.0.1"]) as http, pytest.raises(ValueError, match="CONNECT"):
        http.request("CONNECT", server.url())


def test_a_head_sent_a_byte_at_a_time_ends_at_the_deadline() -> None:
    """Each byte comes before the per-read timeout, so only a deadline on the whole head ends
    the request: TIMEOUT at about ``timeout_s``, not when the server is done."""
    head = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000
    with (
        drip_server((bytes([byte]) for byte in head), 0.3) as drip,
        GuardedSession(["127.0.0.1"], timeout_s=1.5) as http,
        pytest.raises(NetworkTimeout) as caught,
    ):
        http.get(f"http://127.0.0.1:{drip.port}/")  # the server would drip for 50 minutes
    assert caught.value.code == ErrorCode.TIMEOUT


def _gzip_that_decodes_to_nothing_for_a_while() -> Iterator[bytes]:
    """A gzip body whose first 100 pieces are empty stored deflate blocks: urllib3 reads on
    inside one ``read1`` until something decodes, so no check between reads ever runs."""
    yield b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n"
    yield b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"
    for _ in range(100):
        yield b"\x00\x00\x00\xff\xff"
    packer = zlib.compressobj(wbits=-15)
    yield packer.compress(b"late") + packer.flush() + struct.pack("<II", zlib.crc32(b"late"), 4)


def _chunked_with_trailers_for_a_while() -> Iterator[bytes]:
    """One chunk, then 100 trailer lines: http.client reads and drops trailers inside the
    read of the last chunk, as many as come."""
    yield b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nlate\r\n0\r\n"
    for _ in range(100):
        yield b"X-Trailer: x\r\n"
    yield b"\r\n"


@pytest.mark.parametrize(
    "pieces", [_gzip_that_decodes_to_nothing_for_a_while, _chunked_with_trailers_for_a_while]
)
def test_a_body_read_that_loops_inside_the_parser_ends_at_the_deadline(
    pieces: Callable[[], Iterator[bytes]],
) -> None:
    """Every piece comes well before the per-read timeout and none yields body bytes, so the
    parser's own loop keeps reading: the deadline must end it with TIMEOUT and hang up, not
    wait for the server to finish (its whole answer takes about 10 s)."""
    with (
        drip_server(pieces(), 0.1) as drip,
        GuardedSession(["127.0.0.1"], timeout_s=1.0) as http,
    ):
        with pytest.raises(NetworkTimeout) as caught:
            http.get(f"http://127.0.0.1:{drip.port}/")
        assert not drip.finished.is_set()
    assert caught.value.code == ErrorCode.TIMEOUT


def test_a_timed_out_request_leaves_the_session_usable(server: NetServer) -> None:
    """A long-lived session (a provider's) times out one request at its deadline; the next
    request opens a new connection instead of failing as aborted."""
    head = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100
    with GuardedSession(["127.0.0.1"], timeout_s=1.0) as http:
        with (
            drip_server((bytes([byte]) for byte in head), 0.2) as drip,
            pytest.raises(NetworkTimeout),
        ):
            http.get(f"http://127.0.0.1:{drip.port}/")
        assert http.get(server.url("/echo"), timeout_s=30).status == 200


def test_a_deadline_during_the_name_lookup_stops_the_connection(server: NetServer) -> None:
    """The look-up cannot be interrupted; when it returns after the deadline, the request
    ends with TIMEOUT before it connects (the server sees nothing)."""
    import time

    def slow_resolver(name: str) -> list[str]:
        time.sleep(1.0)
        return ["127.0.0.1"]

    before = len(server.seen)
    with (
        GuardedSession(["localhost"], resolver=slow_resolver, timeout_s=0.3) as http,
        pytest.raises(NetworkTimeout) as caught,
    ):
        http.get(f"http://localhost:{server.port}/echo")
    assert caught.value.code == ErrorCode.TIMEOUT
    assert len(server.seen) == before


@pytest.mark.parametrize(
    "line",
    [b"X-Nul: a\x00b", b"X-Ctl: a\x01b", b"X-Del: a\x7fb", b"X@: v", b"X-Esc: \x1b[2J"],
)
def test_a_header_no_fetch_client_would_accept_fails_the_request(line: bytes) -> None:
    """http.client keeps these lines; a tool's Headers would get them unchecked."""
    head = b"HTTP/1.1 200 OK\r\n" + line + b"\r\nContent-Length: 1\r\n\r\nz"
    with (
        drip_server([head], 0) as drip,
        GuardedSession(["127.0.0.1"]) as http,
        pytest.raises(NetworkFailure) as caught,
    ):
        http.get(f"http://127.0.0.1:{drip.port}/")
    assert caught.value.code == ErrorCode.NETWORK_ERROR
    assert caught.value.cause == "HPE_INVALID_HEADER_TOKEN"


def test_a_folded_header_is_unfolded_to_one_space() -> None:
    head = b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 1\r\n\r\nz"
    with drip_server([head], 0) as drip, GuardedSession(["127.0.0.1"]) as http:
        response = http.get(f"http://127.0.0.1:{drip.port}/")
    assert response.headers["x-folded"] == "a b"


def test_a_label_longer_than_dns_allows_is_not_found() -> None:
    """The URL standard takes a 64-character label; no DNS name has one. The system
    resolver's codec refuses it before any look-up: a NetworkFailure (ENOTFOUND), as in
    Node, never a bare UnicodeError."""
    with GuardedSession(["*"]) as http, pytest.raises(NetworkFailure) as caught:
        http.get(f"http://{'a' * 64}.test/")
    assert caught.value.code == ErrorCode.NETWORK_ERROR
    assert caught.value.cause == "ENOTFOUND"


# Answers a server may end with that are no final response: http.client takes any 1xx but
# 100 as final (with no body) and passes 600–999 on.
IMPOSSIBLE_FINAL = {
    "early_hints_alone": b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>\r\n\r\n",
    "switching_without_upgrade": b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    "processing_then_ok": (
        b"HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
    ),
    "status_199": b"HTTP/1.1 199 Whatever\r\n\r\n",
    "status_600": b"HTTP/1.1 600 Whatever\r\nContent-Length: 2\r\n\r\nhi",
    "status_999": b"HTTP/1.1 999 Whatever\r\n\r\n",
}


@pytest.mark.parametrize("name", sorted(IMPOSSIBLE_FINAL))
def test_a_final_status_outside_200_599_is_a_network_error(name: str) -> None:
    with (
        drip_server([IMPOSSIBLE_FINAL[name]], 0) as drip,
        GuardedSession(["127.0.0.1"], timeout_s=5) as http,
        pytest.raises(NetworkFailure) as caught,
    ):
        http.get(f"http://127.0.0.1:{drip.port}/")
    assert caught.value.code == ErrorCode.NETWORK_ERROR
    assert caught.value.cause == CAUSE_INVALID_RESPONSE
    status = IMPOSSIBLE_FINAL[name].split(b" ")[1].decode()
    assert caught.value.message == (
        f'Request to "127.0.0.1" failed: the response has an invalid status {status}'
    )


@pytest.mark.parametrize(
    ("value_bytes", "fails"),
    [(16_300, False), (16_400, True), (65_000, True)],
)
def test_a_response_head_over_16_kib_fails_as_nodes_fetch_does(
    value_bytes: int, fails: bool
) -> None:
    """Node's fetch answers the same heads the same way (16,300 bytes of value pass, 16,400 do
    not: 16 KiB for the whole head)."""
    head = b"HTTP/1.1 200 OK\r\nX-A: " + b"a" * value_bytes + b"\r\nContent-Length: 2\r\n\r\nhi"
    with drip_server([head], 0) as drip, GuardedSession(["127.0.0.1"], timeout_s=5) as http:
        if not fails:
            assert http.get(f"http://127.0.0.1:{drip.port}/").content == b"hi"
            return
        with pytest.raises(NetworkFailure) as caught:
            http.get(f"http://127.0.0.1:{drip.port}/")
    assert caught.value.code == ErrorCode.NETWORK_ERROR
    assert caught.value.cause == "UND_ERR_HEADERS_OVERFLOW"
