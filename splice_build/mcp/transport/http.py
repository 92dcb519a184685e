"""Stateless Streamable HTTP transport (docs/compatibility.md#mcp): one Starlette app on uvicorn.

Every request passes, in order: path ``/mcp`` (404), no ``Origin`` header (403: a browser
page must never reach a local tool server), bearer token (401, compared in constant time as
SHA-256 digests), POST (405), JSON content type (415), an Accept that allows JSON (406), a
supported ``mcp-protocol-version`` (400), a body of at most 1 MiB (413, decided from
``content-length`` or while streaming, without reading further). Only notifications → 202.
"""

from __future__ import annotations

import hashlib
import hmac
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from splice_build.errors import UsageError
from splice_build.mcp.protocol import (
    INVALID_REQUEST,
    PARSE_ERROR,
    PROTOCOL_VERSIONS,
    UNAUTHORIZED,
    ParseError,
    Server,
    Session,
    encode,
    error_response,
    parse_message,
)

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

MAX_BODY_BYTES = 1024 * 1024
MIN_TOKEN_LENGTH = 24
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8788
PATH = "/mcp"
# A request without the header is taken as the oldest revision with this transport (6.4).
DEFAULT_HTTP_VERSION = "2025-03-26"
TOKEN_ENV = "SPLICE_MCP_TOKEN"


def token_digest(token: str | None) -> bytes:
    """SHA-256 of the configured token; only the digest is kept. Raises UsageError if weak."""
    if not token or len(token) < MIN_TOKEN_LENGTH:
        raise UsageError(
            f"{TOKEN_ENV} must be set to a token of at least {MIN_TOKEN_LENGTH} characters",
            hint=f'export {TOKEN_ENV}="$(python -c "import secrets; print(secrets.token_urlsafe(32))")"',
        )
    return hashlib.sha256(token.encode("utf-8")).digest()


class _Refusal(Exception):
    def __init__(self, status: int, code: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


def _accepts_json(accept: str) -> bool:
    for part in accept.split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media in ("application/json", "application/*", "*/*"):
            return True
    return False


class McpHttpApp:
    """The ``/mcp`` endpoint as an ASGI app (stateless: a new session per request)."""

    def __init__(self, server: Server, digest: bytes) -> None:
        self._server = server
        self._digest = digest

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from starlette.requests import Request

        request = Request(scope, receive)
        try:
            response = await self._respond(request)
        except _Refusal as refusal:
            response = self._json(
                refusal.status,
                error_response(None, refusal.code, refusal.message),
                refusal.headers,
            )
        await response(scope, receive, send)

    async def _respond(self, request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool
        from starlette.responses import Response

        headers = request.headers
        if "origin" in headers:
            raise _Refusal(403, INVALID_REQUEST, "Origin not allowed")
        self._authorize(headers.get("authorization", ""))
        if request.method != "POST":
            raise _Refusal(405, INVALID_REQUEST, "Method not allowed", {"allow": "POST"})
        if "application/json" not in headers.get("content-type", "").lower():
            raise _Refusal(415, INVALID_REQUEST, "Content-Type must be application/json")
        accept = headers.get("accept")
        if accept is not None and not _accepts_json(accept):
            raise _Refusal(406, INVALID_REQUEST, "Accept must allow application/json")
        version = headers.get("mcp-protocol-version", DEFAULT_HTTP_VERSION)
        if version not in PROTOCOL_VERSIONS:
            raise _Refusal(400, INVALID_REQUEST, f"Unsupported protocol version: {version}")
        body = await self._read_body(request)
        try:
            message = parse_message(body)
        except ParseError as exc:
            raise _Refusal(400, PARSE_ERROR, "Parse error") from exc
        if isinstance(message, list):
            if not message:
                raise _Refusal(400, INVALID_REQUEST, "Empty batch")
            answers = await run_in_threadpool(self._handle_batch, message, version)
            if not answers:
                return Response(status_code=202)
            return self._json(200, answers)
        answer = await run_in_threadpool(self._server.handle, message, Session(version))
        if answer is None:
            return Response(status_code=202)
        return self._json(200, answer)

    def _authorize(self, authorization: str) -> None:
        scheme, _, credentials = authorization.partition(" ")
        presented = hashlib.sha256(credentials.strip().encode("utf-8")).digest()
        # Compare digests even for a wrong scheme, so timing says nothing about either part.
        matches = hmac.compare_digest(presented, self._digest)
        if scheme.lower() != "bearer" or not matches:
            raise _Refusal(
                401, UNAUTHORIZED, "Unauthorized", {"www-authenticate": 'Bearer realm="splice-mcp"'}
            )

    @staticmethod
    async def _read_body(request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None:
            # ASCII digits only: str.isdigit() also accepts "²", which int() refuses, and a
            # value longer than the limit's digits is over it (int() refuses 4,300+ digits).
            if not (declared.isascii() and declared.isdigit()):
                raise _Refusal(400, INVALID_REQUEST, "Invalid Content-Length")
            if (
                len(declared.lstrip("0")) > len(str(MAX_BODY_BYTES))
                or int(declared) > MAX_BODY_BYTES
            ):
                raise _Refusal(413, INVALID_REQUEST, "Message too large")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                raise _Refusal(413, INVALID_REQUEST, "Message too large")
        return bytes(body)

    def _handle_batch(self, messages: list[Any], version: str) -> list[dict[str, Any]]:
        session = Session(version)
        answers = (self._server.handle(message, session) for message in messages)
        return [answer for answer in answers if answer is not None]

    @staticmethod
    def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
        from starlette.responses import Response

        return Response(
            encode(body), status_code=status, headers=headers, media_type="application/json"
        )


def build_app(server: Server, digest: bytes) -> Starlette:
    """Starlette routes ``/mcp`` (every method) to the endpoint; any other path is a 404."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    app = Starlette(routes=[Route(PATH, McpHttpApp(server, digest))])
    app.router.redirect_slashes = False
    return app


def serve_http(
    server: Server,
    *,
    digest: bytes,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    on_ready: Callable[[str], None],
) -> None:
    """Serve until SIGINT/SIGTERM; ``on_ready`` gets the URL once the socket listens."""
    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    bound_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if family == socket.AF_INET6 else host
    config = uvicorn.Config(
        build_app(server, digest),
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
    )
    on_ready(f"http://{shown_host}:{bound_port}{PATH}")
    uvicorn.Server(config).run(sockets=[sock])
