"""Per-capability argument schemas and target checks (nothing reaches a provider)."""

from __future__ import annotations

import json

import pytest

from splice_build.broker.capabilities import argument_problems, known_capabilities
from splice_build.broker.providers import PROVIDERS
from splice_build.spec.permissions import capability_catalogue


def test_every_catalogue_capability_has_a_strict_schema() -> None:
    assert known_capabilities() == tuple(c.name for c in capability_catalogue())
    for name in known_capabilities():
        assert argument_problems(name, {"surely": "not"}) != [], name


def test_every_provider_capability_is_in_the_catalogue() -> None:
    served = {c for p in PROVIDERS.values() for c in p.capabilities}
    assert served <= set(known_capabilities())
    issue_names = {
        "web.search", "web.extract", "web.answer", "market.price", "market.pairs", "market.ohlcv",
        "onchain.balance", "onchain.transaction", "onchain.token", "github.repository",
        "github.search", "github.raw", "ai.generate", "ai.models",
    }  # fmt: skip
    assert issue_names <= served


@pytest.mark.parametrize(
    ("capability", "args", "expected"),
    [
        ("web.search", {"query": "x", "apiKey": "k"}, 'args: unknown argument "apiKey"'),
        ("web.search", {}, "args.query: is required"),
        ("web.search", {"query": "x" * 401}, "args.query"),
        ("web.search", {"query": "x", "limit": 21}, "args.limit"),
        ("web.search", ["query"], "args: must be an object"),
        ("nope.nothing", {}, "unknown capability"),
        ("onchain.balance", {"address": "0x12"}, "args.address"),
        ("onchain.transaction", {"hash": "0x" + "g" * 64}, "args.hash"),
        ("market.pairs", {"network": "../x", "address": "a" * 20}, "args.network"),
        (
            "market.ohlcv",
            {"network": "eth", "pool": "p" * 20, "timeframe": "week"},
            "args.timeframe",
        ),
        ("github.repository", {"repo": "../.."}, "args.repo"),
        ("ai.generate", {"prompt": "hi", "maxTokens": 2049}, "args.maxTokens"),
        ("ai.generate", {"prompt": "hi", "fresh": True}, 'unknown argument "fresh"'),
        ("ai.generate", {"prompt": "hi", "image": "data:"}, 'unknown argument "image"'),
    ],
)
def test_invalid_arguments(capability: str, args: object, expected: str) -> None:
    problems = argument_problems(capability, args)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://127.1/",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.8/",
        "http://localhost:8080/",
        "http://api.localhost/",
        "http://printer.local/",
        "http://db.internal/",
        "http://user:pw@example.com/",
        "ftp://example.com/file",
        "http://intranet/",
    ],
)
def test_web_targets_must_be_public(url: str) -> None:
    assert argument_problems("web.extract", {"urls": ["https://example.com/", url]})[0].startswith(
        "args.urls[1]: "
    )
    assert argument_problems("web.map", {"url": url})


def test_public_targets_pass() -> None:
    assert (
        argument_problems("web.extract", {"urls": ["https://example.com/a", "http://8.8.8.8/"]})
        == []
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://raw.githubusercontent.com/o/r/main/README.md",
        "https://raw.githubusercontent.com:443/o/r/main/README.md",
        "https://user@raw.githubusercontent.com/o/r/main/README.md",
        "https://raw.githubusercontent.com/o/r/main/README.md?token=x",
        "https://raw.githubusercontent.com/o/r/main/../../etc/passwd",
        "https://raw.githubusercontent.com/o/r/main/%2e%2e/secret",
        "https://raw.githubusercontent.com.evil.example/o/r/main/README.md",
        "https://api.github.com/repos/o/r/contents/README.md",
    ],
)
def test_raw_github_urls_are_validated(url: str) -> None:
    assert argument_problems("github.raw", {"url": url})


def test_raw_github_url_accepted() -> None:
    assert (
        argument_problems(
            "github.raw", {"url": "https://raw.githubusercontent.com/o/r/main/docs/a.md"}
        )
        == []
    )


