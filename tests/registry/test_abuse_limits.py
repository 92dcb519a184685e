"""Registry abuse limits an attacker cannot turn around (docs/registry.md#abuse-limits).

Against the real `splice registry serve` on 127.0.0.1: ``X-Forwarded-For`` moves a request to
another address only when the peer is a ``--trusted-proxy``; a client that spent its
failed-token budget gets 429 for failing tokens while a valid token from the same address
still works; namespaces and package names that imitate reserved ones are refused at creation
(``NAME_CONFUSABLE``), with the real `splice publish`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from splice_build.registry.service.ratelimit import RateLimits
from testing.cli import run_splice
from testing.rate_windows import away_from_window_ends
from testing.registry import package_dir
from testing.registry_server import (
    ADMIN_TOKEN,
    RunningRegistry,
    registry_server,
    serve_argv,
    user_token,
)

BUDGET = RateLimits().failed_auth  # failing tokens per address and window
# The failures count in fixed windows of this many seconds: a test that spends a budget starts
# 15 s or more before a window ends, or the count would start again under its checks.
WINDOW = RateLimits().failed_auth_period
BOGUS = "splice_" + "x" * 43
LIMITS_OFF = ("--publish-limit", "0", "--request-limit", "0")


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[RunningRegistry]:
    with registry_server(tmp_path / "data", *LIMITS_OFF) as server:
        yield server


def _whoami(server: RunningRegistry, token: str, forwarded: str | None = None) -> int:
    headers = {"authorization": f"Bearer {token}"}
    if forwarded is not None:
        headers["x-forwarded-for"] = forwarded
    return requests.get(f"{server.url}/auth/whoami", headers=headers, timeout=10).status_code


def _spend_budget(server: RunningRegistry, forwarded: str | None = None) -> None:
    away_from_window_ends(WINDOW, margin=15)
    for _ in range(BUDGET):
        assert _whoami(server, BOGUS, forwarded) == 401
    assert _whoami(server, BOGUS, forwarded) == 429


def test_a_spent_failure_budget_does_not_lock_out_a_valid_token(plain: RunningRegistry) -> None:
    token = user_token(plain, "neighbour")
    _spend_budget(plain)
    assert _whoami(plain, token) == 200, "a valid token from the same address still works"
    assert _whoami(plain, BOGUS) == 429, "failing tokens stay refused"
    answer = requests.get(
        f"{plain.url}/auth/whoami", headers={"authorization": "Bearer nonsense"}, timeout=10
    )
    assert answer.status_code == 429 and answer.json()["error"]["code"] == "RATE_LIMITED"
    assert answer.headers["retry-after"] == str(RateLimits().failed_auth_period)


def test_failing_user_tokens_do_not_block_the_admin_api(plain: RunningRegistry) -> None:
    _spend_budget(plain)
    users = requests.post(
        f"{plain.url}/admin/users",
        json={"name": "carol"},
        headers={"authorization": f"Bearer {ADMIN_TOKEN}"},
        timeout=10,
    )
    assert users.status_code == 201, users.text


@pytest.mark.parametrize("trusted", [(), ("10.0.0.0/8",)])
def test_x_forwarded_for_from_an_untrusted_peer_changes_nothing(
    tmp_path: Path, trusted: tuple[str, ...]
) -> None:
    flags = [arg for network in trusted for arg in ("--trusted-proxy", network)]
    with registry_server(tmp_path / "data", *LIMITS_OFF, *flags) as server:
        _spend_budget(server, forwarded="198.51.100.1")
        # another claimed address is still this peer, whose budget is spent
        assert _whoami(server, BOGUS, forwarded="198.51.100.2") == 429
        assert _whoami(server, BOGUS) == 429


# An IPv4-mapped IPv6 address is how a dual-stack socket (`--host ::`) shows an IPv4 peer: it
# names the same proxy, and was once never matched (every client then shared the proxy's budget).
@pytest.mark.parametrize("proxy", ["127.0.0.1", "::ffff:127.0.0.1", "::ffff:127.0.0.0/104"])
def test_behind_a_trusted_proxy_the_forwarded_client_is_the_one_counted(
    tmp_path: Path, proxy: str
) -> None:
    with registry_server(tmp_path / "data", *LIMITS_OFF, "--trusted-proxy", proxy) as server:
        _spend_budget(server, forwarded="198.51.100.1")
        assert _whoami(server, BOGUS, forwarded="198.51.100.2") == 401, "another client"
        assert _whoami(server, BOGUS) == 401, "the proxy's own address is another client too"
        # the client wrote the left part; the proxy appended the address it really saw
        assert _whoami(server, BOGUS, forwarded="198.51.100.2, 198.51.100.1") == 429
        assert _whoami(server, BOGUS, forwarded="not-an-address, 198.51.100.1") == 429


@pytest.mark.parametrize(
    "written",
    ["198.51.100.1:4711", "198.51.100.1, ,", ",\t198.51.100.1\t,", "[::ffff:198.51.100.1]:443"],
)
def test_a_proxy_writing_a_node_form_charges_its_client_not_itself(
    tmp_path: Path, written: str
) -> None:
    """A proxy that writes the client with its port, in brackets or with empty list elements
    still names that client: were the entry unreadable, every client behind the proxy would
    share the proxy's budget, and one of them could lock out all the others."""
    with registry_server(tmp_path / "data", *LIMITS_OFF, "--trusted-proxy", "127.0.0.1") as server:
        _spend_budget(server, forwarded=written)
        assert _whoami(server, BOGUS, forwarded="198.51.100.1") == 429, "the same client"
        assert _whoami(server, BOGUS) == 401, "the proxy itself was not charged"


