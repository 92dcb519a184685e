"""GeckoTerminal (api.geckoterminal.com, no key): market.price, market.pairs, market.ohlcv."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from splice_build.broker.envelope import DEFAULT_CHAIN, DEFAULT_CHAIN_ID
from splice_build.broker.providers.interface import ProviderContext, ProviderData, ProviderFailure
from splice_build.broker.providers.numbers import finite_number
from splice_build.errors import ErrorCode

HOST = "api.geckoterminal.com"
_ADDRESS = re.compile(r"[A-Za-z0-9]{20,100}")
DEFAULT_OHLCV_LIMIT = 100


def _attributes(item: Any) -> Mapping[str, Any]:
    attrs = item.get("attributes") if isinstance(item, Mapping) else None
    return attrs if isinstance(attrs, Mapping) else {}


class GeckoTerminal:
    name = "geckoterminal"
    title = "GeckoTerminal"
    hosts = (HOST,)
    key_variable = None
    key_required = False
    key_is_endpoint = False
    key_hosts = ()
    capabilities = frozenset({"market.price", "market.pairs", "market.ohlcv"})

    def call(self, capability: str, args: Mapping[str, Any], ctx: ProviderContext) -> ProviderData:
        http = ctx.client(HOST)
        network = str(args.get("network") or DEFAULT_CHAIN)
        if network == str(DEFAULT_CHAIN_ID):
            network = DEFAULT_CHAIN
        if capability == "market.ohlcv":
            return self._ohlcv(args, network, http)
        if capability == "market.pairs":
            template = "/api/v2/networks/{network}/tokens/{address}/pools"
            params = {"network": network, "address": args["address"]}
            payload, _ = http.request_json("GET", template, path_params=params)
            found = payload.get("data") if isinstance(payload, Mapping) else None
            pairs = [
                {
                    "network": network,
                    "pair": _attributes(p).get("address"),
                    "name": _attributes(p).get("name"),
                    "priceUsd": finite_number(_attributes(p).get("base_token_price_usd")),
                    "liquidityUsd": finite_number(_attributes(p).get("reserve_in_usd")),
                }
                for p in found or []
            ]
            return ProviderData({"pairs": pairs}, f"GET {template}")
        token = str(args["token"])
        if not _ADDRESS.fullmatch(token):
            raise ProviderFailure(
                "geckoterminal prices tokens by address only", code=ErrorCode.NOT_FOUND
            )
        template = "/api/v2/simple/networks/{network}/token_price/{address}"
        payload, _ = http.request_json(
            "GET", template, path_params={"network": network, "address": token}
        )
        prices = _attributes(payload.get("data") if isinstance(payload, Mapping) else None).get(
            "token_prices"
        )
        price = None
        if isinstance(prices, Mapping):
            price = next(
                (finite_number(v) for k, v in prices.items() if str(k).lower() == token.lower()),
                None,
            )
        if price is None:
            raise ProviderFailure(
                f"geckoterminal GET {template}: no price for that token", code=ErrorCode.NOT_FOUND
            )
        notes = (
            () if args.get("vs", "usd").lower() == "usd" else ("Prices are quoted in USD only.",)
        )
        data = {"token": {"address": token}, "network": network, "price": price, "vs": "usd"}
        return ProviderData(data, f"GET {template}", notes=notes)

    @staticmethod
    def _ohlcv(args: Mapping[str, Any], network: str, http: Any) -> ProviderData:
        template = "/api/v2/networks/{network}/pools/{pool}/ohlcv/{timeframe}"
        timeframe = args.get("timeframe", "hour")
        payload, _ = http.request_json(
            "GET",
            template,
            path_params={"network": network, "pool": args["pool"], "timeframe": timeframe},
            params={
                "aggregate": args.get("aggregate", 1),
                "limit": args.get("limit", DEFAULT_OHLCV_LIMIT),
            },
        )
        rows = _attributes(payload.get("data") if isinstance(payload, Mapping) else None).get(
            "ohlcv_list"
        )
        candles = [
            {
                "time": row[0],
                "open": row[1],
                "high": row[2],
                "low": row[3],
                "close": row[4],
                "volume": row[5],
            }
            for row in rows or []
            if isinstance(row, list) and len(row) >= 6
        ]
        data = {
            "network": network,
            "pool": args["pool"],
            "timeframe": timeframe,
            "candles": candles,
        }
        return ProviderData(data, f"GET {template}")


PROVIDER = GeckoTerminal()