# URLs that a WHATWG parser (the check's) and an RFC 3986 one (a provider's) read as
# different hosts, or that only normalize to a public one.
_DIFFERENTIAL_URLS = [
    "http://example.com\\@169.254.169.254/latest/meta-data/",
    "http://example.com\\\\@127.0.0.1/",
    "http://example.com\t@169.254.169.254/",
    "http://exam\nple.com/",
    " http://example.com/",
    "HTTPS://EXAMPLE.COM",
    "https://example.com/a/../b",
    "https://m\u00fcnchen.de/",
]


@pytest.mark.parametrize("url", _DIFFERENTIAL_URLS)
def test_providers_are_sent_the_url_that_was_checked(url: str) -> None:
    """Whatever the caller wrote, a provider receives the WHATWG serialization the target
    check read (every parser reads it as the same host), or nothing when the check refused."""
    from urllib.parse import urlsplit

    from splice_build.security.urls import parse_url
    from testing.fake_providers import HOSTS, broker_for, fake_providers

    calls = {"web.extract": {"urls": [url]}, "web.map": {"url": url}, "web.similar": {"url": url}}
    with fake_providers() as fake:
        for host in HOSTS:
            fake.behave(host, "ok")
        broker = broker_for(fake)
        for capability, args in calls.items():
            fake.seen.clear()
            refused = argument_problems(capability, args)
            answer = broker.call(
                {"package": "@t/p", "tool": "t", "capability": capability, "args": args}
            )
            if refused:
                assert answer["status"] == "ERROR" and fake.seen == [], (capability, answer)
                continue
            checked = parse_url(url).href
            assert urlsplit(checked).hostname == parse_url(url).hostname
            assert answer["status"] == "LIVE", answer
            sent = [
                value
                for seen in fake.seen
                for value in json.dumps(seen.body or {}).split('"')
                if value.startswith(("http:", "https:", " http"))
            ]
            assert sent and all(value == checked for value in sent), (capability, sent, checked)


# Wrong values a tool can fill its 256 KiB of arguments with: many wrong items, one long
# text, many unknown arguments (smaller here: the counts, not the time, tell the old
# behaviour apart).
_FILLS = {"items": [{}] * 200, "text": "x" * 120000}
_UNKNOWN_ARGUMENTS = {f"k{i}": 0 for i in range(200)}


def test_an_invalid_input_answer_lists_few_short_problems_whatever_the_arguments() -> None:
    """A tool that filled an argument with 130,000 wrong items got as many problems, each
    rendered and redacted in the host process: 24 s of its CPU for one call, past the tool's
    own timeout. Every capability, every argument (and an unknown one), every fill: at most
    MAX_LISTED_PROBLEMS problems and a last line saying there were more, each one short."""
    from splice_build.broker import Broker
    from splice_build.broker.capabilities import (
        MAX_LISTED_PROBLEMS,
        MAX_PROBLEM_CHARACTERS,
        MORE_PROBLEMS,
        _schema,
    )
    from splice_build.broker.keys import ProviderKeys

    broker = Broker(keys=ProviderKeys(), providers={})
    definitions = _schema().schema["$defs"]
    for capability in known_capabilities():
        calls = [
            ((capability, argument, fill), {argument: value})
            for argument in [*definitions[capability].get("properties", {}), "unknown"]
            for fill, value in _FILLS.items()
        ]
        for where, args in [*calls, ((capability, "keys"), _UNKNOWN_ARGUMENTS)]:
            answer = broker.call(
                {"package": "@t/p", "tool": "t", "capability": capability, "args": args}
            )
            assert answer["code"] == "INVALID_INPUT", where
            details = answer["details"]
            assert 1 <= len(details) <= MAX_LISTED_PROBLEMS + 1, (where, len(details))
            assert all(len(d) <= MAX_PROBLEM_CHARACTERS for d in details), where
            assert MORE_PROBLEMS not in details[:-1], where


def test_an_array_longer_than_allowed_is_one_problem() -> None:
    """Its items are not checked one by one once the array is refused for its length."""
    problems = argument_problems("web.extract", {"urls": [1] * 3000})
    assert len(problems) == 1 and problems[0].startswith("args.urls: "), problems[:3]
