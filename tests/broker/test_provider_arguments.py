"""Providers are sent what the argument schema checked, in a form every vendor reads the same:
an integer argument as an integer, no number without a JSON form, no path parameter the URL
parser reads as a step (``.``, ``..``, empty). The vendors are the local fakes of
testing/fake_providers.py, which record every request."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

from splice_build.broker.capabilities import _schema
from splice_build.broker.providers import PROVIDERS
from splice_build.broker.providers.http import ProviderClient
from splice_build.errors import ErrorCode
from testing.fake_providers import POOL_ADDRESS, FakeProviders, broker_for, fake_providers

# Valid arguments of every served capability with an integer argument (a KeyError in the
# walk below names one added without them).
BASE_ARGS: dict[str, dict[str, Any]] = {
    "web.search": {"query": "q"},
    "web.extract": {"urls": ["https://example.com/a"]},
    "web.map": {"url": "https://example.com/"},
    "web.similar": {"url": "https://example.com/"},
    "market.ohlcv": {"network": "eth", "pool": POOL_ADDRESS},
    "github.search": {"query": "q"},
    "github.raw": {"url": "https://raw.githubusercontent.com/octo/hello/main/README.md"},
    "ai.generate": {"prompt": "p"},
}


def _integer_arguments() -> list[tuple[str, str, int]]:
    """``(capability, argument, a valid value)`` for every integer argument of every
    capability a provider serves, read from ``schemas/capability_args.json``."""
    definitions = _schema().schema["$defs"]
    served = sorted(set().union(*(p.capabilities for p in PROVIDERS.values())))
    found = []
    for capability in served:
        for name, rule in definitions[capability].get("properties", {}).items():
            while "$ref" in rule:
                rule = definitions[rule["$ref"].rsplit("/", 1)[-1]]
            if rule.get("type") == "integer":
                found.append((capability, name, max(rule["minimum"], min(rule["maximum"], 100))))
    return found


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProviders]:
    with fake_providers() as served:
        yield served


def _call(fake: FakeProviders, capability: str, args: dict[str, Any]) -> dict[str, Any]:
    fake.reset()
    broker = broker_for(fake)
    return broker.call({"package": "@t/p", "tool": "t", "capability": capability, "args": args})


@pytest.mark.parametrize(("capability", "name", "value"), _integer_arguments())
def test_a_whole_number_written_as_a_float_reaches_the_vendor_as_an_integer(
    fake: FakeProviders, capability: str, name: str, value: int
) -> None:
    # main: web.search {"maxCharacters": 100.0} was text[:100.0], a TypeError in tavily,
    # exa and firecrawl, each after its billed request (ALL_PROVIDERS_FAILED); the others
    # were sent as "limit=100.0" or "max_results": 20.0.
    result = _call(fake, capability, {**BASE_ARGS[capability], name: float(value)})
    assert result["status"] == "LIVE", result
    sent = [json.dumps(seen.body) + json.dumps(seen.query) for seen in fake.seen]
    assert sent and not [text for text in sent if f"{value}.0" in text]


@pytest.mark.parametrize(
    "extra",
    [{"temperature": math.nan}, {"responseSchema": {"type": "number", "maximum": math.inf}}],
)
def test_a_number_with_no_json_form_is_invalid_input(
    fake: FakeProviders, extra: dict[str, Any]
) -> None:
    # main: NaN passes every bound of the schema (no comparison holds), and the request body
    # carried the bare word NaN, which is no JSON.
    result = _call(fake, "ai.generate", {"prompt": "p", **extra})
    assert (result["code"], result["details"]) == (
        ErrorCode.INVALID_INPUT,
        ["args: a number is NaN or infinite"],
    )
    assert fake.seen == []


def test_a_request_body_is_strict_json(fake: FakeProviders) -> None:
    fake.reset()
    client = ProviderClient(
        provider="exa", base=fake.endpoints["api.exa.ai"], key=None, timeout=1.0
    )
    with pytest.raises(ValueError, match="JSON compliant"):
        client.request("POST", "/search", body={"numResults": math.nan})
    client.release()
    assert fake.seen == []


@pytest.mark.parametrize(
    ("capability", "args", "parameter"),
    [
        ("github.repository", {"repo": "octo/."}, "{repo}"),  # main: GET /repos/octo/
        ("github.repository", {"repo": "./hello"}, "{owner}"),  # main: GET /repos/hello
        ("ai.generate", {"prompt": "p", "provider": "gemini", "model": "models/"}, "{model}"),
    ],
)
def test_a_path_parameter_the_url_parser_reads_as_a_step_is_never_sent(
    fake: FakeProviders, capability: str, args: dict[str, Any], parameter: str
) -> None:
    result = _call(fake, capability, args)
    assert result["code"] == ErrorCode.INVALID_INPUT, result
    assert f"{parameter} must hold a character other than '.'" in result["message"]
    assert fake.seen == []
