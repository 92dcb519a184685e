"""ROBINHOOD_RPC_URL names the one host the JSON-RPC provider may reach, and a checkout's
``.env`` may set it: whoever wrote the checkout chooses it. The guard takes an allowed IP
literal or ``localhost`` as an explicit grant, so the endpoint is checked with no grant at
all (broker/targets.py ``endpoint_problem``): a ``.env`` naming 127.0.0.1 made Splice open
a TLS connection to a loopback service, and a tool could tell an open port from a closed one
by the error it got back."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

from splice_build.broker import Broker
from splice_build.broker.broker import default_broker
from splice_build.broker.keys import ProviderKeys
from splice_build.broker.targets import endpoint_problem
from splice_build.security.netpolicy import load_policy

BALANCE = {
    "package": "@t/p",
    "tool": "t",
    "capability": "onchain.balance",
    "args": {"address": "0x" + "1f" * 20},
}
REFUSED = (
    "ROBINHOOD_RPC_URL names no public host (not-public): it must be an https URL of a public host"
)


def test_a_checkout_env_cannot_point_the_endpoint_at_a_loopback_service(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as service:
        service.setblocking(False)
        checkout = tmp_path / "checkout"
        checkout.mkdir()
        port = service.getsockname()[1]
        (checkout / ".env").write_text(f"ROBINHOOD_RPC_URL=https://127.0.0.1:{port}/v2/key\n")
        broker = default_broker(project_root=checkout, env={}, home=tmp_path / "home")
        result = broker.call(BALANCE)
        assert (result["status"], result["code"], result["message"]) == (
            "ERROR",
            "PROVIDER_ERROR",
            REFUSED,
        )
        # A connection would be complete (in the listen backlog) by the time call returned.
        try:
            service.accept()[0].close()
            connected = True
        except BlockingIOError:
            connected = False
        assert not connected


def _edges() -> list[str]:
    """The first and last address of every refused range, and every loopback address."""
    policy = load_policy()
    networks = [net for net, _ in (*policy.refused_v4, *policy.refused_v6)]
    return [str(ip) for net in networks for ip in (net[0], net[-1])]


def test_the_endpoint_is_an_https_url_of_a_public_host() -> None:
    for address in _edges():
        host = f"[{address}]" if ipaddress.ip_address(address).version == 6 else address
        assert endpoint_problem(f"https://{host}:8545/v2/key")[0] is None, address
    for url in (
        "https://localhost/",
        "https://LOCALHOST./v2/key",
        "https://rpc.localhost/",
        "https://127.1/",
        "https://2130706433/",
        "https://0x7f.1/",
        "https://[::ffff:127.0.0.1]/",
        "https://[4000::1]/",
        "https://user:pw@rpc.example.com/",
        "http://rpc.example.com/v2/key",
    ):
        assert endpoint_problem(url)[0] is None, url
    for url in (
        "https://rpc.example.com/v2/key?x=1",
        "https://8.8.8.8/",
        "https://[2606:4700::1]/",
    ):
        target, problem = endpoint_problem(url)
        assert problem is None and target is not None, url
    # The WHATWG reading is the one checked and the one the provider's session is given.
    target, _ = endpoint_problem("https:rpc.example.com\\@127.0.0.1/")
    assert target is not None and target.url.href == "https://rpc.example.com/@127.0.0.1/"
    broker = Broker(keys=ProviderKeys({"ROBINHOOD_RPC_URL": "https://[fd00::1]:8545/k"}))
    assert broker.call(BALANCE)["message"] == REFUSED
