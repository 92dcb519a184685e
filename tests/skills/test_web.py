"""@splice/web in the real sandbox: the package, and every tool against each web provider."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice_build.broker import Broker
from splice_build.broker.keys import load_keys
from testing.capability_skills import assert_capability_package, load, run
from testing.fake_providers import broker_for, fake_providers, recognizable_keys

pytestmark = pytest.mark.node

SEARCH = {"query": "splice sandbox", "limit": 2}
READ = {"urls": ["https://example.com/a", "https://example.org/b"]}


def test_package() -> None:
    assert_capability_package(
        "web", ["web.search", "web.extract", "web.answer"], ["search", "read", "answer"]
    )


def test_unavailable_without_keys(tmp_path: Path) -> None:
    broker = Broker(keys=load_keys(env={}, project_root=None, home=tmp_path / "nohome"))
    runtime, package = load("web", tmp_path, broker)
    for tool, tool_input in (("search", SEARCH), ("read", READ), ("answer", {"question": "why?"})):
        out = run(runtime, package, tool, tool_input)
        assert out["status"] == "UNAVAILABLE" and out["code"] == "CAPABILITY_UNAVAILABLE", out


def test_strict_input_and_private_targets(tmp_path: Path) -> None:
    broker = Broker(keys=load_keys(env=recognizable_keys(), project_root=None, home=None))
    runtime, package = load("web", tmp_path, broker)
    extra = runtime.execute(package, "search", {"query": "q", "apiKey": "x"}).to_json()
    assert extra["error"]["code"] == "INVALID_INPUT"
    private = run(runtime, package, "read", {"urls": ["http://169.254.169.254/latest/meta-data"]})
    assert private["status"] == "ERROR" and private["code"] == "INVALID_INPUT"


@pytest.mark.parametrize("provider", ["tavily", "exa", "firecrawl"])
def test_each_provider_live_then_cached(provider: str, tmp_path: Path) -> None:
    only = {f"{provider.upper()}_API_KEY": recognizable_keys()[f"{provider.upper()}_API_KEY"]}
    with fake_providers() as fake:
        runtime, package = load("web", tmp_path, broker_for(fake, only))
        first = run(runtime, package, "search", SEARCH)
        assert first["status"] == "LIVE" and first["provenance"]["source"] == provider, first
        assert first["data"]["results"][0]["url"].startswith("https://")
        assert run(runtime, package, "search", SEARCH)["status"] == "CACHED"
        read = run(runtime, package, "read", READ)
        assert read["status"] == "LIVE" and read["data"]["pages"], read
        if provider != "firecrawl":  # Firecrawl has no answer endpoint
            answer = run(runtime, package, "answer", {"question": "capital of France?"})
            assert answer["status"] == "LIVE" and "Paris" in answer["data"]["answer"]


@pytest.mark.parametrize("mode", ["status:401", "status:500", "slow", "oversize", "garbage"])
def test_provider_failures_are_error_results(mode: str, tmp_path: Path) -> None:
    with fake_providers() as fake:
        for host in ("api.tavily.com", "api.exa.ai", "api.firecrawl.dev"):
            fake.behave(host, mode)
        runtime, package = load("web", tmp_path, broker_for(fake))
        out = run(runtime, package, "search", SEARCH)
        assert out["status"] == "ERROR" and out["code"] == "ALL_PROVIDERS_FAILED", out
        assert [a["provider"] for a in out["attempts"]] == ["tavily", "exa", "firecrawl"]
