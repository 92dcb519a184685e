"""@splice/market in the real sandbox against local fakes of DexScreener and GeckoTerminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing.capability_skills import assert_capability_package, load, run
from testing.fake_providers import POOL_ADDRESS, TOKEN_ADDRESS, broker_for, fake_providers

pytestmark = pytest.mark.node

CANDLES = {"network": "eth", "pool": POOL_ADDRESS, "timeframe": "day", "limit": 3}


def test_package() -> None:
    assert_capability_package(
        "market", ["market.price", "market.pairs", "market.ohlcv"], ["price", "pairs", "candles"]
    )


def test_live_cached_and_fallback(tmp_path: Path) -> None:
    with fake_providers() as fake:
        runtime, package = load("market", tmp_path, broker_for(fake, {}))
        price = run(runtime, package, "price", {"token": "tst"})
        assert price["status"] == "LIVE" and price["data"]["price"] == 1.25, price
        assert price["provenance"]["source"] == "dexscreener"
        assert (price["provenance"]["chain"], price["provenance"]["chainId"]) == ("robinhood", 4663)
        assert run(runtime, package, "price", {"token": "tst"})["status"] == "CACHED"
        pairs = run(runtime, package, "pairs", {"network": "eth", "token": TOKEN_ADDRESS})
        assert pairs["status"] == "LIVE" and pairs["data"]["pairs"][0]["pair"] == POOL_ADDRESS
        assert (
            fake.requests_to("api.dexscreener.com")[-1].path
            == f"/token-pairs/v1/eth/{TOKEN_ADDRESS}"
        )
        candles = run(runtime, package, "candles", CANDLES)
        assert candles["status"] == "LIVE" and len(candles["data"]["candles"]) == 3
        assert candles["provenance"]["source"] == "geckoterminal"
        fake.behave("api.dexscreener.com", "status:503")
        fallback = run(runtime, package, "price", {"token": TOKEN_ADDRESS, "network": "base"})
        assert fallback["status"] == "LIVE" and fallback["provenance"]["source"] == "geckoterminal"
        assert fallback["provenance"]["fallbackFrom"][0]["provider"] == "dexscreener"


@pytest.mark.parametrize(
    ("mode", "code"),
    [
        ("status:404", "NOT_FOUND"),
        ("status:429", "RATE_LIMITED"),
        ("status:500", "PROVIDER_ERROR"),
        ("slow", "PROVIDER_ERROR"),
        ("oversize", "PROVIDER_ERROR"),
    ],
)
def test_errors(mode: str, code: str, tmp_path: Path) -> None:
    with fake_providers() as fake:
        fake.behave("api.geckoterminal.com", mode)
        runtime, package = load("market", tmp_path, broker_for(fake, {}))
        out = run(runtime, package, "candles", CANDLES)
        assert out["status"] == "ERROR" and out["code"] == code, out


def test_invalid_input_is_refused_by_the_runtime(tmp_path: Path) -> None:
    with fake_providers() as fake:
        runtime, package = load("market", tmp_path, broker_for(fake, {}))
        bad = runtime.execute(package, "pairs", {"network": "eth", "token": "short"}).to_json()
        assert bad["error"]["code"] == "INVALID_INPUT"
        traversal = run(runtime, package, "pairs", {"network": "../..", "token": TOKEN_ADDRESS})
        assert traversal["status"] == "ERROR" and traversal["code"] == "INVALID_INPUT"
        assert fake.seen == []
