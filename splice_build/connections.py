"""What a client can hold of either HTTP server before it is known (``splice mcp --http``,
``splice registry serve``; docs/mcp.md#connections).

A connection costs an open file from ``accept`` on, and a token (or a rate limit's client
address) is only read once the request head is complete; so without limits a client that
opens connections and never finishes a head runs the process out of files, and nobody is
served.

- at start-up the soft ``RLIMIT_NOFILE`` goes up to the hard one (splice_build/open_files.py).
- ``connection_protocol``: at most ``max_connections`` connections are open at once
  (``MAX_CONNECTIONS``, or half the open-file limit if that is lower: the rest is for
  sandbox processes, the project, the registry's store and the server itself). A connection that would pass it
  displaces the connection that has waited longest for its request (idle, a head not yet
  complete, a body still arriving, or closed with an answer its client has not read) or for
  its client to read (an answer streamed in pieces, registry/http/download.py, whose write
  buffer is full), and
  drops what it had buffered; when every connection has a request whose bytes are all in,
  the new one is closed at once. A request head must be complete within ``HEAD_SECONDS`` of the connection opening
  or of the previous answer on it, else the connection is closed (uvicorn times out only an
  idle kept-alive connection, and only until its first byte arrives).
- ``ABORT_EXTENSION``: every request's ASGI scope carries, under ``extensions``, a callable
  that aborts its connection at once, dropping what its write buffer holds (an answer the
  client is too slow to read: registry/http/download.py's write deadline).
- ``KEEP_ALIVE_SECONDS``: a kept-alive connection idle that long is closed by the server. A
  proxy that keeps connections to it must drop them sooner (docs/deploy/nginx.conf's
  ``keepalive_timeout``): a request it writes to a connection at the moment the server closes
  it fails, and a POST is then answered 502, not retried.
- ``one_framing``: a request that declares both ``Content-Length`` and ``Transfer-Encoding``
  is refused with 400 and its connection closed, as h11 refuses every other framing it
  cannot trust. h11 reads such a body as chunked and keeps the connection, so behind a proxy
  that goes by the length the bytes after the chunks are taken as the next request (request
  smuggling; RFC 9112 section 6.3 says to close the connection after such a request).
- ``MAX_CHUNKS``: a chunked request body of more chunks is refused with 400 (h11's refusal)
  and its connection closed. h11 makes an event of every chunk, and uvicorn handles every
  event a read brings before the loop serves anyone else: one client sending a body of
  1-byte chunks, no token needed (the body of an answered request is still parsed to its
  end), made each read of 256 KiB take 0.3 s of the loop, and every other client waited
  seconds for an answer. 4,096 chunks are 30 ms of it; a client that streams a body sends
  chunks of kilobytes (a 5 MiB publish in 4 KiB chunks is 1,280).
- ``CloseWhenStopping``: once the server's stop has begun, every answer says
  ``Connection: close``, as the server closes its connection after it.
- ``CloseUnreadBodies``: an answer given before its request's body was read to its end (a
  401, 403, 413, … refuses it unread) says ``Connection: close``, and the connection is
  closed after it. Kept open, the server read and parsed the rest of the body (h11 must,
  to find the next request) for up to ``HEAD_SECONDS``, whatever ``Content-Length`` said:
  a client with no token sent 1.4 GB in those 10 s on one connection, and 16 such
  connections took a ping of another client from 2 ms to 300 ms (median).
- ``RequestWarningLog``: uvicorn logs a warning for every request h11 refuses and for every
  ``Upgrade`` header (two lines, one of them telling to install a WebSocket library), before
  any token is read: one client sent 1,700 such requests a second on one connection, a
  line or two each. Each of these becomes one line per ``ACCEPT_LOG_SECONDS`` with how many
  were condensed.
- ``AcceptErrorLog``: if ``accept`` fails all the same (files used by something else),
  asyncio reports it with a traceback once per pending connection, every second; this
  condenses it to one line per ``ACCEPT_LOG_SECONDS``. asyncio retries such an accept a
  second later, once per failure, even when the server stopped in between: each retry then
  fails on the closed listening socket, a traceback apiece; those are dropped.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice_build.stopping import Stop

MAX_CONNECTIONS = 1024
HEAD_SECONDS = 10.0
MAX_CHUNKS = 4096  # of one request body sent chunked
KEEP_ALIVE_SECONDS = 5
ACCEPT_LOG_SECONDS = 10.0
ABORT_EXTENSION = "splice.abort"
# The message asyncio's selector event loop reports when accept() fails for lack of files
# or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM).
ACCEPT_ERROR = "socket.accept() out of system resource"
# The callback that retries such an accept, as its failure is reported.
ACCEPT_RETRY = "_start_serving"


def max_connections(open_files: int) -> int:
    """Connections open at once under an open-file limit of ``open_files``."""
    if open_files == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(1, min(MAX_CONNECTIONS, open_files // 2))


def connection_protocol(limit: int, head_seconds: float = HEAD_SECONDS) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol class with the connection cap and the head deadline; give it
    to ``uvicorn.Config(http=…)``. Each call makes a class with state of its own (one server)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    # Connections waiting for their request, the longest waiting first, with the deadline of
    # their head (None once the head is in and its body is arriving).
    waiting: OrderedDict[Any, asyncio.TimerHandle | None] = OrderedDict()

    class ChunkLimitedConnection(h11.Connection):
        """h11's parser, refusing a request body of more than ``MAX_CHUNKS`` chunks."""

        chunks = 0  # of the request being read

        def next_event(self) -> Any:
            event = super().next_event()
            if type(event) is h11.Request:
                self.chunks = 0
            elif type(event) is h11.Data and event.chunk_start:
                self.chunks += 1
                if self.chunks > MAX_CHUNKS:
                    raise h11.RemoteProtocolError(f"more than {MAX_CHUNKS} chunks")
            return event

    class LimitedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # uvicorn's own, counting chunks (serve_limited sets no h11 limit of uvicorn's)
            self.conn = ChunkLimitedConnection(h11.SERVER)

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > limit:
                oldest = next(iter(waiting), None)
                if oldest is None:
                    transport.close()  # every connection is busy with a request: refuse
                    return
                oldest._displace()
            self._wait_for_head()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._track()

        def handle_events(self) -> None:
            """A request's scope is made here, before its app task first runs."""
            super().handle_events()
            if self.cycle is not None:
                self.cycle.scope.setdefault("extensions", {})[ABORT_EXTENSION] = self._displace

        def send_400_response(self, msg: str) -> None:
            """h11 refused what the client sent: uvicorn answers 400 and closes; the app of
            the request, if one runs, answers nobody now (as once the connection is lost).
            It still could: the 400 came first when the refused bytes came with the head (a
            chunked body with a bad chunk size, or more than ``MAX_CHUNKS``), and the app's
            answer then raised h11's LocalProtocolError: "Exception in ASGI application"
            and a traceback, for every such request of any client. Once an answer has begun
            (a request answered before its body was read, that body's framing broken after
            a 401) no 400 can follow it: uvicorn's try raised the same error out of
            ``data_received``, and asyncio logged "Fatal error: protocol.data_received()
            call failed." with a traceback; the connection is only closed."""
            if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                super().send_400_response(msg)
            else:
                self.transport.close()
            if self.cycle is not None and not self.cycle.response_complete:
                self.cycle.disconnected = True
                self.cycle.message_event.set()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._track()

        def pause_writing(self) -> None:
            super().pause_writing()
            self._track()

        def resume_writing(self) -> None:
            super().resume_writing()
            self._track()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            super().connection_lost(exc)

        def _track(self) -> None:
            """Waiting for its request while the head or the body is still arriving (a
            body is sent before the server knows who sent it: the registry reads JSON
            bodies before it checks the token); a request all of whose bytes are here is in
            progress and never displaced, unless its answer waits for the client to read (the
            write buffer is full: ``pause_writing``), as one closed with an answer unread
            does (``_give_up``). The deadline of a head is never pushed back by the
            bytes of a head that trickles in; a body has its server's own deadline
            (registry/http/body.py, mcp/transport/http.py ``BODY_SECONDS``), an answer
            streamed in pieces too (registry/http/download.py)."""
            if self.transport.is_closing():
                self._stop_waiting()
            elif self.cycle is None or self.cycle.response_complete:
                self._wait_for_head()
            elif self.conn.their_state is h11.SEND_BODY or self.flow.write_paused:
                self._wait_for_body()
            else:
                self._stop_waiting()

        def _wait_for_head(self) -> None:
            if waiting.get(self) is None:  # not waiting yet, or its last wait was for a body
                waiting.pop(self, None)
                waiting[self] = self.loop.call_later(head_seconds, self._give_up)

        def _wait_for_body(self) -> None:
            """No head deadline any more; the connection keeps its place in the queue."""
            deadline = waiting.get(self)
            if deadline is not None:
                deadline.cancel()
            waiting[self] = None

        def _stop_waiting(self) -> None:
            deadline = waiting.pop(self, None)
            if deadline is not None:
                deadline.cancel()

        def _give_up(self) -> None:
            """The head deadline: close. A connection whose last answer is still in the
            write buffer (a client that reads slowly, or not at all) is closed once that is
            written, and stays displaceable until then: ``close`` keeps its file and the
            buffer for as long as the client does not read."""
            if self.transport.get_write_buffer_size():
                deadline = waiting.get(self)
                if deadline is not None:
                    deadline.cancel()
                waiting[self] = None
            else:
                self._stop_waiting()
            self.transport.close()

        def _displace(self) -> None:
            """Make room for a new connection now: the write buffer is dropped."""
            self._stop_waiting()
            self.transport.abort()

    return LimitedH11Protocol


