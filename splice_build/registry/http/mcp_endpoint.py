"""``/mcp`` on the registry: a registry token first, then MCP's Streamable HTTP rules.

docs/compatibility.md#registry-api, docs/compatibility.md#mcp. The caller must present any valid registry token (401
``UNAUTHENTICATED`` otherwise, counted against the client's failed-auth budget; 429 once
blocked); the answer to that is a registry error document, like every other route. The
request then goes, unread, to the MCP transport of ``splice mcp --http``
(``mcp.transport.http.McpHttpApp``: POST only, no ``Origin``, JSON content type and
accept, a supported protocol version, a body of at most 1 MiB, batches, 202 for
notifications). That transport checks its own bearer token against one digest; it is
given the digest of the token the registry has just accepted, so its check passes for
exactly this request's credentials and the transport stays unchanged. Its tool calls are
reads of the store, admitted like those of ``splice mcp --http`` (at most the core count at
once, fair queues, 503 beyond; docs/mcp.md#admission-control). What a call must read of a
large manifest is charged to the client's budget of costly reads, as an anonymous ``GET``
of its version is (``mcp_backend.charged_to``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from anyio import CapacityLimiter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from splice_build.body_reads import BodyReads
from splice_build.mcp.admission import AsyncAdmission, default_max_calls
from splice_build.mcp.transport.http import McpHttpApp
from splice_build.registry.http.routing import caller_of
from splice_build.registry.mcp_backend import RegistryMcpServer, charged_to
from splice_build.registry.service.auth import bearer_token
from splice_build.registry.service.read import Keyed
from splice_build.registry.service.registry_service import RegistryService


class RegistryMcpEndpoint:
    """The ASGI app of ``/mcp`` (every method: the transport answers 405 for non-POST)."""

    def __init__(
        self,
        service: RegistryService,
        server: RegistryMcpServer,
        body_seconds: float,
        bodies: BodyReads,
    ) -> None:
        self._service = service
        self._server = server
        self._body_seconds = body_seconds
        self._bodies = bodies  # the app's: the server's stop ends them
        # Read when the app is made, so a bad SPLICE_MCP_MAX_CALLS stops the server at its
        # start (USAGE), not every /mcp request with an error of its own.
        self._max_calls = default_max_calls()
        self._admission: AsyncAdmission | None = None  # made on the server's event loop
        self._large_decodes = CapacityLimiter(1)  # one for every request: McpHttpApp._decode

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        caller = caller_of(Request(scope, receive))
        await run_in_threadpool(self._service.authenticate, caller)
        token = bearer_token(caller.authorization)
        if token is None:
            raise AssertionError("BUG: authenticated without a bearer token")
        digest = hashlib.sha256(token.encode("utf-8")).digest()
        if self._admission is None:
            self._admission = AsyncAdmission(self._max_calls)
        endpoint = McpHttpApp(
            self._server,
            digest,
            self._admission,
            self._body_seconds,
            self._bodies,
            self._large_decodes,
        )

        def charge(document: Keyed) -> Callable[[float], None]:
            return self._service.charge_costly_read(caller.client, document.cost)

        with charged_to(charge):  # the calls' threads start in this context
            await endpoint(scope, receive, send)
