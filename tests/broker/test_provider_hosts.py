"""Each data provider reaches only its own host, the GitHub token only api.github.com, TLS
interception is reported as degraded, and GitHub access is read-only.

The network tests run the real providers inside a private network and mount namespace
(testing/provider_scenarios.py): the providers' real host names resolve, through the
operating system resolver and a private ``/etc/hosts``, to public addresses on ``lo`` where
local servers answer. Nothing leaves the machine; nothing in the providers is replaced.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from splice_build.broker.providers import PROVIDERS, github
from testing.fake_providers import HOSTS, RPC_HOST, broker_for, fake_providers
from testing.netns import run_in_private_netns
from testing.provider_scenarios import CALLS, ELSEWHERE, ELSEWHERE_ADDRESS, HOSTS_FILE

# The documented table (docs/data-providers.md): provider → the only hosts it may reach.
ALLOWED_HOSTS = {
    "tavily": ("api.tavily.com",),
    "exa": ("api.exa.ai",),
    "firecrawl": ("api.firecrawl.dev",),
    "dexscreener": ("api.dexscreener.com",),
    "geckoterminal": ("api.geckoterminal.com",),
    "github": ("api.github.com", "raw.githubusercontent.com"),
    "openrouter": ("openrouter.ai",),
    "gemini": ("generativelanguage.googleapis.com",),
    "jsonrpc": (),  # the host of ROBINHOOD_RPC_URL, and nothing else
}


def _scenario(name: str) -> dict[str, Any]:
    return run_in_private_netns(
        name, module="testing.provider_scenarios", hosts=HOSTS_FILE, timeout=600
    )


@pytest.fixture(scope="module")
def hosts_walk() -> dict[str, Any]:
    return _scenario("provider_hosts")


@pytest.fixture(scope="module")
def tls_walk() -> dict[str, Any]:
    return _scenario("provider_tls")


def _walked() -> set[str]:
    return {
        f"{name} {host}"
        for name, provider in PROVIDERS.items()
        for host in (provider.hosts or (RPC_HOST,))
    }


def test_every_provider_declares_exactly_its_documented_hosts() -> None:
    assert {name: tuple(p.hosts) for name, p in PROVIDERS.items()} == ALLOWED_HOSTS
    assert [name for name, p in PROVIDERS.items() if p.key_is_endpoint] == ["jsonrpc"]
    for name, provider in PROVIDERS.items():
        # A key goes only to the provider's own hosts; GitHub's never to raw files.
        assert set(provider.key_hosts) <= set(provider.hosts), name
    assert github.PROVIDER.key_hosts == ("api.github.com",)
    assert set(CALLS) == set(HOSTS)


def test_each_provider_reaches_only_its_own_host(hosts_walk: dict[str, Any]) -> None:
    """A redirect to another provider's host, to another name or to a public IP literal is
    refused by the guard before any connection; a plain call reaches exactly the host."""
    assert set(hosts_walk) - {"elsewhere seen"} == _walked()
    every_target = {*HOSTS, ELSEWHERE, ELSEWHERE_ADDRESS}
    for key, case in hosts_walk.items():
        if key == "elsewhere seen":
            continue
        provider, host = key.split(" ")
        assert case["control"] == "LIVE", (key, case)
        assert [seen["host"] for seen in case["plain"]] == [host], (key, case)
        assert set(case["refused"]) == every_target - {host}, key
        for target, outcome in case["refused"].items():
            assert outcome.startswith(f"ERROR {provider} "), (key, target, outcome)
            assert outcome.endswith(": refused by the network guard (not-declared)"), (
                key,
                target,
                outcome,
            )
    assert hosts_walk["elsewhere seen"] == 0


def test_the_github_token_is_sent_only_to_api_github_com(hosts_walk: dict[str, Any]) -> None:
    api = hosts_walk["github api.github.com"]
    raw = hosts_walk["github raw.githubusercontent.com"]
    assert api["plain"] == [{"host": "api.github.com", "authorization": True}]
    assert raw["plain"] == [{"host": "raw.githubusercontent.com", "authorization": False}]
    # And api.github.com cannot hand the request (with its token) over to the raw host.
    assert "refused by the network guard" in api["refused"]["raw.githubusercontent.com"]


def test_tls_interception_marks_the_provider_degraded(tls_walk: dict[str, Any]) -> None:
    """Production base URLs, a TLS endpoint whose certificate no trusted CA signed: every
    provider fails the call, is reported ``degraded`` and never sends a request."""
    assert set(tls_walk) - {"requests"} == _walked()
    for key, case in tls_walk.items():
        if key == "requests":
            continue
        provider = key.split(" ")[0]
        assert case["before"] == "ready", (key, case)
        assert case["connections"] == 1, (key, case)  # it did reach the interceptor
        assert case["status"] == "ERROR", (key, case)
        assert case["error"].startswith(f"{provider} "), (key, case)
        assert "TLS certificate verification failed" in case["error"], (key, case)
        assert "was not retried without verification" in case["error"], (key, case)
        assert case["after"] == "degraded", (key, case)
    assert tls_walk["requests"] == 0


# --- GitHub is read-only --------------------------------------------------------------------

_HTTP_CALLS = {"request", "request_json", "request_path"}


def _http_calls(tree: ast.AST) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            yield node


def test_github_provider_code_has_only_get_requests() -> None:
    """Every HTTP call in the provider names its method as the literal "GET"; there is no
    other way out of it (no ``requests``, no session, no computed method)."""
    tree = ast.parse(inspect.getsource(github))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported.isdisjoint({"requests", "urllib3", "http", "socket", "httpx"}), imported
    methods = []
    for call in _http_calls(tree):
        name = call.func.attr  # type: ignore[attr-defined]
        if name in {"post", "put", "patch", "delete", "get_session", "urlopen"}:
            raise AssertionError(f"unexpected call .{name}() in the GitHub provider")
        if name in _HTTP_CALLS:
            first = call.args[0] if call.args else None
            assert isinstance(first, ast.Constant), ast.unparse(call)
            methods.append(first.value)
    assert methods and set(methods) == {"GET"}, methods


GITHUB_CALLS = {
    "github.repository": {"repo": "octo/hello"},
    "github.search": {"query": "splice"},
    "github.raw": {"url": "https://raw.githubusercontent.com/octo/hello/main/README.md"},
}


def test_every_github_capability_sends_only_get() -> None:
    assert set(github.PROVIDER.capabilities) == set(GITHUB_CALLS)
    with fake_providers() as fake:
        broker = broker_for(fake)
        for capability, args in GITHUB_CALLS.items():
            result = broker.call(
                {"package": "@t/p", "tool": "t", "capability": capability, "args": args}
            )
            assert result["status"] == "LIVE", result
        seen = fake.requests_to("api.github.com") + fake.requests_to("raw.githubusercontent.com")
    assert len(seen) == 3 and {s.method for s in seen} == {"GET"}
