"""The parent side of a tool's ``fetch``: the tool's requests, performed by the guarded client.

The host's fetch shim (host/fetch.mjs) holds no network: it sends each request over the
channel (host/PROTOCOL.md, "fetch") and this module performs it with
``security.guarded_http.GuardedSession`` under the package's ``permissions.network`` — the
one implementation of the network policy (docs/network-security.md). It decides every
answer whatever the host checked, since the tool can write frames itself:

- budget: ``MAX_FETCH_CALLS`` requests per execution, ``MAX_FETCHES_IN_FLIGHT`` open at a
  time (from the request frame until the final frame of its answer, or its cancel);
- request bodies: at most ``MAX_FETCH_REQUEST_BYTES``, in chunk frames, held here until the
  body is complete (bounded), then sent;
- responses: the head, then one chunk per credit (``FETCH_INITIAL_CREDIT`` with the request,
  more as the host grants it with ``fetch-pull``): nothing is read from the server beyond
  what the host asked for, and at most ``MAX_FETCH_CREDIT`` chunks are queued for the host
  per request; bodies are bounded by the policy's size limit;
- every request runs on a worker thread, so the session's loop never waits for the
  network; workers post frames through ``post`` (thread-safe, it wakes the loop).

``close`` (end of the execution) aborts whatever is still open: its sockets are shut, so a
worker blocked in a read returns at once.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from splice_build.runtime.limits import (
    FETCH_CHUNK_BYTES,
    FETCH_INITIAL_CREDIT,
    MAX_FETCH_CALLS,
    MAX_FETCH_CREDIT,
    MAX_FETCH_REQUEST_BYTES,
    MAX_FETCHES_IN_FLIGHT,
)
from splice_build.runtime.protocol import (
    FetchBody,
    FetchBodyEnd,
    FetchCancel,
    FetchMessage,
    FetchPull,
    FetchRequest,
    encode_frame,
)
from splice_build.security.net_errors import REASON_NOT_DECLARED, NetworkDenied, NetworkFailure

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from splice_build.security.guarded_http import GuardedSession, GuardedStream

# Cause codes of failures the channel itself decides (the tool sees them as cause.code).
CAUSE_LIMIT = "ERR_SPLICE_FETCH_LIMIT"
CAUSE_REQUEST_TOO_LARGE = "ERR_SPLICE_REQUEST_TOO_LARGE"
# (a status outside 200–599 never gets here: guarded_http refuses it with its own cause)
_NULL_BODY_STATUSES = frozenset({204, 205, 304})
_DEFAULT_HEADERS = (("user-agent", "node"), ("accept", "*/*"))


class TableResolver:
    """The ``_unsafe_test_resolver`` hook: ``{name: [[answers of lookup 1], [lookup 2], …]}``
    (the last list repeats; a missing name fails like DNS). One per execution."""

    def __init__(self, table: Mapping[str, Sequence[Sequence[str]]]) -> None:
        self._table = {name: [list(a) for a in answers] for name, answers in table.items()}
        self._calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, name: str) -> list[str]:
        import socket

        with self._lock:
            answers = self._table.get(name)
            n = self._calls.get(name, 0)
            self._calls[name] = n + 1
        if not answers:
            raise socket.gaierror(socket.EAI_NONAME, f"getaddrinfo ENOTFOUND {name}")
        return answers[min(n, len(answers) - 1)]


def _import_client() -> None:
    import splice_build.security.guarded_http  # noqa: F401


def _error_frame(request_id: int, exc: NetworkDenied | NetworkFailure) -> bytes:
    if isinstance(exc, NetworkDenied):
        message = exc.message
        if exc.reason == REASON_NOT_DECLARED and exc.host is not None:
            prefix = "Redirect blocked: " if message.startswith("Redirect blocked: ") else ""
            message = (
                f'{prefix}Network access to "{exc.host}" is denied. '
                "Declare it in manifest permissions.network."
            )
        error: dict[str, Any] = {"kind": "denied", "message": message, "reason": exc.reason}
    else:
        error = {"kind": "failed", "message": exc.message, "code": exc.cause}
    return encode_frame({"type": "fetch-error", "id": request_id, "error": error})


def _failed(request_id: int, message: str, cause: str | None) -> bytes:
    return _error_frame(request_id, NetworkFailure(message, cause=cause))


class _Exchange:
    """One request: its head, its body as it arrives, then its worker's state."""

    def __init__(self, request: FetchRequest) -> None:
        self.request = request
        self.body = bytearray()
        self.body_failed = False  # over the size limit: later body frames are dropped
        # Handed to a worker: at most once per request, whatever frames the tool writes.
        self.submitted = False
        self.credit = FETCH_INITIAL_CREDIT
        self.cond = threading.Condition()
        self.cancelled = False
        self.session: GuardedSession | None = None

    def cancel(self) -> None:
        with self.cond:
            self.cancelled = True
            session = self.session
            self.cond.notify_all()
        if session is not None:
            session.abort()


