"""DexScreener (api.dexscreener.com, no key): market.price, market.pairs, market.search."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from splice_build.broker.envelope import DEFAULT_CHAIN, DEFAULT_CHAIN_ID
from splice_build.broker.providers.interface import ProviderContext, ProviderData, ProviderFailure
from splice_build.broker.providers.numbers import finite_number
from splice_build.errors import ErrorCode

HOST = "api.dexscreener.com"
MAX_PAIRS = 50


def _pair(item: Mapping[str, Any]) -> dict[str, Any]:
    base = item.get("baseToken") if isinstance(item.get("baseToken"), Mapping) else {}
    quote = item.get("quoteToken") if isinstance(item.get("quoteToken"), Mapping) else {}
    liquidity = item.get("liquidity") if isinstance(item.get("liquidity"), Mapping) else {}
    volume = item.get("volume") if isinstance(item.get("volume"), Mapping) else {}
    return {
        "network": item.get("chainId"),
        "dex": item.get("dexId"),
        "pair": item.get("pairAddress"),
        "base": {
            "address": base.get("address"),
            "symbol": base.get("symbol"),
            "name": base.get("name"),
        },
        "quote": {
            "address": quote.get("address"),
            "symbol": quote.get("symbol"),
            "name": quote.get("name"),
        },
        "priceUsd": finite_number(item.get("priceUsd")),
        "priceNative": finite_number(item.get("priceNative")),
        "liquidityUsd": finite_number(liquidity.get("usd")),
        "volume24hUsd": finite_number(volume.get("h24")),
        "url": item.get("url"),
    }


def _pairs(payload: Any) -> list[dict[str, Any]]:
    found = payload.get("pairs") if isinstance(payload, Mapping) else payload
    return [_pair(p) for p in found or [] if isinstance(p, Mapping)][:MAX_PAIRS]


class DexScreener:
    name = "dexscreener"
    title = "DexScreener"
    hosts = (HOST,)
    key_variable = None
    key_required = False
    key_is_endpoint = False
    key_hosts = ()
    capabilities = frozenset({"market.price", "market.pairs", "market.search"})

    def call(self, capability: str, args: Mapping[str, Any], ctx: ProviderContext) -> ProviderData:
        http = ctx.client(HOST)
        if capability == "market.pairs":
            template = "/token-pairs/v1/{network}/{address}"
            params = {"network": args["network"], "address": args["address"]}
            payload, _ = http.request_json("GET", template, path_params=params)
            return ProviderData({"pairs": _pairs(payload)}, f"GET {template}")
        query = args["query"] if capability == "market.search" else args["token"]
        payload, _ = http.request_json("GET", "/latest/dex/search", params={"q": query})
        pairs = _pairs(payload)
        if capability == "market.search":
            return ProviderData({"query": query, "pairs": pairs}, "GET /latest/dex/search")
        network = args.get("network") or DEFAULT_CHAIN
        if network == str(DEFAULT_CHAIN_ID):
            network = DEFAULT_CHAIN
        token = str(args["token"]).lower()
        matching = [
            p
            for p in pairs
            if p["network"] == network
            and p["priceUsd"] is not None
            and token in {str(p["base"]["symbol"]).lower(), str(p["base"]["address"]).lower()}
        ]
        if not matching:
            raise ProviderFailure(
                f"dexscreener GET /latest/dex/search: no {network} pair for that token",
                code=ErrorCode.NOT_FOUND,
            )
        best = max(matching, key=lambda p: p["liquidityUsd"] or 0)
        notes = (
            () if args.get("vs", "usd").lower() == "usd" else ("Prices are quoted in USD only.",)
        )
        data = {
            "token": best["base"],
            "network": network,
            "price": best["priceUsd"],
            "vs": "usd",
            "pair": best["pair"],
            "dex": best["dex"],
            "liquidityUsd": best["liquidityUsd"],
        }
        return ProviderData(data, "GET /latest/dex/search", notes=notes)


PROVIDER = DexScreener()
