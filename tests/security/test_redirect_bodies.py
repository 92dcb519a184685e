"""A server's redirect is only a status to Splice's HTTP clients: its body is never read and
its ``Location`` never parsed by ``requests`` (security/http_session.py).

``requests.Session.send`` with ``allow_redirects=False`` still read a redirect's whole body,
decompressed and past every cap (a 302 with 400 KB of gzip: 850 MB held by the client), and
parsed its ``Location``, raising ``UnicodeDecodeError`` or ``ValueError`` out of the client.
Each server here answers a 302 whose body never ends: read, it would stall the client until
its deadline; the client must answer at once with what a redirect is to it.
"""

from __future__ import annotations

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.client.deadline import Deadlines
from splice_build.registry.client.http import HttpRegistryClient
from splice_build.security.guarded_http import GuardedSession
from splice_build.security.net_errors import NetworkDenied
from testing.netservers import drip_server

LOCATIONS = [b"/elsewhere", b"http://x/\xff", b"http://[::1/"]


def _redirect(location: bytes) -> list[bytes]:
    """A 302 that promises 10 MB of body, sends 80 KiB of it (more than the 64 KiB of an
    error body the registry client reads), then waits."""
    head = b"HTTP/1.1 302 Found\r\nLocation: %s\r\nContent-Length: 10000000\r\n\r\n" % location
    return [head + b"x" * 80 * 1024, b"x" * 1024]


@pytest.mark.parametrize("location", LOCATIONS, ids=["stalled-body", "not-utf8", "bad-ipv6"])
def test_the_registry_client_reports_a_redirect_without_reading_it(location: bytes) -> None:
    """Before: REGISTRY_UNAVAILABLE at the deadline, UnicodeDecodeError, ValueError."""
    with drip_server(_redirect(location), pause_s=60) as server:
        client = HttpRegistryClient(
            f"http://127.0.0.1:{server.port}", deadlines=Deadlines(request=5.0)
        )
        with pytest.raises(RegistryError) as caught:
            client.package("@acme/thing")
        client.close()
    assert caught.value.code == ErrorCode.REGISTRY_ERROR
    assert caught.value.message == "Registry error: HTTP 302"


def test_the_guarded_session_hands_a_redirect_back_unread() -> None:
    """Before: ``send`` read the body until the request's time ran out, and handed back a
    302 with none of it left to read (its caps never saw it)."""
    with (
        drip_server(_redirect(b"/elsewhere"), pause_s=60) as server,
        GuardedSession(["127.0.0.1"], timeout_s=5) as http,
    ):
        stream = http.open("GET", f"http://127.0.0.1:{server.port}/", redirect="manual")
        assert stream.status == 302
        assert stream.read_chunk(1024) == b"x" * 1024
        stream.close()


def test_the_guarded_session_checks_a_location_that_is_not_utf8() -> None:
    """Before: UnicodeDecodeError out of ``send``; now the hop is checked like any other."""
    with (
        drip_server(_redirect(b"http://x/\xff"), pause_s=60) as server,
        GuardedSession(["127.0.0.1"], timeout_s=5) as http,
        pytest.raises(NetworkDenied) as caught,
    ):
        http.open("GET", f"http://127.0.0.1:{server.port}/")
    assert caught.value.code == ErrorCode.PERMISSION_DENIED
    assert caught.value.message.startswith("Redirect blocked")
