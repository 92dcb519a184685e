"""Which address a request comes from: X-Forwarded-For read from the right, and only from
trusted proxies (docs/registry.md#behind-a-reverse-proxy). The server-level attacks are in
test_abuse_limits.py."""

from __future__ import annotations

import pytest

from splice_build.client_address import client_address, client_key, parse_trusted_proxy


@pytest.mark.parametrize(
    ("peer", "forwarded", "trusted", "client"),
    [
        ("127.0.0.1", ["203.0.113.9"], [], "127.0.0.1"),
        ("127.0.0.1", ["203.0.113.9"], ["127.0.0.0/8"], "203.0.113.9"),
        ("127.0.0.1", ["203.0.113.9, 10.1.2.3"], ["127.0.0.1", "10.0.0.0/8"], "203.0.113.9"),
        ("127.0.0.1", ["1.1.1.1", "203.0.113.9"], ["127.0.0.1"], "203.0.113.9"),
        ("127.0.0.1", ["10.1.1.1, 10.2.2.2"], ["127.0.0.1", "10.0.0.0/8"], "10.1.1.1"),
        ("::1", ["2001:db8::7"], ["::1"], "2001:db8::7"),
        ("127.0.0.1", ["::ffff:203.0.113.9"], ["127.0.0.1"], "203.0.113.9"),
        ("127.0.0.1", ["203.0.113.9, junk"], ["127.0.0.1"], "127.0.0.1"),
        ("127.0.0.1", [], ["127.0.0.1"], "127.0.0.1"),
    ],
)
def test_client_address_reads_forwarded_for_from_the_right(
    peer: str, forwarded: list[str], trusted: list[str], client: str
) -> None:
    networks = [parse_trusted_proxy(text) for text in trusted]
    assert client_address(peer, forwarded, networks) == client


@pytest.mark.parametrize(
    ("client", "key"),
    [
        ("198.51.100.7", "198.51.100.7"),
        ("::ffff:198.51.100.7", "198.51.100.7"),  # a dual-stack socket's IPv4 client: itself
        ("2001:db8::1", "2001:db8::/64"),
        ("2001:db8::ffff:1:2:3", "2001:db8::/64"),
        ("2001:db8:0:1::1", "2001:db8:0:1::/64"),
        ("local", "local"),
    ],
)
def test_rate_limits_count_an_ipv6_client_by_its_64_network(client: str, key: str) -> None:
    assert client_key(client) == key