# What uvicorn answers to a request h11 refuses (send_400_response), for the one it lets by.
_FRAMING_REFUSAL = b"Invalid HTTP request received."


def one_framing(app: Any) -> Any:
    """The ASGI ``app`` behind the ``Content-Length`` + ``Transfer-Encoding`` refusal."""

    async def framed(scope: dict[str, Any], receive: Any, send: Any) -> None:
        names = {name.lower() for name, _value in scope.get("headers", ())}
        if scope["type"] != "http" or not {b"content-length", b"transfer-encoding"} <= names:
            await app(scope, receive, send)
            return
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(_FRAMING_REFUSAL)).encode()),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": _FRAMING_REFUSAL})

    return framed


_CLOSE = (b"connection", b"close")


def _closing(message: dict[str, Any]) -> dict[str, Any]:
    """An ``http.response.start`` message that says ``Connection: close`` (uvicorn then
    closes the connection once the answer is written)."""
    headers = list(message.get("headers", ()))
    if any(name.lower() == b"connection" for name, _value in headers):
        return message
    return {**message, "headers": [*headers, _CLOSE]}


def _has_body(scope: dict[str, Any]) -> bool:
    """Whether the request's head announces a body (chunked, or a length other than 0)."""
    for name, value in scope.get("headers", ()):
        name = name.lower()
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip(b"0")):
            return True
    return False