@pytest.mark.parametrize(
    "value", ["nonsense", "10.0.0.0/33", "", "localhost", "0.0.0.0/0", "::/0", "::ffff:0:0/96"]
)
def test_a_malformed_trusted_proxy_is_a_usage_error(tmp_path: Path, value: str) -> None:
    done = run_splice(*serve_argv(tmp_path / "data", "--trusted-proxy", value)[1:], timeout=30)
    assert done.code == 2
    assert "--trusted-proxy" in done.stderr


# -- confusable names -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def publishing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningRegistry, str]]:
    data = tmp_path_factory.mktemp("confusable")
    with registry_server(data / "data", *LIMITS_OFF) as server:
        yield server, user_token(server, "mallory")


def _publish(
    publishing: tuple[RunningRegistry, str], tmp_path: Path, namespace: str, name: str
) -> Any:
    server, token = publishing
    source = package_dir(tmp_path / "src" / namespace, namespace, name, "1.0.0")
    done = run_splice(
        "--json", "publish", str(source), "--registry", server.url, env={"SPLICE_TOKEN": token}
    )
    return done.code, json.loads(done.stdout)


@pytest.mark.parametrize(
    ("namespace", "name", "like"),
    [
        ("spl1ce", "tool", "@splice"),
        ("s-p-l-i-c-e", "tool", "@splice"),
        ("splice-official", "tool", "@splice"),
        ("official-splice", "tool", "@splice"),
        ("spliceofficial", "tool", "@splice"),
        ("sp1iceloom", "tool", "@spliceloom"),
        ("r00t", "tool", "@root"),
        ("adm1n", "tool", "@admin"),
        ("off1cial", "tool", "@official"),
        ("vvww", "tool", "@www"),
        ("mallory", "splice", "@splice"),
        ("mallory", "spl1ce-files", "@splice"),
        ("mallory", "files-splice", "@splice"),
    ],
)
def test_confusable_names_are_refused_at_creation(
    publishing: tuple[RunningRegistry, str], tmp_path: Path, namespace: str, name: str, like: str
) -> None:
    code, answer = _publish(publishing, tmp_path, namespace, name)
    assert code == 1, answer
    error = answer["error"]
    assert "registry code: NAME_CONFUSABLE" in error["details"], error
    assert like in error["message"] and "reserved" in error["message"]
    server, _ = publishing
    if namespace != "mallory":
        assert requests.get(f"{server.url}/namespaces/{namespace}", timeout=10).status_code == 404
    assert requests.get(f"{server.url}/packages/{namespace}/{name}", timeout=10).status_code == 404


