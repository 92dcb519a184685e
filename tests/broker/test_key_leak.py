"""Key leak: every provider key set to a recognizable value, every capability driven through
every failure mode of its providers; no value appears in any result or log line."""

from __future__ import annotations

import json
import logging

import pytest

from splice_build.broker.providers import PROVIDERS
from testing.fake_providers import (
    HOSTS,
    POOL_ADDRESS,
    TOKEN_ADDRESS,
    broker_for,
    fake_providers,
    recognizable_keys,
)

ARGS = {
    "web.search": {"query": "q"},
    "web.extract": {"urls": ["https://example.com/"]},
    "web.answer": {"query": "q"},
    "web.similar": {"url": "https://example.com/"},
    "web.map": {"url": "https://example.com/"},
    "market.price": {"token": TOKEN_ADDRESS, "network": "base"},
    "market.pairs": {"network": "eth", "address": TOKEN_ADDRESS},
    "market.search": {"query": "tst"},
    "market.ohlcv": {"network": "eth", "pool": POOL_ADDRESS},
    "onchain.balance": {"address": TOKEN_ADDRESS},
    "onchain.transaction": {"hash": "0x" + "ab" * 32},
    "onchain.token": {"address": TOKEN_ADDRESS},
    "github.repository": {"repo": "octo/hello"},
    "github.search": {"query": "splice"},
    "github.raw": {"url": "https://raw.githubusercontent.com/octo/hello/main/README.md"},
    "ai.generate": {"prompt": "hi"},
    "ai.models": {},
}
MODES = ["ok", "status:401", "status:404", "status:429", "status:500", "oversize", "garbage"]


def test_every_capability_served_has_arguments_here() -> None:
    assert {c for p in PROVIDERS.values() for c in p.capabilities} == set(ARGS)