class FetchChannel:
    """One execution's fetch state; ``handle`` runs on the session's loop thread."""

    def __init__(
        self,
        *,
        patterns: Sequence[str],
        post: Callable[[bytes], None],
        deadline: float,
        resolver: Callable[[str], Sequence[str]] | None = None,
    ) -> None:
        self._patterns = tuple(patterns)
        self._post = post
        self._deadline = deadline
        self._resolver = resolver
        self._lock = threading.Lock()
        self._open: dict[int, _Exchange] = {}
        self._used_ids: set[int] = set()
        # Every exchange of the execution (at most MAX_FETCH_CALLS): close() cancels them all,
        # answered ones included, so no worker can outlive the call.
        self._started: list[_Exchange] = []
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False
        if self._patterns and "requests" not in sys.modules:
            # The client's imports (~80 ms) overlap the tool's start instead of its first fetch.
            threading.Thread(target=_import_client, name="splice-fetch-import", daemon=True).start()

    @property
    def idle(self) -> bool:
        """No request of this execution is open."""
        with self._lock:
            return not self._open

    # the loop thread ---------------------------------------------------------------------
    def handle(self, message: FetchMessage) -> list[bytes]:
        """Frames to send at once (refusals); everything else is posted by the workers."""
        if isinstance(message, FetchRequest):
            return self._start(message)
        with self._lock:
            exchange = self._open.get(message.id)
        if exchange is None:
            return []  # answered, cancelled or forged: nothing to do
        # Body frames count only for a request announced with a body and not yet sent; the
        # real host writes them so, a tool writing its own frames gets them ignored.
        expects_body = exchange.request.has_body and not exchange.submitted
        if isinstance(message, FetchBody):
            return self._add_body(exchange, message.data) if expects_body else []
        if isinstance(message, FetchBodyEnd):
            if expects_body and not exchange.body_failed:
                self._submit(exchange)
            return []
        if isinstance(message, FetchPull):
            with exchange.cond:
                exchange.credit = min(exchange.credit + message.chunks, MAX_FETCH_CREDIT)
                exchange.cond.notify_all()
            return []
        assert isinstance(message, FetchCancel), "BUG: unknown fetch message"
        self._forget(exchange)
        exchange.cancel()
        return []

    def _start(self, request: FetchRequest) -> list[bytes]:
        rid = request.id
        with self._lock:
            if rid in self._used_ids:
                return [_failed(rid, f"fetch id {rid} was used before", CAUSE_LIMIT)]
            # Counted before the id is kept: the ids a call can make the parent hold stay
            # bounded, however many requests the tool writes to its pipe itself.
            if len(self._used_ids) >= MAX_FETCH_CALLS:
                return [
                    _failed(
                        rid,
                        f"more than {MAX_FETCH_CALLS} fetch calls in one execution",
                        CAUSE_LIMIT,
                    )
                ]
            self._used_ids.add(rid)
            if len(self._open) >= MAX_FETCHES_IN_FLIGHT:
                return [
                    _failed(
                        rid, f"more than {MAX_FETCHES_IN_FLIGHT} fetch calls in flight", CAUSE_LIMIT
                    )
                ]
            exchange = _Exchange(request)
            self._open[rid] = exchange
            self._started.append(exchange)
        refusal = self._static_refusal(request)
        if refusal is not None:
            self._forget(exchange)
            return [_error_frame(rid, refusal)]
        if not request.has_body:
            self._submit(exchange)
        return []

    def _static_refusal(self, request: FetchRequest) -> NetworkDenied | NetworkFailure | None:
        """The URL checks that need no network (scheme, credentials, declared host, IP
        literals), so a refused request costs no thread; the worker checks again."""
        from splice_build.security.targets import check_target
        from splice_build.security.urls import InvalidUrl, parse_url

        try:
            check_target(parse_url(request.url), self._patterns)
        except NetworkDenied as exc:
            return exc
        except InvalidUrl as exc:
            return NetworkFailure(f"invalid URL: {exc}", cause="ERR_INVALID_URL")
        return None

    def _add_body(self, exchange: _Exchange, data: bytes) -> list[bytes]:
        if exchange.body_failed:
            return []
        if len(exchange.body) + len(data) > MAX_FETCH_REQUEST_BYTES:
            exchange.body_failed = True
            exchange.body.clear()
            self._forget(exchange)
            rid = exchange.request.id
            return [
                _failed(
                    rid,
                    f"request body larger than {MAX_FETCH_REQUEST_BYTES} bytes",
                    CAUSE_REQUEST_TOO_LARGE,
                )
            ]
        exchange.body += data
        return []

    def _submit(self, exchange: _Exchange) -> None:
        if exchange.submitted:
            return
        exchange.submitted = True
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(
                max_workers=MAX_FETCHES_IN_FLIGHT, thread_name_prefix="splice-fetch"
            )
        self._executor.submit(self._perform, exchange)

    def _forget(self, exchange: _Exchange) -> bool:
        """Close the exchange's slot; False when it was closed already."""
        with self._lock:
            return self._open.pop(exchange.request.id, None) is not None

    def close(self) -> None:
        """Abort every open request (the execution is over)."""
        with self._lock:
            self._closed = True
            exchanges = list(self._started)
            self._open.clear()
        for exchange in exchanges:
            exchange.cancel()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    # worker threads ----------------------------------------------------------------------
    def _finish(self, exchange: _Exchange, frame: bytes) -> None:
        """Post the final frame of an answer (once; nothing after a cancel)."""
        if self._forget(exchange) and not exchange.cancelled:
            self._post(frame)

    def _perform(self, exchange: _Exchange) -> None:
        from splice_build.security.guarded_http import GuardedSession

        request = exchange.request
        rid = request.id
        remaining = self._deadline - time.monotonic()
        if exchange.cancelled or remaining <= 0:
            self._finish(exchange, _failed(rid, "the call is over", None))
            return
        session = GuardedSession(self._patterns, resolver=self._resolver, timeout_s=remaining)
        with exchange.cond:
            exchange.session = session
            cancelled = exchange.cancelled
        stream: GuardedStream | None = None
        try:
            if cancelled:
                return
            given: dict[str, str] = {}
            for name, value in request.headers:  # repeated names are sent combined
                given[name] = f"{given[name]}, {value}" if name in given else value
            headers = {**dict(_DEFAULT_HEADERS), **given}
            stream = session.open(
                request.method,
                request.url,
                headers=headers,
                data=bytes(exchange.body) if request.has_body else None,
                redirect=request.redirect,  # type: ignore[arg-type]
                timeout_s=remaining,
            )
            exchange.body.clear()
            self._stream(exchange, stream)
        except (NetworkDenied, NetworkFailure) as exc:
            self._finish(exchange, _error_frame(rid, exc))
        except ValueError as exc:  # a method the client refuses
            self._finish(exchange, _failed(rid, str(exc), None))
        finally:
            if stream is not None:
                stream.close()
            session.close()

    def _stream(self, exchange: _Exchange, stream: GuardedStream) -> None:
        rid = exchange.request.id
        head = {
            "type": "fetch-head",
            "id": rid,
            "status": stream.status,
            "statusText": stream.reason,
            "url": stream.url,
            "redirected": stream.redirected,
            "headers": [list(pair) for pair in stream.headers],
        }
        if exchange.cancelled:
            return
        self._post(encode_frame(head))
        if exchange.request.method == "HEAD" or stream.status in _NULL_BODY_STATUSES:
            self._finish(exchange, encode_frame({"type": "fetch-done", "id": rid}))
            return
        while True:
            with exchange.cond:
                while exchange.credit == 0 and not exchange.cancelled:
                    left = self._deadline - time.monotonic()
                    if left <= 0:
                        exchange.cancelled = True  # the call is over; close() ends the rest
                        break
                    exchange.cond.wait(left)
                if exchange.cancelled:
                    return
                exchange.credit -= 1
            chunk = stream.read_chunk(FETCH_CHUNK_BYTES)
            if not chunk:
                self._finish(exchange, encode_frame({"type": "fetch-done", "id": rid}))
                return
            if exchange.cancelled:
                return
            # the chunk follows its header line as raw bytes (host/PROTOCOL.md)
            self._post(b'{"type":"fetch-chunk","id":%d,"bytes":%d}\n' % (rid, len(chunk)) + chunk)
