"""DexScreener (api.dexscreener.com, no key): market.price, market.pairs, market.search."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from splice_build.broker.envelope import DEFAULT_CHAIN, DEFAULT_CHAIN_ID
from splice_build.broker.providers.answer_reader import Answer
from splice_build.broker.providers.interface import ProviderContext, ProviderData, ProviderFailure
from splice_build.errors import ErrorCode

HOST = "api.dexscreener.com"
MAX_PAIRS = 50


def _token(token: Answer) -> dict[str, Any]:
    return {
        "address": token.field("address").text(),
        "symbol": token.field("symbol").text(),
        "name": token.field("name").text(),
    }


def _pair(item: Answer) -> dict[str, Any]:
    return {
        "network": item.field("chainId").text(),
        "dex": item.field("dexId").text(),
        "pair": item.field("pairAddress").text(),
        "base": _token(item.field("baseToken")),
        "quote": _token(item.field("quoteToken")),
        "priceUsd": item.field("priceUsd").price(),
        "priceNative": item.field("priceNative").price(),
        "liquidityUsd": item.field("liquidity").field("usd").price(),
        "volume24hUsd": item.field("volume").field("h24").price(),
        "url": item.field("url").text(),
    }


def _pairs(found: Answer) -> list[dict[str, Any]]:
    """The first ``MAX_PAIRS`` pairs of the list ``found``."""
    return [_pair(item.as_object()) for item in found.items()[:MAX_PAIRS]]


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
            # this endpoint answers the list of pairs itself
            return ProviderData({"pairs": _pairs(payload)}, f"GET {template}")
        query = args["query"] if capability == "market.search" else args["token"]
        payload, _ = http.request_json("GET", "/latest/dex/search", params={"q": query})
        pairs = _pairs(payload.as_object().field("pairs"))
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
            and token in {(p["base"]["symbol"] or "").lower(), (p["base"]["address"] or "").lower()}
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
