"""``provider_answers``: the data providers' readers of what their vendor's API sends back.

Each capability call of a tool that reaches a provider ends in that provider's reading of a
JSON answer from a host on the internet (search results, scraped pages, market data, chain
RPC, GitHub, AI models): input from outside like a registry's answer. The target serves the
bytes as the answer's body from the local fake of every provider (``testing/fake_providers.py``,
reached through the broker's test-only ``_unsafe_endpoints``), and makes the call through a
real ``Broker`` holding that one provider, its guarded HTTP session, limits and envelope.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Check = Callable[[bytes], None]

_TOKEN = "0x" + "1f" * 20
_POOL = "0x" + "2e" * 20
_PAGE = "https://example.com/"
# (provider, capability, args): every capability of every provider, args it accepts.
CALLS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("tavily", "web.search", {"query": "q"}),
    ("tavily", "web.answer", {"query": "q"}),
    ("tavily", "web.extract", {"urls": [_PAGE]}),
    ("exa", "web.search", {"query": "q"}),
    ("exa", "web.answer", {"query": "q"}),
    ("exa", "web.extract", {"urls": [_PAGE]}),
    ("exa", "web.similar", {"url": _PAGE}),
    ("firecrawl", "web.search", {"query": "q"}),
    ("firecrawl", "web.extract", {"urls": [_PAGE]}),
    ("firecrawl", "web.map", {"url": _PAGE}),
    ("dexscreener", "market.search", {"query": "tst"}),
    ("dexscreener", "market.pairs", {"network": "robinhood", "address": _TOKEN}),
    ("dexscreener", "market.price", {"network": "robinhood", "token": _TOKEN}),
    ("geckoterminal", "market.ohlcv", {"network": "eth", "pool": _POOL}),
    ("geckoterminal", "market.pairs", {"network": "eth", "address": _TOKEN}),
    ("geckoterminal", "market.price", {"network": "eth", "token": _TOKEN}),
    ("jsonrpc", "onchain.balance", {"address": _TOKEN}),
    ("jsonrpc", "onchain.token", {"address": _TOKEN}),
    ("jsonrpc", "onchain.transaction", {"hash": "0x" + "ab" * 32}),
    ("github", "github.repository", {"repo": "octo/hello"}),
    ("github", "github.search", {"query": "q"}),
    ("github", "github.raw", {"url": "https://raw.githubusercontent.com/octo/hello/main/a.md"}),
    ("openrouter", "ai.models", {}),
    ("openrouter", "ai.generate", {"prompt": "hi"}),
    ("gemini", "ai.models", {}),
    ("gemini", "ai.generate", {"prompt": "hi"}),
)


def provider_answers() -> Check:
    """First byte: the call (``CALLS``); the rest: the body every host of its provider answers
    with status 200 (bytes that are not UTF-8 sent as such). The vendor was reached; the
    answer is the tool's JSON (no ``NaN``), ``LIVE`` or ``ERROR``; the provider keys appear in
    no answer; no call ends in the broker's last resort for a provider's crash ("internal
    error", logged at ERROR): a value of another type in the answer is the vendor's
    ``ProviderFailure``, raised where a typed read found it
    (``broker/providers/answer_reader.py``), and the path that refusal names holds a value of
    another type in the body served (``testing/answer_paths.py``)."""
    import contextlib

    from fuzz.targets import Finding
    from splice_build.broker import Broker
    from splice_build.broker.cache import ResultCache
    from splice_build.broker.keys import load_keys
    from splice_build.broker.providers import PROVIDERS
    from splice_build.broker.providers.http import MAX_RESPONSE_VALUES
    from splice_build.spec.untrusted_json import decode
    from testing.answer_paths import SHAPE_REFUSAL, misnamed
    from testing.fake_providers import HOSTS, fake_providers, recognizable_keys

    stack = contextlib.ExitStack()
    fake = stack.enter_context(fake_providers())
    keys = load_keys(env=recognizable_keys(), project_root=None, home=None)
    brokers = {
        name: Broker(
            keys=keys,
            providers={name: PROVIDERS[name]},
            _unsafe_endpoints=fake.endpoints,
            request_timeout=5.0,
            cache=ResultCache(max_entries=0),
        )
        for name in {call[0] for call in CALLS}
    }

    def check(data: bytes) -> None:
        if not data:
            return
        name, capability, args = CALLS[data[0] % len(CALLS)]
        body = data[1:].decode("utf-8", "surrogateescape")
        for host in HOSTS:
            fake.behave(host, "body:" + body)
        answer = brokers[name].call(
            {"package": "@fuzzer/p", "tool": "t", "capability": capability, "args": args}
        )
        fake.reset()
        if "network error" in str(answer.get("message")):
            raise Finding(f"{name} {capability}: the fake vendor was not reached: {answer!r:.300}")
        if "internal error" in str(answer.get("message")):
            raise Finding(f"{name} {capability}: the provider crashed: {answer!r:.300}")
        text = json.dumps(answer, allow_nan=False)  # goes back to the tool as a frame
        if answer.get("status") not in ("LIVE", "ERROR"):
            raise Finding(f"{name} {capability}: status {answer.get('status')!r}")
        if "LEAKCANARY" in text and b"LEAKCANARY" not in data:
            raise Finding(f"{name} {capability}: a provider key in the answer: {text[:300]}")
        refusal = SHAPE_REFUSAL.fullmatch(str(answer.get("message")))
        if refusal:  # the provider read the body, so it decodes as the provider decoded it
            served = body.encode("utf-8", "surrogatepass")
            if misnamed(
                refusal, decode(served, max_bytes=len(served), max_values=MAX_RESPONSE_VALUES)
            ):
                raise Finding(f"{name} {capability}: {refusal[0]!r} of the answer {body!r:.300}")

    # The server lives as long as the check: a context manager's generator nobody holds is
    # closed when it is collected, and its server shut down with it.
    check.__dict__["servers"] = stack
    return check
