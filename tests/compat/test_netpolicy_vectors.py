"""The network guard's verdicts as the TypeScript Splice gives them (tests/compat/netpolicy.json),
run against the Python guard: ``security.addresses`` (classification), ``security.urls`` and
``security.targets`` (URL checks) and ``security.guarded_http`` (DNS answers, checked inside
the connection's own lookup). Nothing here uses the Node host's guard files.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from splice_build.security.addresses import is_public_address, refused_range
from splice_build.security.guarded_http import GuardedSession
from splice_build.security.net_errors import NetworkDenied, NetworkFailure
from splice_build.security.netpolicy import load_policy
from splice_build.security.targets import check_target
from splice_build.security.urls import InvalidUrl, parse_url
from testing.compat import load, params
from testing.netservers import FakeResolver, NetServer, serve

VECTORS = load("netpolicy")


@pytest.fixture(scope="module")
def server() -> Iterator[NetServer]:
    with serve() as running:
        yield running


def _reason(case: dict[str, Any]) -> str | None:
    return case.get("here", case.get("reason"))


@pytest.mark.parametrize("address", params(VECTORS["nonPublicV4"] + VECTORS["nonPublicV6"]))
def test_non_public_addresses(address: str) -> None:
    assert not is_public_address(address)
    assert refused_range(address) is not None


@pytest.mark.parametrize("address", params(VECTORS["publicV4"] + VECTORS["publicV6"]))
def test_public_addresses(address: str) -> None:
    assert is_public_address(address)
    assert refused_range(address) is None


@pytest.mark.parametrize("text", params(VECTORS["notAddresses"]))
def test_text_that_is_not_an_address_is_not_public(text: str) -> None:
    assert not is_public_address(text)


@pytest.mark.parametrize("case", params(VECTORS["targets"], label="url"))
def test_targets(case: dict[str, Any]) -> None:
    try:
        target = check_target(parse_url(case["url"]), case["patterns"])
    except (NetworkDenied, InvalidUrl) as exc:
        assert not case["allowed"], str(exc)
        reason = _reason(case)
        if reason is not None:
            assert re.search(reason, str(exc)), str(exc)
        return
    assert case["allowed"], target
    assert (target.grant != "none") is case["explicit"]


@pytest.mark.parametrize("case", params(VECTORS["resolved"], label="host"))
def test_resolved_addresses(case: dict[str, Any], server: NetServer) -> None:
    """Refusals go through a real GuardedSession whose resolver gives the answers: refused
    before any connection. An allowed localhost grant connects to a real local server. Public
    answers are checked with the guard's own per-answer rule (connecting would need the
    internet)."""
    host, answers = case["host"], case["answers"]
    patterns = [host] if case["explicit"] else ["*"]
    if case["allowed"] and not case["explicit"]:
        assert answers and all(is_public_address(a) for a in answers)
        return
    resolver = FakeResolver({host: [answers]})
    with GuardedSession(patterns, resolver=resolver, timeout_s=10) as http:
        if case["allowed"]:
            response = http.get(f"http://{host}:{server.port}/echo")
            assert response.status == 200
            assert http.connected_addresses == ("127.0.0.1",)
            return
        expected = NetworkFailure if case.get("failure") else NetworkDenied
        with pytest.raises(expected) as caught:
            http.get(f"http://{host}:{server.port}/echo")
        assert type(caught.value) is expected
        assert http.connected_addresses == ()
    reason = _reason(case)
    if reason is not None:
        assert re.search(reason, str(caught.value)), str(caught.value)
    assert resolver.calls == [host]


def test_redirect_limit() -> None:
    assert load_policy().max_redirects == VECTORS["maxRedirects"]
