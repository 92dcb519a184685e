"""What every registry route handler shares: JSON answers, the caller, the base URL, bounded JSON
bodies, path parameters, and the wrapper of anonymous reads (CORS and preflight).

A route that asks the store answers through ``threaded_json``: the store's work and the
writing of its answer both run in the thread pool, never on the event loop, where every other
client waits for them (a 2 MiB manifest's version answer takes about 0.1 s to write).
``json_response`` on the loop is for answers of bounded size only (index, health, errors).

Every JSON body goes through ``json_body``: at most 64 KiB, decoded by the hostile-input
decoder of ``spec.untrusted_json`` (invalid UTF-8, lone surrogates, deep nesting, huge
numbers → 400 ``BAD_REQUEST``), and an object (docs/registry.md#limits).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from splice_build.registry.api import MAX_JSON_BODY
from splice_build.registry.http.body import read_limited
from splice_build.registry.http.errors import json_bytes
from splice_build.registry.service.auth import Caller
from splice_build.registry.service.fields import bad_request
from splice_build.spec.untrusted_json import UntrustedJsonError, decode

CORS_HEADERS = {
    "access-control-allow-origin": "*",
    "access-control-expose-headers": (
        "x-splice-integrity, content-length, content-disposition, retry-after, etag"
    ),
    "vary": "origin",
}
JSON_TYPE = "application/json; charset=utf-8"
# A page holding a kept answer's etag asks again with If-None-Match, which is no header a
# browser sends across origins without a preflight that allows it (http/answer_cache.py).
PREFLIGHT_HEADERS = {
    **CORS_HEADERS,
    "access-control-allow-methods": "GET, OPTIONS",
    "access-control-allow-headers": "if-none-match",
}
Handler = Callable[[Request], Awaitable[Response]]


def json_response(data: Any, *, status: int = 200, public: bool = False) -> Response:
    headers = {"cache-control": "no-store", **(CORS_HEADERS if public else {})}
    return Response(
        json_bytes(data),
        status_code=status,
        media_type=JSON_TYPE,
        headers=headers,
    )


async def threaded_json(
    work: Callable[..., Any],
    /,
    *args: Any,
    status: int = 200,
    public: bool = False,
    **kwargs: Any,
) -> Response:
    """``json_response(work(*args, **kwargs))``, all of it in the thread pool."""

    def answer() -> Response:
        return json_response(work(*args, **kwargs), status=status, public=public)

    return await run_in_threadpool(answer)


def caller_of(request: Request) -> Caller:
    client = request.client.host if request.client else "local"
    return Caller(authorization=request.headers.get("authorization"), client=client)


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object (an empty body is ``{}``); 413 or 400 BAD_REQUEST otherwise."""
    body = await read_limited(request, MAX_JSON_BODY)
    if not body.strip():
        return {}
    try:
        value = decode(body, max_bytes=MAX_JSON_BODY)
    except UntrustedJsonError as exc:
        raise bad_request(f"Request body is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise bad_request("Request body must be a JSON object")
    return value


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
