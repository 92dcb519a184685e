"""Authenticated routes of publishers: publish, keys, signatures, tokens and maintainers."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from splice_build.registry.api import MAX_PUBLISH_BODY
from splice_build.registry.http.body import read_limited
from splice_build.registry.http.routing import (
    caller_of,
    json_body,
    path_param,
    threaded_json,
)
from splice_build.registry.service.registry_service import RegistryService


def routes(service: RegistryService) -> list[Route]:
    """The routes of this group, handlers bound to ``service``."""

    async def add_key(request: Request) -> Response:
        body = await json_body(request)
        return await threaded_json(
            service.add_key, caller_of(request), path_param(request, "ns"), body, status=201
        )

    async def revoke_key(request: Request) -> Response:
        return await threaded_json(
            service.revoke_key,
            caller_of(request),
            path_param(request, "ns"),
            path_param(request, "key"),
        )

    async def signatures(request: Request) -> Response:
        body = await json_body(request)
        args = (
            path_param(request, "ns"),
            path_param(request, "name"),
            path_param(request, "version"),
        )
        return await threaded_json(
            service.add_signature, caller_of(request), *args, body, status=201
        )

    async def publish(request: Request) -> Response:
        # Who is asking first: an unauthenticated client gets its 401 (or 429) before the
        # server reads, and holds, up to MAX_PUBLISH_BODY bytes of it.
        principal = await run_in_threadpool(service.authenticate, caller_of(request))
        body = await read_limited(request, MAX_PUBLISH_BODY)
        return await threaded_json(service.publish_as, principal, body, status=201)

    async def whoami(request: Request) -> Response:
        return await threaded_json(service.whoami, caller_of(request))

    async def tokens(request: Request) -> Response:
        return await threaded_json(service.tokens, caller_of(request))

    async def create_token(request: Request) -> Response:
        body = await json_body(request)
        return await threaded_json(service.create_token, caller_of(request), body, status=201)

    async def revoke_token(request: Request) -> Response:
        return await threaded_json(
            service.revoke_token, caller_of(request), path_param(request, "id")
        )

    async def maintainer(request: Request) -> Response:
        return await threaded_json(
            service.set_maintainer,
            caller_of(request),
            path_param(request, "ns"),
            path_param(request, "user"),
            add=request.method == "PUT",
        )

    pkg = "/packages/{ns}/{name}"
    return [
        Route("/namespaces/{ns}/keys", add_key, methods=["POST"]),
        Route("/namespaces/{ns}/keys/{key}", revoke_key, methods=["DELETE"]),
        Route(pkg + "/{version}/signatures", signatures, methods=["POST"]),
        Route("/publish", publish, methods=["POST"]),
        Route("/auth/whoami", whoami, methods=["GET"]),
        # One route per method: Starlette answers HEAD with a GET route's handler, and one
        # handler for both created a token on HEAD.
        Route("/auth/tokens", tokens, methods=["GET"]),
        Route("/auth/tokens", create_token, methods=["POST"]),
        Route("/auth/tokens/{id}", revoke_token, methods=["DELETE"]),
        Route("/namespaces/{ns}/maintainers/{user}", maintainer, methods=["PUT", "DELETE"]),
    ]
