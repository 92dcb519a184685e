"""GeckoTerminal (api.geckoterminal.com, no key): market.price, market.pairs, market.ohlcv."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from splice_build.broker.envelope import DEFAULT_CHAIN, DEFAULT_CHAIN_ID
from splice_build.broker.providers.answer_reader import Answer
from splice_build.broker.providers.interface import ProviderContext, ProviderData, ProviderFailure
from splice_build.errors import ErrorCode

HOST = "api.geckoterminal.com"
_ADDRESS = re.compile(r"[A-Za-z0-9]{20,100}")
DEFAULT_OHLCV_LIMIT = 100
_CANDLE = ("time", "open", "high", "low", "close", "volume")  # an ohlcv_list row, in order


def _attributes(answer: Answer) -> Answer:
    """``data.attributes`` of a JSON:API answer."""
    return answer.as_object().field("data").field("attributes")


def _pool(item: Answer) -> dict[str, Any]:
    attributes = item.as_object().field("attributes")
    return {
        "pair": attributes.field("address").text(),
        "name": attributes.field("name").text(),
        "priceUsd": attributes.field("base_token_price_usd").price(),
        "liquidityUsd": attributes.field("reserve_in_usd").price(),
    }


def _candle(row: Answer) -> dict[str, Any]:
    values = row.items()
    if len(values) < len(_CANDLE):
        raise row.wrong(f"has fewer than {len(_CANDLE)} values")
    return {name: value.number() for name, value in zip(_CANDLE, values, strict=False)}


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
            found = payload.as_object().field("data").items()
            pairs = [{"network": network, **_pool(item)} for item in found]
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
        prices = _attributes(payload).field("token_prices").entries()
        price = next((v.price() for k, v in prices if k.lower() == token.lower()), None)
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
        candles = [_candle(row) for row in _attributes(payload).field("ohlcv_list").items()]
        data = {
            "network": network,
            "pool": args["pool"],
            "timeframe": timeframe,
            "candles": candles,
        }
        return ProviderData(data, f"GET {template}")


PROVIDER = GeckoTerminal()
