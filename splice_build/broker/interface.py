"""The broker's public contract: the request it serves and the Protocol it satisfies.

The runtime's capability channel (``runtime/capabilities.py``) calls ``call(request)`` with
``{package, tool, capability, args}`` after its own checks (declaration, budget, in-flight
limit, argument size and depth) and expects a result object back: one of the four shapes of
``broker/envelope.py``. The broker never raises for a provider failure; ``BrokerFailure`` is
the base of the errors raised *inside* the broker family (providers, key loading) and is
always turned into an ``ERROR`` result before it leaves ``Broker.call``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from splice_build.errors import BrokerError, ErrorCode
from splice_build.records import dataclass


class CapabilityBroker(Protocol):
    """Structurally the runtime's ``CapabilityBroker``: one method, never raises for failures."""

    def call(self, request: Mapping[str, Any]) -> Mapping[str, Any]: ...


class BrokerFailure(BrokerError):
    """A failure inside the broker family; its message must already be free of secrets."""

    def __init__(self, code: ErrorCode, message: str, *, status: int | None = None) -> None:
        super().__init__(code, message)
        self.status = status


@dataclass(frozen=True)
class BrokerRequest:
    """One capability call as the runtime forwards it (fields of docs/compatibility.md#capability-channel)."""

    package: str
    tool: str
    capability: str
    args: Any

    @classmethod
    def from_json(cls, request: Mapping[str, Any]) -> BrokerRequest:
        return cls(
            package=str(request.get("package", "")),
            tool=str(request.get("tool", "")),
            capability=str(request.get("capability", "")),
            args=request.get("args"),
        )
