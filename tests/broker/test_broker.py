"""The broker core with in-memory providers: routing, fallback, results, cache, redaction."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from splice_build.broker import Broker
from splice_build.broker.cache import MAX_ENTRIES, ResultCache, ttl_for
from splice_build.broker.keys import load_keys
from splice_build.broker.providers.interface import ProviderFailure
from splice_build.broker.providers.memory import MemoryProvider
from splice_build.errors import ErrorCode

SECRET = "tvly-" + "Zq8" * 10


class Clock:
    def __init__(self) -> None:
        self.now = 1_767_225_600.0

    def __call__(self) -> float:
        return self.now


def call(broker: Broker, capability: str, args: Any) -> dict[str, Any]:
    return broker.call({"package": "@t/p", "tool": "t", "capability": capability, "args": args})


def make(
    *providers: MemoryProvider, env: dict[str, str] | None = None, clock: Clock | None = None
) -> Broker:
    keys = load_keys(env=env or {}, project_root=None, home=None)
    return Broker(keys=keys, providers={p.name: p for p in providers}, clock=clock)


def test_live_then_cached_with_provenance() -> None:
    clock = Clock()
    provider = MemoryProvider("mem", {"web.search": {"results": [1]}})
    broker = make(provider, clock=clock)
    first = call(broker, "web.search", {"query": "q"})
    assert first["status"] == "LIVE" and first["data"] == {"results": [1]}
    assert first["provenance"]["source"] == "mem" and first["provenance"]["fresh"] is True
    assert first["provenance"]["fetchedAt"] == "2026-01-01T00:00:00.000Z"
    clock.now += 2.5
    second = call(broker, "web.search", {"query": "q"})
    assert second["status"] == "CACHED" and second["data"] == first["data"]
    cache = second["provenance"]["cache"]
    assert cache["ageMs"] == 2500 and cache["ttlMs"] == ttl_for("web.search") * 1000
    assert second["provenance"]["fresh"] is False
    assert len(provider.calls) == 1
    clock.now += ttl_for("web.search")
    assert call(broker, "web.search", {"query": "q"})["status"] == "LIVE"
    assert len(provider.calls) == 2


def test_ai_results_are_never_cached() -> None:
    provider = MemoryProvider("ai", {"ai.generate": {"text": "hi"}, "ai.models": {"models": []}})
    broker = make(provider)
    for _ in range(2):
        assert call(broker, "ai.generate", {"prompt": "p"})["status"] == "LIVE"
        assert call(broker, "ai.models", {})["status"] == "LIVE"
    assert len(provider.calls) == 4


def test_invalid_arguments_never_reach_a_provider() -> None:
    provider = MemoryProvider("mem", {"web.search": {}})
    result = call(make(provider), "web.search", {"query": "q", "apiKey": "sk"})
    assert result["status"] == "ERROR" and result["code"] == "INVALID_INPUT"
    assert result["details"] == ['args: unknown argument "apiKey"']
    assert provider.calls == []
    unknown = call(make(provider), "wallet.steal", {})
    assert unknown["code"] == "INVALID_INPUT" and provider.calls == []


@pytest.mark.parametrize(
    "args",
    [{"query": "q\ud800"}, {"query": "q", "\udc00": 1}, {"query": ["\ud800"]}],
)
def test_an_unpaired_surrogate_is_invalid_input_not_a_crash(args: dict[str, Any]) -> None:
    # The SDK and the --data backend hand Python strings to the broker: one with no UTF-8
    # form has no cache key and no request body.
    provider = MemoryProvider("mem", {"web.search": {}})
    result = call(make(provider), "web.search", args)
    assert (result["status"], result["code"]) == ("ERROR", "INVALID_INPUT")
    assert result["details"] == ["args: a string holds an unpaired surrogate"]
    assert provider.calls == []


def test_unconfigured_providers_answer_unavailable() -> None:
    keyed = MemoryProvider(
        "keyed", {"web.search": {}}, key_variable="TAVILY_API_KEY", key_required=True
    )
    result = call(make(keyed), "web.search", {"query": "q"})
    assert result["status"] == "UNAVAILABLE" and result["code"] == "CAPABILITY_UNAVAILABLE"
    assert result["providers"] == ["keyed"] and "TAVILY_API_KEY" in result["reason"]
    assert keyed.calls == []
    configured = make(keyed, env={"TAVILY_API_KEY": "k-123456"})
    assert call(configured, "web.search", {"query": "q"})["status"] == "LIVE"
    none = call(make(keyed), "equity.news", {"symbol": "AAPL"})
    assert none["status"] == "UNAVAILABLE" and "No provider for equity.news" in none["reason"]


def test_fallback_records_the_failed_provider() -> None:
    down = MemoryProvider(
        "down", {"web.search": ProviderFailure("down POST /search: answered HTTP 502", status=502)}
    )
    up = MemoryProvider("up", {"web.search": {"ok": 1}})
    result = call(make(down, up), "web.search", {"query": "q"})
    assert result["status"] == "LIVE" and result["provenance"]["source"] == "up"
    assert result["provenance"]["fallbackFrom"] == [
        {"provider": "down", "error": "down POST /search: answered HTTP 502"}
    ]


def test_all_failures_and_single_failure_codes() -> None:
    a = MemoryProvider("a", {"web.search": ProviderFailure("a: 500", status=500)})
    b = MemoryProvider(
        "b", {"web.search": ProviderFailure("b: 429", code=ErrorCode.RATE_LIMITED, status=429)}
    )
    both = call(make(a, b), "web.search", {"query": "q"})
    assert both["code"] == "ALL_PROVIDERS_FAILED"
    assert both["attempts"] == [
        {"provider": "a", "error": "a: 500", "status": 500},
        {"provider": "b", "error": "b: 429", "status": 429},
    ]
    single = call(make(b), "web.search", {"query": "q"})
    assert single["status"] == "ERROR" and single["code"] == "RATE_LIMITED"
    assert single["message"] == "b: 429"
    assert set(single) == {
        "status",
        "code",
        "capability",
        "chain",
        "chainId",
        "message",
        "attempts",
        "timestamp",
    }


def test_invalid_input_from_a_provider_stops_the_fallback() -> None:
    picky = MemoryProvider(
        "picky", {"web.search": ProviderFailure("too big", code=ErrorCode.INVALID_INPUT)}
    )
    other = MemoryProvider("other", {"web.search": {}})
    result = call(make(picky, other), "web.search", {"query": "q"})
    assert result["code"] == "INVALID_INPUT" and other.calls == []


def test_provider_messages_and_logs_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    leaky = MemoryProvider(
        "leaky",
        {"web.search": ProviderFailure(f"leaky POST /search?key={SECRET} said {SECRET}")},
        key_variable="TAVILY_API_KEY",
        key_required=True,
    )
    caplog.set_level(logging.DEBUG)
    result = call(make(leaky, env={"TAVILY_API_KEY": SECRET}), "web.search", {"query": "q"})
    assert result["status"] == "ERROR"
    assert SECRET not in repr(result) and SECRET not in caplog.text
    assert "[REDACTED]" in result["message"]


def test_a_crashing_provider_is_an_error_result_without_its_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Crashing(MemoryProvider):
        def call(self, capability: str, args: Any, ctx: Any) -> Any:
            raise KeyError(SECRET)

    caplog.set_level(logging.DEBUG)
    result = call(make(Crashing("boom", {"web.search": {}})), "web.search", {"query": "q"})
    assert result["code"] == "PROVIDER_ERROR" and result["message"] == "internal error (KeyError)"
    assert SECRET not in caplog.text


def test_chain_fields() -> None:
    provider = MemoryProvider("m", {"onchain.balance": {}, "market.price": {}})
    broker = make(provider)
    balance = call(broker, "onchain.balance", {"address": "0x" + "1" * 40})
    assert (balance["provenance"]["chain"], balance["provenance"]["chainId"]) == ("robinhood", 4663)
    price = call(broker, "market.price", {"token": "WETH", "network": "eth"})
    assert (price["provenance"]["chain"], price["provenance"]["chainId"]) == ("eth", None)


def test_status_reports_states_without_values() -> None:
    keyed = MemoryProvider(
        "keyed", {"web.search": {}}, key_variable="TAVILY_API_KEY", key_required=True
    )
    free = MemoryProvider("free", {"market.price": {}})
    states = {s["provider"]: s for s in make(keyed, free).status()}
    assert states["keyed"]["state"] == "not configured" and states["free"]["state"] == "ready"
    ready = make(keyed, env={"TAVILY_API_KEY": SECRET}).status()
    assert ready[0]["state"] == "ready" and ready[0]["keySource"] == "environment"
    assert SECRET not in repr(ready)


def test_cache_is_bounded_and_lru() -> None:
    clock = Clock()
    cache = ResultCache(max_entries=3, clock=clock)
    for i in range(4):
        cache.put(f"k{i}", "web.search", {"i": i})
    assert len(cache) == 3 and cache.get("k0") is None
    assert cache.get("k1") is not None  # touch k1: k2 is now the oldest
    cache.put("k4", "web.search", {})
    assert cache.get("k2") is None and cache.get("k1") is not None
    cache.put("ai", "ai.generate", {})
    assert cache.get("ai") is None
    assert MAX_ENTRIES == 500


def test_cache_is_bounded_in_bytes() -> None:
    """A tool picks the arguments (a new entry per call) and, through a web page it controls,
    the size of each answer: the entries' bytes together stay under the budget."""
    mib = 1024 * 1024
    cache = ResultCache(max_bytes=5 * mib // 2, max_entry_bytes=2 * mib, clock=Clock())
    for i in range(3):
        cache.put(f"k{i}", "web.extract", {"text": str(i) * mib})
    assert cache.get("k0") is None and cache.get("k1") is not None
    assert cache.get("k2") is not None and cache.bytes <= 5 * mib // 2
    cache.put("big", "web.extract", {"text": "x" * (2 * mib)})
    assert cache.get("big") is None, "an entry over max_entry_bytes was kept"
    assert cache.get("k2") is not None


def test_a_result_too_large_for_a_tool_is_never_cached() -> None:
    """The runtime refuses a result over 4 MiB (RESULT_TOO_LARGE), yet the broker kept each
    one for 10 minutes: 25 calls of one execution held 120 MB, 500 entries about 2.5 GB."""
    from splice_build.runtime.limits import MAX_CAPABILITY_RESULT_BYTES

    provider = MemoryProvider("p", {"web.extract": {"text": "x" * MAX_CAPABILITY_RESULT_BYTES}})
    broker = make(provider)
    args = {"urls": ["https://example.com/"]}
    assert [call(broker, "web.extract", args)["status"] for _ in range(2)] == ["LIVE", "LIVE"]
    assert len(provider.calls) == 2


def test_a_replayed_result_is_a_copy() -> None:
    """A caller that changes the result it got does not change what the next one is given."""
    provider = MemoryProvider("p", {"web.search": {"items": [1]}})
    broker = make(provider)
    call(broker, "web.search", {"query": "q"})["data"]["items"].append("poisoned")
    first = call(broker, "web.search", {"query": "q"})
    first["data"]["items"].append("poisoned")
    second = call(broker, "web.search", {"query": "q"})
    assert (first["status"], second["status"]) == ("CACHED", "CACHED")
    assert second["data"] == {"items": [1]}


def test_keys_are_loaded_lazily(tmp_path: Any) -> None:
    loaded: list[int] = []

    def loader() -> Any:
        loaded.append(1)
        return load_keys(env={}, project_root=None, home=None)

    keyed = MemoryProvider(
        "keyed", {"web.search": {}}, key_variable="TAVILY_API_KEY", key_required=True
    )
    broker = Broker(keys=loader, providers={"keyed": keyed})
    assert loaded == []
    call(broker, "web.search", {"query": "q"})
    call(broker, "web.search", {"query": "q"})
    assert loaded == [1]
