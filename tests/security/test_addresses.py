"""Address classification from netpolicy.json (the one implementation: the parent performs
every sandboxed fetch; tests/network/test_url_table.py runs the same ranges end to end)."""

from __future__ import annotations

import pytest

from splice_build.security.addresses import (
    address_key,
    is_loopback_address,
    is_public_address,
    refused_range,
)
from splice_build.security.netpolicy import load_policy

# (address, public)
CASES = [
    ("8.8.8.8", True),
    ("1.1.1.1", True),
    ("93.184.215.14", True),
    ("0.0.0.0", False),
    ("10.1.2.3", False),
    ("100.64.0.1", False),
    ("100.63.255.255", True),
    ("127.0.0.1", False),
    ("127.255.255.254", False),
    ("169.254.169.254", False),
    ("172.16.0.1", False),
    ("172.32.0.1", True),
    ("192.0.0.8", False),
    ("192.0.2.1", False),
    ("192.88.99.1", False),
    ("192.168.0.1", False),
    ("198.18.0.1", False),
    ("198.51.100.1", False),
    ("203.0.113.9", False),
    ("224.0.0.251", False),
    ("255.255.255.255", False),
    ("::", False),
    ("::1", False),
    ("::ffff:8.8.8.8", False),
    ("::ffff:7f00:1", False),
    ("::8.8.8.8", False),
    ("::ffff:0:808:808", False),
    ("64:ff9b::808:808", False),
    ("64:ff9b:1::1", False),
    ("100::1", False),
    ("2001::1", False),
    ("2001:1ff::1", False),
    ("2001:200::1", True),
    ("2001:db8::1", False),
    ("2002:808:808::1", False),
    ("3fff::1", False),
    ("5f00::1", False),
    ("fc00::1", False),
    ("fdff::1", False),
    ("fe80::1", False),
    ("fe80::1%eth0", False),
    ("fec0::1", False),
    ("ff02::1", False),
    ("2606:4700:4700::1111", True),
    ("2a00:1450::1", True),
    # global unicast 2000::/3 only: unallocated space is never public
    ("2000::1", True),
    ("3fff:1000::1", True),
    ("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", False),
    ("4000::1", False),
    ("1000::1", False),
    ("e000::1", False),
    ("fe00::1", False),
    ("localhost", False),
    ("127.1", False),
    ("", False),
    ("not an address", False),
]


@pytest.mark.parametrize(("address", "public"), CASES)
def test_python_classification(address: str, public: bool) -> None:
    assert is_public_address(address) is public


def test_ranges_are_named_and_separate() -> None:
    assert refused_range("169.254.169.254") == "link-local (cloud metadata 169.254.169.254)"
    assert refused_range("::ffff:127.0.0.1") == "IPv4-mapped"
    assert refused_range("8.8.8.8") is None
    policy = load_policy()
    assert all(net.version == 4 for net, _ in policy.refused_v4)
    assert all(net.version == 6 for net, _ in policy.refused_v6)


def test_loopback_and_keys() -> None:
    assert is_loopback_address("127.0.0.2") and is_loopback_address("::1")
    assert not is_loopback_address("::ffff:127.0.0.1") and not is_loopback_address("10.0.0.1")
    assert address_key("::ffff:1.2.3.4") == address_key("::ffff:102:304")
    assert address_key("1.2.3.4") != address_key("::ffff:1.2.3.4")
    assert address_key("nope") is None


def test_ipv6_outside_global_unicast_is_refused_by_name_and_in_a_connection() -> None:
    """A name answering only ``4000::1`` (unallocated, routable on some private network)
    is refused before any connection, as the literal is."""
    from splice_build.security.guarded_http import GuardedSession
    from splice_build.security.net_errors import NetworkDenied
    from splice_build.security.targets import check_target
    from splice_build.security.urls import parse_url
    from testing.netservers import FakeResolver

    assert refused_range("4000::1") == "not global unicast (outside 2000::/3)"
    with pytest.raises(NetworkDenied) as literal:
        check_target(parse_url("http://[4000::1]/"), ["*"])
    assert literal.value.reason == "not-public"
    resolver = FakeResolver({"unallocated.test": [["4000::1"]]})
    with (
        GuardedSession(["*"], resolver=resolver) as http,
        pytest.raises(NetworkDenied) as named,
    ):
        http.get("http://unallocated.test/")
    assert named.value.reason == "not-public"
    assert http.connected_addresses == ()