class CloseUnreadBodies:
    """The ASGI ``app`` whose answer to a request whose body it has not read to its end
    says ``Connection: close``: the rest of that body is never read (see the module's
    docstring)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not _has_body(scope):
            await self.app(scope, receive, send)
            return
        ended = False  # the body's last part was received (or the client left)

        async def reading() -> dict[str, Any]:
            nonlocal ended
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                ended = True
            return message

        async def closing(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and not ended:
                message = _closing(message)
            await send(message)

        await self.app(scope, reading, closing)


class CloseWhenStopping:
    """The ASGI ``app`` whose answers say ``Connection: close`` once ``stopping`` is set
    (the server's stop has begun: it closes every connection after its answer). Without
    it, an answer given in the grace looked like any other, and a client that sent its next
    request on the same connection, as HTTP/1.1 lets it, had it reset unanswered (a real
    ``splice mcp --http``: a tools/call answered 200 in the grace, the next POST on its
    connection ECONNRESET); a proxy keeping connections to the server answers such a POST
    502 rather than send it to another instance."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.stopping = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def closing(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and self.stopping:
                message = _closing(message)
            await send(message)

        await self.app(scope, receive, closing)


# What uvicorn's h11 protocol logs (logger "uvicorn.error") about a request any client can
# send: one refused by h11, one with an Upgrade header (the second line follows it when no
# WebSocket library is installed).
REQUEST_WARNINGS = (
    "Invalid HTTP request received.",
    "Unsupported upgrade request.",
    "No supported WebSocket library detected.",
)


class RequestWarningLog(logging.Filter):
    """A filter for uvicorn's error logger: a warning of ``REQUEST_WARNINGS`` passes at
    most once per ``seconds`` for each of them, saying how many were condensed; any other
    record passes unchanged. A client chooses how often these are logged, so unfiltered they
    would fill the log (or the disk holding it) at the rate it sends requests."""

    def __init__(
        self, seconds: float = ACCEPT_LOG_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self._seconds = seconds
        self._clock = clock
        self._last: dict[str, float] = {}
        self._count: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if not isinstance(record.msg, str):
            return True
        kind = next((known for known in REQUEST_WARNINGS if record.msg.startswith(known)), None)
        if kind is None:
            return True
        count = self._count.get(kind, 0) + 1
        now = self._clock()
        last = self._last.get(kind)
        if last is not None and now - last < self._seconds:
            self._count[kind] = count
            return False
        record.msg = (
            f"{kind} ({count} times since the last such line; shown at most every "
            f"{self._seconds:g} s)"
        )
        record.args = ()
        self._last[kind], self._count[kind] = now, 0
        return True


class AcceptErrorLog:
    """An event-loop exception handler: ``ACCEPT_ERROR`` reports become one line (no
    traceback) per ``ACCEPT_LOG_SECONDS`` with how many were condensed; anything else goes
    to asyncio's default handler."""

    def __init__(
        self,
        log: Callable[[str], None],
        seconds: float = ACCEPT_LOG_SECONDS,
        *,
        listening: Any = None,
    ) -> None:
        self._log = log
        self._seconds = seconds
        self._listening = listening  # the server's socket: closed once it stops
        self._last: float | None = None
        self._count = 0

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if (
            self._listening is not None
            and self._listening.fileno() == -1
            and ACCEPT_RETRY in context.get("message", "")
        ):
            return  # a retried accept of a server that has stopped since: nothing to serve
        if context.get("message") != ACCEPT_ERROR:
            loop.default_exception_handler(context)
            return
        self._count += 1
        now = loop.time()
        if self._last is None or now - self._last >= self._seconds:
            reason = context.get("exception") or "out of system resources"
            self._log(
                f"cannot accept connections: {reason} "
                f"({self._count} times since the last such line; shown at most every "
                f"{self._seconds:g} s)"
            )
            self._last, self._count = now, 0


def serve_limited(
    config_args: dict[str, Any],
    sock: Any,
    log: Callable[[str], None],
    stop: Stop,
    on_ready: Callable[[], None] = lambda: None,
    head_seconds: float = HEAD_SECONDS,
) -> None:
    """Run uvicorn on ``sock`` until SIGINT/SIGTERM with this module's limits: the open-file
    limit raised, the connection cap and head deadline, one framing per request, no body
    read past its answer, accept errors condensed into ``log``, uvicorn's warnings about
    single requests condensed.
    ``config_args`` are the server's own ``uvicorn.Config`` arguments; ``stop`` is how it
    stops (splice_build/stopping.py: after SIGTERM this returns); ``on_ready`` runs once
    the limits are in force and SIGTERM stops the server gracefully (a SIGTERM just after
    the address was announced found the CLI's handler still in place: exit 143)."""
    import uvicorn

    from splice_build.open_files import raise_open_file_limit
    from splice_build.stopping import Stop, graceful_server, shutdown_seconds

    limit = max_connections(raise_open_file_limit())
    app = CloseWhenStopping(CloseUnreadBodies(one_framing(config_args["app"])))

    def begin() -> None:
        app.stopping = True
        stop.begin()

    config = uvicorn.Config(
        **{**config_args, "app": app},
        http=connection_protocol(limit, head_seconds),
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=shutdown_seconds(stop),
        loop="asyncio",
    )
    accept_errors = AcceptErrorLog(log, listening=sock)
    request_warnings = RequestWarningLog()
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addFilter(request_warnings)

    async def serve() -> None:
        asyncio.get_running_loop().set_exception_handler(accept_errors)
        stopping = Stop(grace=stop.grace, begin=begin, cut=stop.cut)
        await graceful_server(config, stopping, on_ready).serve(sockets=[sock])

    try:
        asyncio.run(serve())
    finally:
        uvicorn_log.removeFilter(request_warnings)
