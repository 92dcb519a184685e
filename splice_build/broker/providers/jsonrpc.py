"""A JSON-RPC endpoint of Robinhood Chain (``ROBINHOOD_RPC_URL``): onchain.balance, .transaction, .token.

The URL usually carries the key in its path or query (Alchemy, QuickNode style), so it is a
secret as a whole: the client may reach only that URL's host, and messages show the endpoint
as ``POST {ROBINHOOD_RPC_URL}``. Without the variable the provider is not configured.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from splice_build.broker.providers.answer_reader import Answer
from splice_build.broker.providers.interface import ProviderContext, ProviderData, ProviderFailure
from splice_build.errors import ErrorCode

KEY_VARIABLE = "ROBINHOOD_RPC_URL"
ENDPOINT = "{ROBINHOOD_RPC_URL}"
WEI_PER_ETHER = Decimal(10) ** 18
# ERC-20 selectors: name(), symbol(), decimals(), totalSupply().
_TOKEN_CALLS = {
    "name": "0x06fdde03",
    "symbol": "0x95d89b41",
    "decimals": "0x313ce567",
    "totalSupply": "0x18160ddd",
}


# A JSON-RPC quantity: "0x" and at most 64 hexadecimal digits (a uint256).
_QUANTITY = re.compile(r"0x[0-9a-fA-F]{1,64}")


def _int(answer: Answer) -> int | None:
    """The endpoint's quantity, or None when ``answer`` is not one: ``int(text, 16)`` alone also
    reads ``0x_10``, `` 0x10`` and non-ASCII digits, raises on ``0xzz``, and turns thousands of
    digits into an integer that has no JSON text on the way back to the tool."""
    value = answer.text()
    if value is None or not _QUANTITY.fullmatch(value):
        return None
    return int(value, 16)


def _id(item: Answer) -> int | None:
    """The id of one answer of the batch, if it is one of the whole numbers sent (``true``
    and ``1.0`` are equal to ``1`` in Python, a list is no key of a dict)."""
    value = item.field("id").value
    return value if type(value) is int else None


def _abi_string(answer: Answer) -> str | None:
    """Decode an ABI-encoded ``string`` return value (or a bytes32 one, as old tokens use)."""
    value = answer.text()
    if value is None or not value.startswith("0x"):
        return None
    try:
        raw = bytes.fromhex(value[2:])
        if len(raw) >= 64:
            length = int.from_bytes(raw[32:64], "big")
            if length <= len(raw) - 64:
                return raw[64 : 64 + length].decode("utf-8", "replace")
        return raw.rstrip(b"\0").decode("utf-8", "replace") or None
    except ValueError:
        return None


class JsonRpc:
    name = "jsonrpc"
    title = "Robinhood Chain JSON-RPC"
    hosts: tuple[str, ...] = ()  # the host of ROBINHOOD_RPC_URL
    key_variable = KEY_VARIABLE
    key_required = True
    key_is_endpoint = True
    key_hosts: tuple[str, ...] = ()
    capabilities = frozenset({"onchain.balance", "onchain.transaction", "onchain.token"})

    def call(self, capability: str, args: Mapping[str, Any], ctx: ProviderContext) -> ProviderData:
        (http,) = ctx.clients.values()

        def rpc(*calls: tuple[str, list[Any]]) -> list[Answer]:
            batch = [
                {"jsonrpc": "2.0", "id": i, "method": m, "params": p}
                for i, (m, p) in enumerate(calls)
            ]
            payload, _ = http.request_json("POST", "", body=batch)
            if not isinstance(payload.value, list):
                raise ProviderFailure(
                    f"jsonrpc POST {ENDPOINT}: the answer is not a JSON-RPC batch"
                )
            by_id = {_id(item): item for item in payload.objects()}
            out = []
            for i, (method, _params) in enumerate(calls):
                item = by_id.get(i, Answer({}, payload.where))  # not answered: no result
                if item.has("error"):
                    raise ProviderFailure(f"jsonrpc {method} failed")
                out.append(item.field("result"))
            return out

        if capability == "onchain.balance":
            balance, block = rpc(
                ("eth_getBalance", [args["address"], "latest"]), ("eth_blockNumber", [])
            )
            wei = _int(balance)
            if wei is None:
                raise ProviderFailure("jsonrpc eth_getBalance returned no balance")
            data = {
                "address": args["address"],
                "wei": str(wei),
                "balance": str(Decimal(wei) / WEI_PER_ETHER),
                "symbol": "ETH",
            }
            return ProviderData(data, f"POST {ENDPOINT} eth_getBalance", block_number=_int(block))
        if capability == "onchain.transaction":
            tx, receipt = rpc(
                ("eth_getTransactionByHash", [args["hash"]]),
                ("eth_getTransactionReceipt", [args["hash"]]),
            )
            if tx.value is None:
                raise ProviderFailure(
                    "jsonrpc: no transaction with that hash", code=ErrorCode.NOT_FOUND
                )
            tx = tx.as_object()
            outcome = receipt.field("status").text()  # a receipt not given: still pending
            data = {
                "hash": tx.field("hash").text(),
                "from": tx.field("from").text(),
                "to": tx.field("to").text(),
                "wei": str(_int(tx.field("value")) or 0),
                "blockNumber": _int(tx.field("blockNumber")),
                "status": {"0x1": "success", "0x0": "failed"}.get(outcome or "", "pending"),
                "gasUsed": _int(receipt.field("gasUsed")),
            }
            return ProviderData(
                data, f"POST {ENDPOINT} eth_getTransactionByHash", block_number=data["blockNumber"]
            )
        address = args["address"]
        calls = [("eth_getCode", [address, "latest"]), ("eth_blockNumber", [])]
        calls += [
            ("eth_call", [{"to": address, "data": selector}, "latest"])
            for selector in _TOKEN_CALLS.values()
        ]
        code, block, name, symbol, decimals, supply = rpc(*calls)
        if code.text() in (None, "0x"):
            raise ProviderFailure("jsonrpc: no contract at that address", code=ErrorCode.NOT_FOUND)
        data = {
            "address": address,
            "name": _abi_string(name),
            "symbol": _abi_string(symbol),
            "decimals": _int(decimals),
            "totalSupply": str(_int(supply)) if _int(supply) is not None else None,
        }
        return ProviderData(data, f"POST {ENDPOINT} eth_call", block_number=_int(block))


PROVIDER = JsonRpc()
