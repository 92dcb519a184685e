"""What a data provider is: a small Protocol, the values it returns and its base error.

A provider serves some capabilities by calling one vendor's HTTP API through a
``ProviderClient`` (``providers/http.py``), which is bound to exactly one of the provider's
hosts, carries the key only to the hosts that may receive it, and enforces the size and time
limits. Providers never see other providers' keys and never build URLs from strings a skill
chose except through ``path_params`` (percent-encoded) and query parameters.

``ProviderFailure`` is raised for every failed call; its message must name the endpoint by
its *template* (``POST /search``), never by a URL that may carry a key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from splice_build.broker.interface import BrokerFailure
from splice_build.errors import ErrorCode
from splice_build.records import dataclass, field

if TYPE_CHECKING:
    from splice_build.broker.providers.http import ProviderClient


class ProviderFailure(BrokerFailure):
    """One provider could not answer; the broker records it as an attempt and may fall back.

    ``degraded`` marks a provider that cannot be reached safely (TLS verification failed,
    for example behind TLS interception); it is reported, never worked around.
    """

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode = ErrorCode.PROVIDER_ERROR,
        status: int | None = None,
        degraded: bool = False,
    ) -> None:
        super().__init__(code, message, status=status)
        self.degraded = degraded


@dataclass(frozen=True)
class ProviderData:
    """A provider's answer: the normalized ``data`` plus what provenance should say."""

    data: Any
    resource: str | None = None
    request_id: str | None = None
    block_number: int | None = None
    rate_limit: Mapping[str, Any] | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProviderContext:
    """The clients a provider may use for one call, one per allowed host."""

    clients: Mapping[str, ProviderClient] = field(default_factory=dict)

    def client(self, host: str) -> ProviderClient:
        return self.clients[host]


class Provider(Protocol):
    """One vendor: the exact hosts it may reach and the one variable holding its key.

    ``key_is_endpoint``: the key is the endpoint URL itself (JSON-RPC), so the provider may
    reach only that URL's host and ``hosts`` is empty.
    """

    name: str
    title: str
    hosts: tuple[str, ...]
    key_variable: str | None
    key_required: bool
    key_hosts: tuple[str, ...]
    key_is_endpoint: bool
    capabilities: frozenset[str]

    def call(self, capability: str, args: Mapping[str, Any], ctx: ProviderContext) -> ProviderData:
        """Serve ``capability`` (already validated ``args``); raises ProviderFailure."""
        ...
