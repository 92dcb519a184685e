"""The registry's ASGI app (Starlette): routes of docs/compatibility.md#registry-api over ``RegistryService``.

The routes come in groups, one module each: ``routes_read`` (anonymous reads),
``routes_account`` (publishers) and ``routes_admin``; what their handlers share is in
``routing``. Handlers are thin: read the request (bodies through ``body.read_limited``), call
the service on the thread pool (SQLite is synchronous), render JSON. Errors of every kind go
through ``errors.error_response``. CORS headers only on anonymous read routes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from splice_build.body_reads import BodyReads
from splice_build.client_address import IPNetwork, TrustedProxies
from splice_build.errors import ErrorCode, RegistryError, SpliceError
from splice_build.mcp.transport.http import BODY_SECONDS
from splice_build.registry.client.deadline import DEFAULT_DEADLINE, Deadlines
from splice_build.registry.http import routes_account, routes_admin, routes_read
from splice_build.registry.http.body import BODY_DEADLINES, BODY_READS
from splice_build.registry.http.errors import error_response
from splice_build.registry.http.routing import CORS_HEADERS
from splice_build.registry.service.registry_service import RegistryService

if TYPE_CHECKING:
    from splice_build.registry.http.mcp_endpoint import RegistryMcpEndpoint

log = logging.getLogger(__name__)


def create_app(
    service: RegistryService,
    *,
    trusted_proxies: Sequence[IPNetwork] = (),
    body_deadline: float = DEFAULT_DEADLINE,
) -> Starlette:
    """The app for one service (one data directory): the route groups, then MCP.

    ``trusted_proxies``: the only peers whose ``X-Forwarded-For`` names the client
    (``client_address``). ``body_deadline``: the base of a request body's deadline, in
    seconds (``body.body_seconds``; ``/mcp`` takes the lesser of it and its own 30 s)."""
    bodies = BodyReads()  # ended by the server's stop at its cut (http/server.py)
    routes = [
        *routes_read.routes(service),
        *routes_account.routes(service),
        *routes_admin.routes(service),
        Route("/mcp", _mcp_endpoint(service, min(BODY_SECONDS, body_deadline), bodies)),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(TrustedProxies, trusted=tuple(trusted_proxies))],
        exception_handlers={
            SpliceError: _splice_error,
            HTTPException: _no_route,
            Exception: _unexpected,
        },
    )
    # A path the API does not list is 404 NOT_FOUND, a trailing slash too: Starlette would
    # answer 307 to a URL it builds from the request's Host header and scheme (http:// behind
    # a TLS proxy), inviting a client that follows it to send its token and body there.
    app.router.redirect_slashes = False
    setattr(app.state, BODY_DEADLINES, Deadlines(request=body_deadline))
    setattr(app.state, BODY_READS, bodies)
    return app


def _mcp_endpoint(
    service: RegistryService, body_seconds: float, bodies: BodyReads
) -> RegistryMcpEndpoint:
    """The discovery MCP server of ``/mcp``; its errors are logged like the app's."""
    from splice_build.registry.http.mcp_endpoint import RegistryMcpEndpoint
    from splice_build.registry.mcp_backend import registry_mcp_server

    server = registry_mcp_server(service.deps, log=lambda message: log.error("mcp: %s", message))
    return RegistryMcpEndpoint(service, server, body_seconds, bodies)


def _cors(request: Request) -> dict[str, str]:
    return CORS_HEADERS if getattr(request.state, "public", False) else {}


async def _splice_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SpliceError)
    return error_response(exc, headers=_cors(request))


async def _no_route(request: Request, exc: Exception) -> Response:
    error = RegistryError(ErrorCode.NOT_FOUND, f"No route for {request.method} {request.url.path}")
    return error_response(error)


async def _unexpected(request: Request, exc: Exception) -> Response:
    log.error(
        "unexpected failure on %s %s: %s", request.method, request.url.path, type(exc).__name__
    )
    return error_response(RegistryError(ErrorCode.INTERNAL_ERROR, "Internal error"))
