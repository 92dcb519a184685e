"""The registry's ASGI app (Starlette): routes of docs/compatibility.md#registry-api over ``RegistryService``.

Handlers are thin: read the request (bodies through ``body.read_limited``), call the
service on the thread pool (SQLite is synchronous), render JSON. Errors of every kind go
through ``errors.error_response``. CORS headers only on anonymous read routes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from splice_build.errors import ErrorCode, RegistryError, SpliceError
from splice_build.registry.api import (
    IMMUTABLE_CACHE,
    INTEGRITY_HEADER,
    MAX_JSON_BODY,
    MAX_PUBLISH_BODY,
)
from splice_build.registry.http.body import read_limited
from splice_build.registry.http.errors import error_response, json_bytes
from splice_build.registry.service import fields
from splice_build.registry.service.auth import Caller
from splice_build.registry.service.registry_service import RegistryService

if TYPE_CHECKING:
    from splice_build.registry.http.mcp_endpoint import RegistryMcpEndpoint

log = logging.getLogger(__name__)

CORS_HEADERS = {
    "access-control-allow-origin": "*",
    "access-control-expose-headers": "x-splice-integrity, content-length, content-disposition, retry-after",
    "vary": "origin",
}
PREFLIGHT_HEADERS = {**CORS_HEADERS, "access-control-allow-methods": "GET, OPTIONS"}
Handler = Callable[[Request], Awaitable[Response]]


def json_response(data: Any, *, status: int = 200, public: bool = False) -> Response:
    headers = {"cache-control": "no-store", **(CORS_HEADERS if public else {})}
    return Response(
        json_bytes(data),
        status_code=status,
        media_type="application/json; charset=utf-8",
        headers=headers,
    )


def caller_of(request: Request) -> Caller:
    client = request.client.host if request.client else "local"
    return Caller(authorization=request.headers.get("authorization"), client=client)


def base_url_of(request: Request) -> str:
    return str(request.base_url).rstrip("/")


async def json_body(request: Request) -> dict[str, Any]:
    return fields.json_object(await read_limited(request, MAX_JSON_BODY))


def create_app(service: RegistryService) -> Starlette:
    """The app for one service (one data directory)."""

    def public(handler: Handler) -> Handler:
        """Anonymous read: CORS on the response (errors too) and an OPTIONS preflight."""

        async def wrapped(request: Request) -> Response:
            request.state.public = True
            if request.method == "OPTIONS":
                return Response(status_code=204, headers=PREFLIGHT_HEADERS)
            return await handler(request)

        return wrapped

    def p(request: Request, name: str) -> str:
        value: str = request.path_params[name]
        return value

    async def index(request: Request) -> Response:
        return json_response(service.index(), public=True)

    async def health(request: Request) -> Response:
        return json_response(service.health(), public=True)

    async def search(request: Request) -> Response:
        def first(name: str) -> str | None:
            # URLSearchParams.get: the first of repeated parameters (Starlette's get: the last).
            values = request.query_params.getlist(name)
            return values[0] if values else None

        data = await run_in_threadpool(
            service.search, first("q") or "", limit=first("limit"), kind=first("kind")
        )
        return json_response(data, public=True)

    async def package(request: Request) -> Response:
        data = await run_in_threadpool(service.package, p(request, "ns"), p(request, "name"))
        return json_response(data, public=True)

    async def versions(request: Request) -> Response:
        data = await run_in_threadpool(service.versions, p(request, "ns"), p(request, "name"))
        return json_response(data, public=True)

    async def version(request: Request) -> Response:
        data = await run_in_threadpool(
            service.version,
            p(request, "ns"),
            p(request, "name"),
            p(request, "version"),
            base_url=base_url_of(request),
        )
        return json_response(data, public=True)

    async def provenance(request: Request) -> Response:
        args = (p(request, "ns"), p(request, "name"), p(request, "version"))
        return json_response(await run_in_threadpool(service.provenance, *args), public=True)

    async def download(request: Request) -> Response:
        args = (p(request, "ns"), p(request, "name"), p(request, "version"))
        artifact = await run_in_threadpool(service.download, *args)
        headers = {
            **CORS_HEADERS,
            "content-disposition": f'attachment; filename="{artifact.filename}"',
            INTEGRITY_HEADER: artifact.integrity,
            "cache-control": IMMUTABLE_CACHE,
        }
        return Response(artifact.data, media_type=artifact.content_type, headers=headers)

    async def namespace(request: Request) -> Response:
        data = await run_in_threadpool(service.namespace, p(request, "ns"))
        return json_response(data, public=True)

    async def keys(request: Request) -> Response:
        return json_response(await run_in_threadpool(service.keys, p(request, "ns")), public=True)

    async def add_key(request: Request) -> Response:
        body = await json_body(request)
        data = await run_in_threadpool(service.add_key, caller_of(request), p(request, "ns"), body)
        return json_response(data, status=201)

    async def revoke_key(request: Request) -> Response:
        data = await run_in_threadpool(
            service.revoke_key, caller_of(request), p(request, "ns"), p(request, "key")
        )
        return json_response(data)

    async def signatures(request: Request) -> Response:
        body = await json_body(request)
        args = (p(request, "ns"), p(request, "name"), p(request, "version"))
        data = await run_in_threadpool(service.add_signature, caller_of(request), *args, body)
        return json_response(data, status=201)

    async def publish(request: Request) -> Response:
        body = await read_limited(request, MAX_PUBLISH_BODY)
        data = await run_in_threadpool(
            service.publish, caller_of(request), body, base_url=base_url_of(request)
        )
        return json_response(data, status=201)

    async def whoami(request: Request) -> Response:
        return json_response(await run_in_threadpool(service.whoami, caller_of(request)))

    async def tokens(request: Request) -> Response:
        if request.method == "GET":
            return json_response(await run_in_threadpool(service.tokens, caller_of(request)))
        body = await json_body(request)
        data = await run_in_threadpool(service.create_token, caller_of(request), body)
        return json_response(data, status=201)

    async def revoke_token(request: Request) -> Response:
        data = await run_in_threadpool(service.revoke_token, caller_of(request), p(request, "id"))
        return json_response(data)

    async def maintainer(request: Request) -> Response:
        data = await run_in_threadpool(
            service.set_maintainer,
            caller_of(request),
            p(request, "ns"),
            p(request, "user"),
            add=request.method == "PUT",
        )
        return json_response(data)

    async def admin_users(request: Request) -> Response:
        body = await json_body(request)
        data = await run_in_threadpool(service.admin_create_user, caller_of(request), body)
        return json_response(data, status=201)

    async def admin_user_tokens(request: Request) -> Response:
        body = await json_body(request)
        data = await run_in_threadpool(
            service.admin_create_token, caller_of(request), p(request, "name"), body
        )
        return json_response(data, status=201)

    async def admin_revoke(request: Request) -> Response:
        await json_body(request)
        data = await run_in_threadpool(
            service.admin_revoke_token, caller_of(request), p(request, "id")
        )
        return json_response(data)

    async def admin_namespace(request: Request) -> Response:
        body = await json_body(request)
        data = await run_in_threadpool(
            service.admin_set_owner, caller_of(request), p(request, "ns"), body
        )
        return json_response(data)

    async def admin_hidden(request: Request) -> Response:
        body = await json_body(request)
        data = await run_in_threadpool(
            service.admin_set_hidden, caller_of(request), p(request, "ns"), p(request, "name"), body
        )
        return json_response(data)

    async def admin_migrate(request: Request) -> Response:
        await json_body(request)
        data = await run_in_threadpool(service.admin_migrate_artifacts, caller_of(request))
        return json_response(data)

    read = ["GET", "OPTIONS"]
    pkg = "/packages/{ns}/{name}"
    routes = [
        Route("/", public(index), methods=read),
        Route("/health", public(health), methods=read),
        Route("/packages/search", public(search), methods=read),
        Route(pkg, public(package), methods=read),
        Route(pkg + "/versions", public(versions), methods=read),
        Route(pkg + "/{version}", public(version), methods=read),
        Route(pkg + "/{version}/download", public(download), methods=read),
        Route(pkg + "/{version}/provenance", public(provenance), methods=read),
        Route("/namespaces/{ns}", public(namespace), methods=read),
        Route("/namespaces/{ns}/keys", public(keys), methods=read),
        Route("/namespaces/{ns}/keys", add_key, methods=["POST"]),
        Route("/namespaces/{ns}/keys/{key}", revoke_key, methods=["DELETE"]),
        Route(pkg + "/{version}/signatures", signatures, methods=["POST"]),
        Route("/publish", publish, methods=["POST"]),
        Route("/auth/whoami", whoami, methods=["GET"]),
        Route("/auth/tokens", tokens, methods=["GET", "POST"]),
        Route("/auth/tokens/{id}", revoke_token, methods=["DELETE"]),
        Route("/namespaces/{ns}/maintainers/{user}", maintainer, methods=["PUT", "DELETE"]),
        Route("/admin/users", admin_users, methods=["POST"]),
        Route("/admin/users/{name}/tokens", admin_user_tokens, methods=["POST"]),
        Route("/admin/tokens/{id}/revoke", admin_revoke, methods=["POST"]),
        Route("/admin/namespaces/{ns}", admin_namespace, methods=["PUT"]),
        Route("/admin/packages/{ns}/{name}/hidden", admin_hidden, methods=["PUT"]),
        Route("/admin/artifacts/migrate", admin_migrate, methods=["POST"]),
        Route("/mcp", _mcp_endpoint(service)),
    ]
    return Starlette(
        routes=routes,
        exception_handlers={
            SpliceError: _splice_error,
            HTTPException: _no_route,
            Exception: _unexpected,
        },
    )


def _mcp_endpoint(service: RegistryService) -> RegistryMcpEndpoint:
    """The discovery MCP server of ``/mcp``; its errors are logged like the app's."""
    from splice_build.registry.http.mcp_endpoint import RegistryMcpEndpoint
    from splice_build.registry.mcp_backend import registry_mcp_server

    server = registry_mcp_server(service.deps, log=lambda message: log.error("mcp: %s", message))
    return RegistryMcpEndpoint(service, server)


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
