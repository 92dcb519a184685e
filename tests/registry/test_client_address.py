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
        # node forms a proxy may write: the port is dropped, brackets taken off
        ("127.0.0.1", ["203.0.113.9:4711"], ["127.0.0.1"], "203.0.113.9"),
        ("127.0.0.1", ["[2001:db8::7]"], ["127.0.0.1"], "2001:db8::7"),
        ("127.0.0.1", ["[2001:db8::7]:443"], ["127.0.0.1"], "2001:db8::7"),
        ("127.0.0.1", ["[2001:db8::7]443"], ["127.0.0.1"], "127.0.0.1"),
        ("127.0.0.1", ["[2001:db8::7"], ["127.0.0.1"], "127.0.0.1"),
        ("127.0.0.1", ["203.0.113.9:99999x"], ["127.0.0.1"], "127.0.0.1"),
        # empty list elements are skipped; only SP and HTAB surround an element
        ("127.0.0.1", ["203.0.113.9, ,"], ["127.0.0.1"], "203.0.113.9"),
        ("127.0.0.1", ["\t203.0.113.9 "], ["127.0.0.1"], "203.0.113.9"),
        ("127.0.0.1", ["203.0.113.9\xa0"], ["127.0.0.1"], "127.0.0.1"),
        # a zone index names the proxy's interface, never a client
        ("127.0.0.1", ["fe80::1%eth0"], ["127.0.0.1"], "127.0.0.1"),
        ("127.0.0.1", ["unknown"], ["127.0.0.1"], "127.0.0.1"),
        ("127.0.0.1", ["_hidden"], ["127.0.0.1"], "127.0.0.1"),
        # a trusted proxy named as an IPv4-mapped address is the IPv4 peer it means
        ("127.0.0.1", ["203.0.113.9"], ["::ffff:127.0.0.1"], "203.0.113.9"),
        ("::ffff:127.0.0.1", ["203.0.113.9"], ["::ffff:127.0.0.0/104"], "203.0.113.9"),
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


@pytest.mark.parametrize(
    ("text", "network"),
    [
        ("::ffff:10.0.0.5", "10.0.0.5/32"),
        ("::ffff:10.0.0.0/104", "10.0.0.0/8"),
        ("10.0.0.7/24", "10.0.0.0/24"),
        ("2001:db8::/32", "2001:db8::/32"),
    ],
)
def test_a_trusted_proxy_is_one_network_of_its_own_family(text: str, network: str) -> None:
    assert str(parse_trusted_proxy(text)) == network


@pytest.mark.parametrize("text", ["0.0.0.0/0", "::/0", "::ffff:0:0/96", "localhost"])
def test_a_trusted_proxy_of_every_address_or_a_name_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_trusted_proxy(text)
