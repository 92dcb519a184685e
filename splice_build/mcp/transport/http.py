"""Stateless Streamable HTTP transport (docs/compatibility.md#mcp): one Starlette app on uvicorn.

Every request passes, in order: path ``/mcp`` (404; every refusal is a JSON-RPC error
document), no ``Origin`` header (403: a browser page must never reach a local tool server),
a client not blocked for its failed tokens (429, ``auth_throttle``), one ``Authorization``
header, a bearer token (401, compared in constant time as SHA-256 digests), POST (405),
media type exactly ``application/json`` (415), an Accept that allows JSON (406; a weight of
0 refuses it), a supported ``mcp-protocol-version`` (400), a
body of at most 1 MiB (413, decided from ``content-length`` or while streaming, without
reading further) arriving within ``BODY_SECONDS`` (408), a body the hostile-input decoder
accepts (400 with -32700), a batch only where ``protocol.batch_refusal`` allows it (400
with -32600). Only
notifications → 202. A client that leaves mid-body gets nothing and logs nothing. Before
any of this, ``connections`` bounds the connections and the time to send a request head.

A message holding a ``tools/call`` request then takes a slot of the server's ``AsyncAdmission``
(docs/mcp.md#admission-control): it waits in its client's queue, or is refused with 503,
``Retry-After`` and the JSON-RPC error ``SERVER_BUSY``. The queue is that of the client's
address: the peer's, or the ``X-Forwarded-For`` client when the peer is a
``--trusted-proxy`` (the registry's rule, ``splice_build/client_address.py``); within it,
calls are taken in turn by ``mcp-session-id``. Admitted calls run on threads of their own,
so other requests are answered while as many calls run as the admission allows. A call
whose client closed the connection while it waited is dropped when its turn comes,
unanswered. An ``initialize`` answer carries a fresh session id: the server keeps no state
for it and never checks it (any instance may answer any request), so it earns no room in
the queue. With the client's address it scopes ``notifications/cancelled``
(docs/mcp.md#cancellation): a cancellation reaches only the calls its own session sent; a
call cancelled while it waits leaves the queue, and a cancelled call's POST is answered 202
with no body. A client that closes its connection while its call runs cancels it.

The loop only routes: the body is decoded, and every answer written, in the thread pool (or
on the call's own thread), so a megabyte of JSON in or out delays no other client.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
import secrets
import socket
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from splice_build.body_reads import BodyReads
from splice_build.client_address import client_key
from splice_build.connections import HEAD_SECONDS
from splice_build.errors import ErrorCode, UsageError
from splice_build.mcp.admission import (
    BUSY_MESSAGE,
    RETRY_AFTER_SECONDS,
    SERVER_BUSY,
    AsyncAdmission,
    Busy,
    busy_data,
    needs_admission,
)
from splice_build.mcp.cancellation import Ticket
from splice_build.mcp.protocol import (
    INVALID_REQUEST,
    PARSE_ERROR,
    PROTOCOL_VERSIONS,
    STOPPING_MESSAGE,
    UNAUTHORIZED,
    Log,
    ParseError,
    Server,
    Session,
    batch_refusal,
    encode,
    error_response,
    parse_message,
)
from splice_build.mcp.transport.auth_throttle import AuthThrottle, ThrottlePolicy
from splice_build.security.token_strength import MIN_TOKEN_BITS, estimated_bits
from splice_build.spec.number_text import capped_count
from splice_build.stopping import MCP_GRACE_SECONDS

if TYPE_CHECKING:
    from anyio import CapacityLimiter
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from splice_build.cancel import Cancellation
    from splice_build.client_address import IPNetwork

MAX_BODY_BYTES = 1024 * 1024
# Bodies above this are decoded one at a time (``McpHttpApp._decode``).
LARGE_BODY_BYTES = 64 * 1024
BODY_SECONDS = 30.0  # the whole body must arrive within this, once the head has
MIN_TOKEN_LENGTH = 24
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8788
PATH = "/mcp"
# A request without the header is taken as the oldest revision with this transport (6.4).
DEFAULT_HTTP_VERSION = "2025-03-26"
TOKEN_ENV = "SPLICE_MCP_TOKEN"
THROTTLED_MESSAGE = "Too many failed authentications"
SESSION_HEADER = "mcp-session-id"


def token_digest(token: str | None) -> bytes:
    """SHA-256 of the configured token; only the digest is kept. Raises UsageError if it is
    shorter than ``MIN_TOKEN_LENGTH``, if it holds a character other than visible ASCII (``!``
    to ``~``: HTTP header bytes are read as Latin-1 and the edges of a header value are
    stripped, so no client could present such a token), or if too little of it is beyond a
    pattern (``security.token_strength``: ``aaaa…``, ``abcd…``, a word repeated)."""
    # In words that do not read as an assignment of a token: the redactor would take
    # ``SPLICE_MCP_TOKEN="$(…`` for a secret and leave a hint that says nothing.
    hint = (
        f"set {TOKEN_ENV} to the output of "
        "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
    )
    if not token or len(token) < MIN_TOKEN_LENGTH:
        raise UsageError(
            f"{TOKEN_ENV} must be set to a token of at least {MIN_TOKEN_LENGTH} characters",
            hint=hint,
        )
    if not all("!" <= character <= "~" for character in token):
        raise UsageError(
            f"{TOKEN_ENV} must hold only visible ASCII characters (no spaces, no non-ASCII)",
            hint=hint,
        )
    bits = estimated_bits(token)
    if bits < MIN_TOKEN_BITS:
        raise UsageError(
            f"{TOKEN_ENV} is too easy to guess: {int(bits)} bits of it are not repeats, runs or "
            f"steps, and {MIN_TOKEN_BITS} are needed (docs/mcp.md#streamable-http)",
            details=["a token made of random bytes passes, as the hint's command makes"],
            hint=hint,
        )
    return hashlib.sha256(token.encode("ascii")).digest()


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


class _ClientGone(Exception):
    """The client closed its connection while its call waited for a slot."""


async def _cancel_on_leave(request: Request, ticket: Ticket) -> None:
    """Cancel a running call when its client closes the connection: nobody is left to read
    its answer, and its process would hold a slot to its timeout (docs/mcp.md#cancellation).
    The body has been read, so the server's next message is the disconnect; anything else
    ends the watch (never a loop that spins)."""
    if (await request.receive())["type"] == "http.disconnect":
        ticket.cancel("its client closed the connection")


def _is_json(content_type: str) -> bool:
    """Whether the media type (before any ``;`` parameter) is exactly ``application/json``."""
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


# The media ranges that match application/json, by how specific they are.
_JSON_RANGES = {"application/json": 2, "application/*": 1, "*/*": 0}
# A weight as RFC 9110 section 12.4.2 writes it: 0 to 1, at most three decimals.
_QVALUE = re.compile(r"0(\.[0-9]{0,3})?|1(\.0{0,3})?")


def _accepts_json(accept: str) -> bool:
    """Whether ``Accept`` lets the answer be JSON: the most specific range that matches
    ``application/json`` decides (RFC 9110 section 12.5.1), and a weight of 0 refuses it
    (``application/json;q=0``, ``text/html, */*;q=0``). Where ranges equally specific
    disagree, or a weight is not one, the lowest wins: refused rather than guessed."""
    decided: tuple[int, float] | None = None  # (specificity, weight) of the deciding range
    for part in accept.split(","):
        media, *parameters = part.split(";")
        specificity = _JSON_RANGES.get(media.strip().lower())
        if specificity is None:
            continue
        weight = _weight(parameters)
        if decided is None or specificity > decided[0]:
            decided = (specificity, weight)
        elif specificity == decided[0]:
            decided = (specificity, min(weight, decided[1]))
    return decided is not None and decided[1] > 0


def _weight(parameters: list[str]) -> float:
    """The ``q`` of a media range's parameters: 1 without one, 0 for one that is no weight."""
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "q":
            value = value.strip()
            return float(value) if _QVALUE.fullmatch(value) else 0.0
    return 1.0


class McpHttpApp:
    """The ``/mcp`` endpoint as an ASGI app (stateless: a new session per request)."""

    def __init__(
        self,
        server: Server,
        digest: bytes,
        admission: AsyncAdmission,
        body_seconds: float = BODY_SECONDS,
        bodies: BodyReads | None = None,
        large_decodes: CapacityLimiter | None = None,
        throttle: AuthThrottle | None = None,
    ) -> None:
        """``bodies``: the reads the server's stop ends (a registry's ``/mcp`` shares its
        app's; ``splice mcp --http`` has this app's own, ended by ``stop_reading``).
        ``large_decodes``: the one decoder of large bodies (``_decode``), shared by every
        app of a server (a registry makes one app per request). ``throttle``: the failed
        tokens counted per client (default: one of the default policy; a registry's ``/mcp``
        has authenticated its caller against its own budget before, so this one never
        counts a failure there)."""
        from anyio import CapacityLimiter

        self._server = server
        self._digest = digest
        self._admission = admission
        self._body_seconds = body_seconds
        # Threads of the admitted calls' own: on the shared pool (40 threads, what
        # run_in_threadpool takes) as many running calls would leave no thread to answer a
        # ping, an initialize or a tools/list until one of them ended. The admission already
        # bounds them, so this never makes a call wait.
        self._call_threads = CapacityLimiter(admission.limit)
        self._large_decodes = CapacityLimiter(1) if large_decodes is None else large_decodes
        self._bodies = BodyReads() if bodies is None else bodies
        self._throttle = AuthThrottle() if throttle is None else throttle

    def stop_reading(self) -> None:
        """The server stops (on the loop): a request still sending its body is refused now,
        "Server stopping" as a waiting call is (docs/mcp.md#stopping). It held the stop for
        the whole grace and the cut, and was then cancelled (500 Internal Server Error),
        uvicorn logging an "Exception in ASGI application" traceback."""
        self._bodies.end()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from starlette.requests import ClientDisconnect, Request

        request = Request(scope, receive)
        try:
            response = await self._respond(request)
        except (ClientDisconnect, _ClientGone):
            return  # the client left mid-body or in the queue: nobody to answer, nothing to log
        except _Refusal as refusal:
            response = self._json(
                refusal.status,
                error_response(None, refusal.code, refusal.message, refusal.data),
                refusal.headers,
            )
        await response(scope, receive, send)

    async def _respond(self, request: Request) -> Response:
        from anyio import to_thread
        from starlette.concurrency import run_in_threadpool
        from starlette.responses import Response

        headers = request.headers
        if "origin" in headers:
            raise _Refusal(403, INVALID_REQUEST, "Origin not allowed")
        self._authorize(self._client_key(request)[0], headers.getlist("authorization"))
        if request.method != "POST":
            raise _Refusal(405, INVALID_REQUEST, "Method not allowed", {"allow": "POST"})
        if not _is_json(headers.get("content-type", "")):
            raise _Refusal(415, INVALID_REQUEST, "Content-Type must be application/json")
        accept = headers.get("accept")
        if accept is not None and not _accepts_json(accept):
            raise _Refusal(406, INVALID_REQUEST, "Accept must allow application/json")
        version = headers.get("mcp-protocol-version", DEFAULT_HTTP_VERSION)
        if version not in PROTOCOL_VERSIONS:
            raise _Refusal(400, INVALID_REQUEST, f"Unsupported protocol version: {version}")
        body = await self._read_body(request)
        message = await self._decode(body)
        address, session_id = self._client_key(request)
        # Only a session the client names can cancel, and only its own calls: with no id,
        # every client's requests would share one scope.
        session = Session(version, scope=(address, session_id) if session_id else None)
        if isinstance(message, list) and (refusal := batch_refusal(message, session)):
            raise _Refusal(400, INVALID_REQUEST, refusal)
        if needs_admission(message):
            ticket = self._server.track(message, session)
            if len(body) > LARGE_BODY_BYTES and not self._admission.free:
                # It waits as its bytes: decoded, it is up to 24 times larger (8 calls of
                # 1 MiB of ``{}`` waiting held 282 MB), and the queue is 8 per slot.
                message = None
            try:
                answer = None  # cancelled while it waited: it never runs, nothing is answered
                if await self._admitted(address, session_id, ticket.token):
                    try:
                        if await request.is_disconnected():
                            raise _ClientGone  # it left while it waited: no call for nobody
                        if message is None:
                            message = await self._decode(body)
                        watch = asyncio.ensure_future(_cancel_on_leave(request, ticket))
                        try:
                            answer = await to_thread.run_sync(
                                self._answer, message, session, ticket, limiter=self._call_threads
                            )
                        finally:
                            watch.cancel()
                    finally:
                        self._admission.release()
                if ticket.stopped:  # the server stops: the call is to be sent again
                    if message is None:
                        message = await self._decode(body)
                    return self._stopped(message, answer)
            except Busy:
                raise _Refusal(
                    503,
                    SERVER_BUSY,
                    BUSY_MESSAGE,
                    {"retry-after": str(RETRY_AFTER_SECONDS)},
                    busy_data(),
                ) from None
            finally:
                ticket.close()
        else:
            answer = await run_in_threadpool(self._answer, message, session)
        if answer is None:
            return Response(status_code=202)
        extra = None
        if isinstance(message, dict) and message.get("method") == "initialize":
            extra = {SESSION_HEADER: secrets.token_urlsafe(16)}
        return Response(answer, status_code=200, headers=extra, media_type="application/json")

    async def _decode(self, body: bytes) -> Any:
        """The decoded body, in the thread pool (decoding 1 MiB takes up to 0.15 s: not on
        the loop). A large body waits for the one decoder of large bodies: its decoded
        objects take up to 24 times its size (a body of ``{}``s, 64 bytes an object), and
        the pool's 40 threads decoding such bodies at once held 1.7 GB for 100 of them
        (all threads take turns under the interpreter lock: more at once decode none
        faster). A small body is decoded at once, so it never waits behind large ones."""
        from anyio import to_thread

        limiter = self._large_decodes if len(body) > LARGE_BODY_BYTES else None
        try:
            return await to_thread.run_sync(_parse_body, body, limiter=limiter)
        except ParseError as exc:
            raise _Refusal(400, PARSE_ERROR, "Parse error") from exc

    def _stopped(self, message: Any, answer: bytes | None) -> Response:
        """503 with ``Retry-After`` for a call the server's stop refused or cut: its
        ``SERVER_BUSY`` "Server stopping" answer (docs/mcp.md#stopping)."""
        from starlette.responses import Response

        if answer is None:  # refused before it ran
            stopped = self._server.stopped_answer(message)
            answer = None if stopped is None else encode(stopped)
        if answer is None:
            return Response(status_code=202)
        headers = {"retry-after": str(RETRY_AFTER_SECONDS), "connection": "close"}
        return Response(answer, status_code=503, headers=headers, media_type="application/json")

    def _answer(self, message: Any, session: Session, ticket: Ticket | None = None) -> bytes | None:
        """The answer's bytes (None: notifications only, or a cancelled call), written on
        the answering thread: a tool result or a resource can be megabytes, and the loop
        serves every other client."""
        answer = self._server.answer(message, session, ticket)
        return None if answer is None else encode(answer)

    async def _admitted(self, address: str, session_id: str, token: Cancellation) -> bool:
        """Take an admission slot; False, holding none, when the call is cancelled first: a
        cancel that comes while it waits takes it out of its queue at once (the same path
        as a client that went away, ``AsyncAdmission._give_up``), and one that comes as the
        slot arrives passes the slot on."""
        if token.cancelled:
            return False
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None, "BUG: admission outside a task"
        waiting = True
        interrupted = False

        def interrupt() -> None:  # on the loop, so ``waiting`` is read after any change
            nonlocal interrupted
            if waiting:
                interrupted = True
                task.cancel()

        remove = token.on_cancel(lambda: loop.call_soon_threadsafe(interrupt))
        try:
            await self._admission.acquire(address, session_id)
        except asyncio.CancelledError:
            if interrupted and task.uncancel() == 0:
                return False  # our own interruption, and nobody else's
            raise
        finally:
            waiting = False
            remove()
        if interrupted:
            # Python 3.11's wait_for returns the slot that arrived in the turn the task was
            # interrupted and drops the interruption: take back the request to cancel.
            task.uncancel()
        if token.cancelled:  # cancelled as the slot arrived: it never runs
            self._admission.release()
            return False
        return True

    @staticmethod
    def _client_key(request: Request) -> tuple[str, str]:
        """Whose queue a call waits in: its client's key (an address, an IPv6 client's /64
        network: client_address.client_key), then its session id (any string the client
        sends: it only orders the calls of one address)."""
        address = client_key(request.client.host) if request.client else ""
        return address, request.headers.get(SESSION_HEADER, "")[:128]

    def _authorize(self, client: str, authorizations: list[str]) -> None:
        """Refuse (401) unless the request carries exactly one ``Authorization`` header, a
        bearer token whose digest is the server's. Two headers are refused whatever they
        hold: the header is no list, and a proxy in front that read the other one than this
        server did would let one request pass as two different callers. A client blocked
        for its failures is refused (429) before anything is compared, and each failure of
        a request that sent the header is counted (``auth_throttle``)."""
        wait = self._throttle.retry_after(client)
        if wait is not None:
            raise _Refusal(
                429,
                UNAUTHORIZED,
                THROTTLED_MESSAGE,
                {"retry-after": str(wait)},
                {"retryAfter": wait, "io.spliceloom/error": {"code": ErrorCode.RATE_LIMITED.value}},
            )
        authorization = authorizations[0] if len(authorizations) == 1 else ""
        scheme, _, credentials = authorization.partition(" ")
        presented = hashlib.sha256(credentials.strip().encode("utf-8")).digest()
        # Compare digests even for a wrong scheme, so timing says nothing about either part.
        matches = hmac.compare_digest(presented, self._digest)
        if scheme.lower() != "bearer" or not matches:
            if authorizations:  # a token was presented: a guess, counted
                self._throttle.failed(client)
            raise _Refusal(
                401, UNAUTHORIZED, "Unauthorized", {"www-authenticate": 'Bearer realm="splice-mcp"'}
            )

    async def _read_body(self, request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None:
            # ASCII digits only (str.isdigit() also accepts "²", which int() refuses), read
            # without int() of the whole text: int() refuses 4,300 digits or more, leading
            # zeros included, and HTTP allows any number of them.
            length = capped_count(declared, MAX_BODY_BYTES)
            if length is None:
                raise _Refusal(400, INVALID_REQUEST, "Invalid Content-Length")
            if length > MAX_BODY_BYTES:
                raise _Refusal(413, INVALID_REQUEST, "Message too large")
        body = bytearray()
        try:
            async with self._bodies.within(self._body_seconds):  # ``stop_reading`` ends it
                async for chunk in request.stream():
                    body += chunk
                    if len(body) > MAX_BODY_BYTES:
                        raise _Refusal(413, INVALID_REQUEST, "Message too large")
        except TimeoutError:
            if self._bodies.ended:
                headers = {"retry-after": str(RETRY_AFTER_SECONDS), "connection": "close"}
                raise _Refusal(503, SERVER_BUSY, STOPPING_MESSAGE, headers, busy_data()) from None
            raise _Refusal(
                408, INVALID_REQUEST, "Request body too slow", {"connection": "close"}
            ) from None
        return bytes(body)

    @staticmethod
    def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
        """A refusal's error document (a few hundred bytes: written on the loop)."""
        from starlette.responses import Response

        return Response(
            encode(body), status_code=status, headers=headers, media_type="application/json"
        )


def _parse_body(body: bytes) -> Any:
    return parse_message(body, max_bytes=MAX_BODY_BYTES)


def build_app(
    server: Server,
    digest: bytes,
    admission: AsyncAdmission,
    body_seconds: float = BODY_SECONDS,
    throttle: AuthThrottle | None = None,
) -> Starlette:
    """Starlette routes ``/mcp`` (every method) to the endpoint; any other path is a 404."""
    return _routed(McpHttpApp(server, digest, admission, body_seconds, throttle=throttle))


def _routed(endpoint: McpHttpApp) -> Starlette:
    """Starlette routing ``/mcp`` to ``endpoint``, and any other path to a 404."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    app = Starlette(routes=[Route(PATH, endpoint)], exception_handlers={404: _not_found})
    app.router.redirect_slashes = False
    return app


async def _not_found(request: Request, exc: Exception) -> Response:
    """Any path but ``/mcp``, whatever the method: 404 with a JSON-RPC error document, as
    every other refusal (Starlette's own is the plain text ``Not Found``)."""
    message = f"Not found: the MCP endpoint is {PATH}"
    return McpHttpApp._json(404, error_response(None, INVALID_REQUEST, message))


def serve_http(
    server: Server,
    *,
    digest: bytes,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    max_calls: int,
    trusted_proxies: Sequence[IPNetwork] = (),
    on_ready: Callable[[str], None],
    log: Log | None = None,
    head_seconds: float = HEAD_SECONDS,
    body_seconds: float = BODY_SECONDS,
    grace: float = MCP_GRACE_SECONDS,
    auth_throttle: ThrottlePolicy | None = None,
) -> None:
    """Serve until SIGTERM (then return) or SIGINT (raised again once stopped), running at
    most ``max_calls`` tool calls at once; ``on_ready`` gets the URL once the socket
    listens. ``log`` (default: uvicorn's error log) gets the server's own diagnostics.
    ``head_seconds`` and ``body_seconds``: the deadlines of a request's head and body
    (`splice mcp` keeps the defaults; a test server shortens them). Stopping
    (docs/mcp.md#stopping): no new connection, waiting calls refused at once, running ones
    cut after ``grace`` seconds. ``auth_throttle``: how failed tokens are counted per client
    (default ``ThrottlePolicy()``; a test server counts fewer)."""
    import logging

    from splice_build.client_address import TrustedProxies
    from splice_build.connections import serve_limited
    from splice_build.listen import BACKLOG, listening_socket
    from splice_build.stopping import Stop

    sock = listening_socket(host, port)  # TCP_NODELAY on every accepted connection
    bound_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if sock.family == socket.AF_INET6 else host
    endpoint = McpHttpApp(
        server,
        digest,
        AsyncAdmission(max_calls),
        body_seconds,
        throttle=AuthThrottle(auth_throttle),
    )

    def begin_stop() -> None:
        endpoint.stop_reading()
        server.begin_stop(grace)

    config = {
        "app": TrustedProxies(_routed(endpoint), trusted=trusted_proxies),
        "backlog": BACKLOG,
        "log_level": "warning",
        "access_log": False,
        "lifespan": "off",
        "server_header": False,
        "proxy_headers": False,  # uvicorn's own trusts 127.0.0.1; TrustedProxies alone decides
    }
    serve_limited(  # docs/mcp.md#connections
        config,
        sock,
        log or logging.getLogger("uvicorn.error").warning,
        Stop(grace=grace, begin=begin_stop, cut=server.cut),
        on_ready=lambda: on_ready(f"http://{shown_host}:{bound_port}{PATH}"),
        head_seconds=head_seconds,
    )