@pytest.mark.parametrize(
    ("namespace", "name"),
    [("mallory", "splicer"), ("mallory-tools", "dimension"), ("acmeteam", "api-client")],
)
def test_ordinary_names_are_not_confusable(
    publishing: tuple[RunningRegistry, str], tmp_path: Path, namespace: str, name: str
) -> None:
    code, answer = _publish(publishing, tmp_path, namespace, name)
    assert code == 0, answer


@pytest.fixture(scope="module")
def acme_exists(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningRegistry, str]]:
    """A registry where user ``acme`` has published ``@acme/greeter``; the token is acme's."""
    root = tmp_path_factory.mktemp("lookalike")
    with registry_server(root / "data", *LIMITS_OFF) as server:
        token = user_token(server, "acme")
        code, answer = _publish((server, token), root, "acme", "greeter")
        assert code == 0, answer
        yield server, token


@pytest.mark.parametrize("namespace", ["acrne", "ac-me", "acm3", "a-c-m-e"])
def test_a_look_alike_of_another_publishers_namespace_is_refused(
    acme_exists: tuple[RunningRegistry, str], tmp_path: Path, namespace: str
) -> None:
    server, _ = acme_exists
    mallory = user_token(server, "mallory")
    code, answer = _publish((server, mallory), tmp_path, namespace, "greeter")
    assert code == 1, answer
    error = answer["error"]
    assert "registry code: NAME_CONFUSABLE" in error["details"], error
    assert "@acme" in error["message"] and "existing" in error["message"], error
    assert requests.get(f"{server.url}/namespaces/{namespace}", timeout=10).status_code == 404


def test_the_owner_may_create_a_look_alike_of_its_own_namespace(
    acme_exists: tuple[RunningRegistry, str], tmp_path: Path
) -> None:
    code, answer = _publish(acme_exists, tmp_path, "a-cme", "greeter")
    assert code == 0, answer


def _admin_guess(server: RunningRegistry, forwarded: str) -> int:
    headers = {"authorization": f"Bearer {BOGUS}", "x-forwarded-for": forwarded}
    answer = requests.post(
        f"{server.url}/admin/users", json={"name": "x"}, headers=headers, timeout=10
    )
    return answer.status_code


def test_many_addresses_share_one_budget_of_failed_admin_tokens(tmp_path: Path) -> None:
    """The admin token is the operator's choice: each address had its own 20 guesses, so 200
    loopback addresses had 4,000 compared in 23 s (a real server) and 127.0.0.0/8 holds 16
    million. Past the shared budget, every address is refused before the compare, the right
    admin token too."""
    shared = RateLimits().failed_admin_auth
    with registry_server(tmp_path / "data", *LIMITS_OFF, "--trusted-proxy", "127.0.0.1") as server:
        clients = [f"192.0.2.{n // BUDGET + 1}" for n in range(shared)]
        away_from_window_ends(WINDOW, margin=15)
        assert [_admin_guess(server, client) for client in clients] == [403] * shared
        assert _admin_guess(server, "198.51.100.7") == 429
        right = {"authorization": f"Bearer {ADMIN_TOKEN}", "x-forwarded-for": "198.51.100.8"}
        answer = requests.post(
            f"{server.url}/admin/users", json={"name": "y"}, headers=right, timeout=10
        )
        assert answer.status_code == 429
        assert answer.json()["error"]["code"] == "RATE_LIMITED"
        assert answer.headers["retry-after"] == str(RateLimits().failed_auth_period)


def test_an_ipv6_client_cannot_rotate_addresses_of_its_network_past_the_admin_lockout(
    tmp_path: Path,
) -> None:
    """Each guess from another address of one /64 (what any IPv6 host can pick) still spends
    the one budget of that network; another network keeps its own."""
    with registry_server(tmp_path / "data", *LIMITS_OFF, "--trusted-proxy", "127.0.0.1") as server:
        away_from_window_ends(WINDOW, margin=15)
        codes = [_admin_guess(server, f"2001:db8::{n + 1:x}") for n in range(BUDGET + 1)]
        assert codes == [403] * BUDGET + [429], codes
        assert _admin_guess(server, "2001:db8::ffff:1234:5678:9abc") == 429
        assert _admin_guess(server, "2001:db8:0:1::1") == 403, "another /64 is another client"
