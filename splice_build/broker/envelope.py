"""The four result shapes a capability call answers with (docs/compatibility.md#capabilities, ``result.ts``).

- ``LIVE`` / ``CACHED``: ``{status, capability, data, provenance}``; provenance names the
  source provider, chain, the endpoint *template* (never a URL carrying a key), when it was
  fetched and, for ``CACHED``, the cache entry's age and expiry;
- ``UNAVAILABLE``: ``{status, code: CAPABILITY_UNAVAILABLE, capability, chain, chainId,
  provider, reason, providers?, timestamp}`` (no provider configured or implemented);
- ``ERROR``: ``{status, code, capability, chain, chainId, message, attempts, timestamp}``.

Every text that reaches these builders is already redacted by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from splice_build.errors import ErrorCode
from splice_build.records import dataclass
from splice_build.spec.js_date import iso_string

# Robinhood Chain mainnet: the one chain the broker serves (docs/compatibility.md#capabilities).
DEFAULT_CHAIN = "robinhood"
DEFAULT_CHAIN_ID = 4663

LIVE = "LIVE"
CACHED = "CACHED"
UNAVAILABLE = "UNAVAILABLE"
ERROR = "ERROR"
STATUSES = (LIVE, CACHED, UNAVAILABLE, ERROR)


def chain_of(capability: str, args: Any) -> tuple[str | None, int | None]:
    """The chain a call is about: on-chain data is Robinhood Chain; market data names its network."""
    if capability.startswith(("onchain.", "security.", "wallet.", "tokens.")):
        return DEFAULT_CHAIN, DEFAULT_CHAIN_ID
    if capability.startswith("market."):
        network = args.get("network") if isinstance(args, Mapping) else None
        if network in (None, DEFAULT_CHAIN, str(DEFAULT_CHAIN_ID)):
            return DEFAULT_CHAIN, DEFAULT_CHAIN_ID
        return str(network), None
    return None, None


@dataclass(frozen=True)
class Attempt:
    """One provider tried for a call that failed: its name, a redacted reason, the HTTP status."""

    provider: str
    error: str
    status: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"provider": self.provider, "error": self.error}
        if self.status is not None:
            out["status"] = self.status
        return out


def live(capability: str, args: Any, data: Any, provenance: Mapping[str, Any]) -> dict[str, Any]:
    chain, chain_id = chain_of(capability, args)
    return {
        "status": LIVE,
        "capability": capability,
        "data": data,
        "provenance": {"chain": chain, "chainId": chain_id, **provenance},
    }


def cached(result: Mapping[str, Any], cache: Mapping[str, Any]) -> dict[str, Any]:
    """A stored LIVE result replayed: status CACHED, ``fresh: false`` and the cache block."""
    provenance = {**result["provenance"], "fresh": False, "cache": dict(cache)}
    return {**result, "status": CACHED, "provenance": provenance}


def unavailable(
    capability: str,
    args: Any,
    reason: str,
    *,
    now: float,
    provider: str | None = None,
    providers: Sequence[str] = (),
) -> dict[str, Any]:
    chain, chain_id = chain_of(capability, args)
    out: dict[str, Any] = {
        "status": UNAVAILABLE,
        "code": str(ErrorCode.CAPABILITY_UNAVAILABLE),
        "capability": capability,
        "chain": chain,
        "chainId": chain_id,
        "provider": provider,
        "reason": reason,
    }
    if providers:
        out["providers"] = list(providers)
    out["timestamp"] = iso_string(now)
    return out


def error(
    capability: str,
    args: Any,
    code: ErrorCode,
    message: str,
    *,
    now: float,
    attempts: Sequence[Attempt] = (),
    details: Sequence[str] = (),
) -> dict[str, Any]:
    chain, chain_id = chain_of(capability, args)
    out: dict[str, Any] = {
        "status": ERROR,
        "code": str(code),
        "capability": capability,
        "chain": chain,
        "chainId": chain_id,
        "message": message,
        "attempts": [attempt.to_json() for attempt in attempts],
    }
    if details:
        out["details"] = list(details)
    out["timestamp"] = iso_string(now)
    return out
