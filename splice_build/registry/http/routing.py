"""What every registry route handler shares: JSON answers, the caller, the base URL, bounded JSON
bodies, path parameters, and the wrapper of anonymous reads (CORS and preflight)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from splice_build.registry.api import MAX_JSON_BODY
from splice_build.registry.http.body import read_limited
from splice_build.registry.http.errors import json_bytes
from splice_build.registry.service import fields
from splice_build.registry.service.auth import Caller

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


async def json_body(request: Request) -> dict[str, Any]:
    return fields.json_object(await read_limited(request, MAX_JSON_BODY))


def public_read(handler: Handler) -> Handler:
    """Anonymous read: CORS on the response (errors too) and an OPTIONS preflight."""

    async def wrapped(request: Request) -> Response:
        request.state.public = True
        if request.method == "OPTIONS":
            return Response(status_code=204, headers=PREFLIGHT_HEADERS)
        return await handler(request)

    return wrapped


def path_param(request: Request, name: str) -> str:
    value: str = request.path_params[name]
    return value