@pytest.mark.parametrize("mode", MODES)
def test_no_key_value_in_results_or_logs(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    keys = recognizable_keys()
    caplog.set_level(logging.DEBUG)
    with fake_providers() as fake:
        for host in HOSTS:
            fake.behave(host, mode)
        broker = broker_for(fake)
        results = [
            broker.call({"package": "@t/p", "tool": "t", "capability": name, "args": args})
            for name, args in ARGS.items()
        ]
        statuses = {r["status"] for r in results}
        # (raw GitHub files are text, so "garbage" is a LIVE answer there)
        assert statuses == {"LIVE"} if mode == "ok" else "ERROR" in statuses, results
        text = json.dumps(results) + caplog.text + json.dumps(broker.status())
        leaked = [name for name, value in keys.items() if value in text]
        assert leaked == [] and "LEAKCANARY" not in text, leaked
        # The credentials did reach the fakes (so the test would notice an echo).
        assert any("LEAKCANARY" in str(s.headers) + s.path for s in fake.seen)
        gh = fake.requests_to("raw.githubusercontent.com")
        assert gh and all("authorization" not in s.headers for s in gh)


def test_a_redirect_to_another_origin_of_the_provider_host_is_refused() -> None:
    """A provider client may reach one host, under any scheme and port: a redirect from its
    origin to http:// or another port of that host kept the key headers the cross-origin rule
    does not know (x-api-key, x-goog-api-key) and sent them there."""
    with fake_providers() as fake, fake_providers() as elsewhere:
        target = elsewhere.endpoints["api.exa.ai"]  # the same host (127.0.0.1), another port
        for host in HOSTS:
            fake.behave(host, f"redirect:{target}/search")
        broker = broker_for(fake)
        results = {
            name: broker.call({"package": "@t/p", "tool": "t", "capability": name, "args": args})
            for name, args in ARGS.items()
        }
        assert elsewhere.seen == [], [s.headers for s in elsewhere.seen]
        assert {r["status"] for r in results.values()} == {"ERROR"}
        assert "refused by the network guard" in results["web.search"]["message"]


def test_a_redirect_within_the_provider_origin_is_followed() -> None:
    """A renamed repository answers 301 to another path of api.github.com: still followed."""
    with fake_providers() as fake:
        fake.behave("api.github.com", f"redirect:{fake.endpoints['api.dexscreener.com']}/x")
        broker = broker_for(fake)
        args = ARGS["github.repository"]
        call = {"package": "@t/p", "tool": "t", "capability": "github.repository", "args": args}
        assert broker.call(call)["code"] == "NOT_FOUND"  # the redirect's target was asked
        assert [s.path for s in fake.requests_to("api.dexscreener.com")] == ["/x"]


@pytest.mark.parametrize("status", [101, 102, 103, 199, 600, 999])
def test_an_impossible_final_status_is_a_network_error(status: int) -> None:
    """A 1xx, which http.client takes as a final answer with no body, or 600–999: every
    capability fails as a network error (``github.raw`` was ``LIVE`` with 0 bytes for a 103)."""
    with fake_providers() as fake:
        for host in HOSTS:
            fake.behave(host, f"status:{status}")
        broker = broker_for(fake)
        for name, args in ARGS.items():
            result = broker.call({"package": "@t/p", "tool": "t", "capability": name, "args": args})
            assert result["status"] == "ERROR", (name, result)
            assert result["code"] in {"PROVIDER_ERROR", "ALL_PROVIDERS_FAILED"}, (name, result)
            assert "network error" in result["message"], (name, result)


@pytest.mark.parametrize("status", [300, 301, 304, 399])
def test_a_3xx_that_was_not_followed_is_a_provider_error(status: int) -> None:
    """A redirect without Location, a 300 or a 304 no request asked for: its body (the fakes
    send a JSON error) was read as an answer, so web.search was LIVE with no results."""
    with fake_providers() as fake:
        for host in HOSTS:
            fake.behave(host, f"status:{status}")
        broker = broker_for(fake)
        for name, args in ARGS.items():
            result = broker.call({"package": "@t/p", "tool": "t", "capability": name, "args": args})
            assert result["status"] == "ERROR", (name, result)
            assert result["code"] in {"PROVIDER_ERROR", "ALL_PROVIDERS_FAILED"}, (name, result)
            assert f"answered HTTP {status}" in result["message"], (name, result)


def test_no_key_value_in_urllib3_warnings(caplog: pytest.LogCaptureFixture) -> None:
    """A provider whose response head holds a line that is no header: urllib3's connection
    logger warns 'Failed to parse headers (url=...)' with the whole request URL, the path and
    query of ROBINHOOD_RPC_URL included, and a traceback quoting the head's other lines, one of
    which echoes the request's key headers (shown by any application that configures
    logging). Only urllib3.connectionpool was redacted, and only its messages; now every
    logger of urllib3 is, tracebacks included."""
    keys = recognizable_keys()
    caplog.set_level(logging.DEBUG)
    with fake_providers() as fake:
        for host in HOSTS:
            fake.behave(host, "broken-head")
        broker = broker_for(fake)
        for name, args in ARGS.items():
            broker.call({"package": "@t/p", "tool": "t", "capability": name, "args": args})
    assert "Failed to parse headers" in caplog.text  # the warning this is about was logged
    leaked = [name for name, value in keys.items() if value in caplog.text]
    assert leaked == [] and "LEAKCANARY" not in caplog.text, leaked
    unfiltered = [
        name
        for name, logger in logging.Logger.manager.loggerDict.items()
        if name.split(".")[0] == "urllib3"
        and isinstance(logger, logging.Logger)
        and not any(f.__class__.__name__ == "_RedactingFilter" for f in logger.filters)
    ]
    assert unfiltered == []


def test_a_private_repository_answers_as_a_missing_one() -> None:
    """With GITHUB_TOKEN, GitHub answers /repos/{owner}/{repo} for the private repositories
    the token can see. github.repository refused them with its own message ('not a public
    repository', no status) where a missing repository is 'not found (404)': a tool could
    tell which private names exist. Both answers are now the same."""
    with fake_providers() as fake:
        broker = broker_for(fake)

        def answer(repo: str) -> dict[str, object]:
            request = {"package": "@t/p", "tool": "t", "capability": "github.repository"}
            result = broker.call({**request, "args": {"repo": repo}})
            return {k: v for k, v in result.items() if k != "timestamp"}

        private = answer("octo/secret-plans")  # the fake's private repository
        fake.behave("api.github.com", "status:404")
        missing = answer("octo/no-such-repository")
    assert private["code"] == "NOT_FOUND"
    assert private == missing


@pytest.mark.parametrize("query", ['splice "', '"', 'splice """', 'a "b" "', 'is:private "'])
def test_a_quote_left_open_does_not_take_in_the_public_qualifier(query: str) -> None:
    """github.search put "is:public" after the tool's query: a quote the tool left open made
    it words of a quoted phrase, and GitHub's count took in the private repositories the
    token can see again. The qualifier goes first and the tool's quote is closed."""
    with fake_providers() as fake:
        request = {"package": "@t/p", "tool": "t", "capability": "github.search"}
        result = broker_for(fake).call({**request, "args": {"query": query}})
    assert result["status"] == "LIVE", result
    assert result["data"]["totalCount"] == 1, result
