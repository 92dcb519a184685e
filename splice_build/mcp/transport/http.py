"""Stateless Streamable HTTP transport (docs/compatibility.md#mcp): one Starlette app on uvicorn.

Every request passes, in order: path ``/mcp`` (404), no ``Origin`` header (403: a browser
page must never reach a local tool server), bearer token (401, compared in constant time as
SHA-256 digests), POST (405), JSON content type (415), an Accept that allows JSON (406), a
supported ``mcp-protocol-version`` (400), a body of at most 1 MiB (413, decided from
``content-length`` or while streaming, without reading further), a body the hostile-input
decoder accepts (400 with -32700), a batch only where ``protocol.batch_refusal`` allows it
(400 with -32600). Only notifications → 202.

A message holding a ``tools/call`` then takes a slot of the server's ``AsyncAdmission``
(docs/mcp.md#admission-control): it waits in its client's queue, or is refused with 503,
``Retry-After`` and the JSON-RPC error ``SERVER_BUSY``. An ``initialize`` answer carries a
fresh ``mcp-session-id``: the server keeps no state for it, it only names the client's
queue (any instance may answer any request). A request without one is queued under its
peer address, which is the ``X-Forwarded-For`` client only when the peer is a
``--trusted-proxy`` (the registry's rule, ``splice_build/client_address.py``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import socket
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from splice_build.errors import UsageError
from splice_build.mcp.admission import (
    BUSY_MESSAGE,
    RETRY_AFTER_SECONDS,
    SERVER_BUSY,
    AsyncAdmission,
    Busy,
    busy_data,
    needs_admission,
)
from splice_build.mcp.protocol import (
    INVALID_REQUEST,
    PARSE_ERROR,
    PROTOCOL_VERSIONS,
    UNAUTHORIZED,
    ParseError,
    Server,
    Session,
    batch_refusal,
    encode,
    error_response,
    parse_message,
)

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from splice_build.client_address import IPNetwork

MAX_BODY_BYTES = 1024 * 1024
MIN_TOKEN_LENGTH = 24
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8788
PATH = "/mcp"
# A request without the header is taken as the oldest revision with this transport (6.4).
DEFAULT_HTTP_VERSION = "2025-03-26"
TOKEN_ENV = "SPLICE_MCP_TOKEN"
SESSION_HEADER = "mcp-session-id"


def token_digest(token: str | None) -> bytes:
    """SHA-256 of the configured token; only the digest is kept. Raises UsageError if weak."""
    if not token or len(token) < MIN_TOKEN_LENGTH:
        raise UsageError(
            f"{TOKEN_ENV} must be set to a token of at least {MIN_TOKEN_LENGTH} characters",
            hint=f'export {TOKEN_ENV}="$(python -c "import secrets; print(secrets.token_urlsafe(32))")"',
        )
    return hashlib.sha256(token.encode("utf-8")).digest()


class _Refusal(Exception):
    def __init__(
        self,
        status: int,
        code: int,
        message: str,
        headers: dict[str, str] | None = None,
        data: Any = None,
    ):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}
        self.data = data


def _accepts_json(accept: str) -> bool:
    for part in accept.split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media in ("application/json", "application/*", "*/*"):
            return True
    return False


class McpHttpApp:
    """The ``/mcp`` endpoint as an ASGI app (stateless: a new session per request)."""

    def __init__(self, server: Server, digest: bytes, admission: AsyncAdmission) -> None:
        self._server = server
        self._digest = digest
        self._admission = admission

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from starlette.requests import Request

        request = Request(scope, receive)
        try:
            response = await self._respond(request)
        except _Refusal as refusal:
            response = self._json(
                refusal.status,
                error_response(None, refusal.code, refusal.message, refusal.data),
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
            message = parse_message(body, max_bytes=MAX_BODY_BYTES)
        except ParseError as exc:
            raise _Refusal(400, PARSE_ERROR, "Parse error") from exc
        session = Session(version)
        if isinstance(message, list) and (refusal := batch_refusal(message, session)):
            raise _Refusal(400, INVALID_REQUEST, refusal)
        if needs_admission(message):
            try:
                async with self._admission.slot(self._client_key(request)):
                    answer = await run_in_threadpool(self._server.answer, message, session)
            except Busy:
                raise _Refusal(
                    503,
                    SERVER_BUSY,
                    BUSY_MESSAGE,
                    {"retry-after": str(RETRY_AFTER_SECONDS)},
                    busy_data(),
                ) from None
        else:
            answer = await run_in_threadpool(self._server.answer, message, session)
        if answer is None:
            return Response(status_code=202)
        extra = None
        if isinstance(message, dict) and message.get("method") == "initialize":
            extra = {SESSION_HEADER: secrets.token_urlsafe(16)}
        return self._json(200, answer, extra)

    @staticmethod
    def _client_key(request: Request) -> str:
        """Whose queue a call waits in: its session id, else its peer address."""
        session_id = request.headers.get(SESSION_HEADER)
        if session_id:
            return f"session:{session_id[:128]}"
        return f"peer:{request.client.host if request.client else ''}"

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

    @staticmethod
    def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
        from starlette.responses import Response

        return Response(
            encode(body), status_code=status, headers=headers, media_type="application/json"
        )


def build_app(server: Server, digest: bytes, admission: AsyncAdmission) -> Starlette:
    """Starlette routes ``/mcp`` (every method) to the endpoint; any other path is a 404."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    app = Starlette(routes=[Route(PATH, McpHttpApp(server, digest, admission))])
    app.router.redirect_slashes = False
    return app


def serve_http(
    server: Server,
    *,
    digest: bytes,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    max_calls: int,
    trusted_proxies: Sequence[IPNetwork] = (),
    on_ready: Callable[[str], None],
) -> None:
    """Serve until SIGINT/SIGTERM, running at most ``max_calls`` tool calls at once;
    ``on_ready`` gets the URL once the socket listens."""
    import uvicorn

    from splice_build.client_address import TrustedProxies
    from splice_build.listen import listening_socket

    sock = listening_socket(host, port)  # TCP_NODELAY on every accepted connection
    bound_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if sock.family == socket.AF_INET6 else host
    config = uvicorn.Config(
        TrustedProxies(
            build_app(server, digest, AsyncAdmission(max_calls)), trusted=trusted_proxies
        ),
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
        proxy_headers=False,  # uvicorn's own trusts 127.0.0.1; TrustedProxies alone decides
    )
    on_ready(f"http://{shown_host}:{bound_port}{PATH}")
    uvicorn.Server(config).run(sockets=[sock])
