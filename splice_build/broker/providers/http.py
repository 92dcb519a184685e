"""``ProviderClient``: one provider's HTTP access to one host, through the guarded session.

Every request goes through ``splice_build.security.guarded_http`` (host allow-list of exactly
this client's host, DNS-time address checks, re-checked redirects, TLS always verified) with
the broker's size and time limits. Failures become ``ProviderFailure`` with a message that
names the provider and the endpoint *template* (``POST /search``) and nothing the vendor sent
back: error bodies and URLs may echo the key. TLS verification failures mark the provider
degraded (a proxy intercepting TLS is reported, never bypassed).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from splice_build.broker.providers.answer_reader import Answer
from splice_build.broker.providers.interface import ProviderFailure
from splice_build.errors import ErrorCode
from splice_build.records import dataclass
from splice_build.runtime.forks import forget_in_children
from splice_build.spec.number_text import whole_number

# docs/capabilities.md: 15 s for one provider's part of one call, all its requests together
DEFAULT_TIMEOUT_SECONDS = 15.0
DEFAULT_MAX_RESPONSE_BYTES = 5 * 1024 * 1024  # docs/compatibility.md#capabilities: 5 MiB
# Values a JSON answer may hold (docs/capabilities.md). Bytes alone do not bound what decoding
# costs: 5 MiB of [[],[],...] was 1.7 million lists, ~130 MiB of Python objects, in each of
# the 32 calls a process may have in flight. The largest real answers (an AI provider's model
# list, 100 GitHub repositories, 1,000 OHLCV candles) hold a few tens of thousands.
MAX_RESPONSE_VALUES = 100_000
# Provider answer bytes the whole process holds at once for capability calls
# (docs/capabilities.md), taken chunk by chunk before each chunk is read and held until the
# call's result is made: the 32 calls a process may have in flight, 5 MiB each, were 160 MiB
# of bodies before any decoding. One package's share of the calls (8, 40 MiB) fits, so no
# package fills it alone.
MAX_BYTES_IN_FLIGHT = 64 * 1024 * 1024
_READ_CHUNK = 256 * 1024
# The statuses a provider's answer is read from. A 3xx that reaches here was not followed (a
# 300, a 304 no request asked for, a redirect without Location): its body, often a JSON
# error, is no answer to the request.
_SUCCESS = range(200, 300)


@dataclass(frozen=True)
class Response:
    """What a provider gets back: status, a few headers and the (size-checked) body."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self, endpoint: str, provider: str) -> Any:
        """The body through the network-JSON decoder (``spec/untrusted_json.py``): no
        ``NaN``/``Infinity``, lone surrogates or runaway nesting reach a result, where they
        would have no JSON form on the way back to the tool, and no more values than
        ``MAX_RESPONSE_VALUES`` become Python objects."""
        from splice_build.spec.untrusted_json import UntrustedJsonError, decode

        try:
            return decode(self.body, max_bytes=len(self.body), max_values=MAX_RESPONSE_VALUES)
        except UntrustedJsonError as exc:
            raise ProviderFailure(
                f"{provider} {endpoint} returned a body that is not JSON ({exc})"
            ) from exc


class ByteBudget:
    """Bytes that callers on any thread hold together, at most ``total``."""

    def __init__(self, total: int) -> None:
        self._total = total
        self._held = 0
        self._lock = threading.Lock()
        forget_in_children(self)

    def forget_after_fork(self) -> None:
        """In a child of ``fork`` (runtime/forks.py): the bytes the parent's calls in flight
        hold are never given back there (their threads are the parent's), and would leave the
        child's calls less of the budget, down to none. The child holds none."""
        self._held = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        return self._held

    def take(self, count: int) -> bool:
        """Whether ``count`` more bytes fit (they are then held); nothing is taken otherwise."""
        with self._lock:
            if self._held + count > self._total:
                return False
            self._held += count
            return True

    def give_back(self, count: int) -> None:
        with self._lock:
            self._held -= count


BODIES_IN_FLIGHT = ByteBudget(MAX_BYTES_IN_FLIGHT)


class ProviderClient:
    """HTTP for one provider and one host, for one capability call.

    ``base`` may carry a key (RPC URLs), so messages use ``label`` (``{ROBINHOOD_RPC_URL}``)
    plus the path template instead of any URL.

    ``timeout`` is the whole call's, from the client's creation: each request gets what is
    left of it. Per request, a provider making several (Firecrawl scrapes up to ten pages one
    after another) ran ten times past it, holding one of the process's capability slots.
    """

    def __init__(
        self,
        *,
        provider: str,
        base: str,
        key: str | None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        label: str = "",
        budget: ByteBudget = BODIES_IN_FLIGHT,
    ) -> None:
        self.provider = provider
        self._budget = budget
        self._held = 0  # bytes of ``budget`` this client's answers hold (``release``)
        self.key = key
        self._base = base.rstrip("/")
        self._host = (urlsplit(base).hostname or "").lower()
        self._timeout = timeout
        self._deadline = time.monotonic() + timeout
        self._max_bytes = max_bytes
        self._label = label
        self._session: Any = None
        self._aborted = False
        self._session_lock = threading.Lock()  # ``abort`` comes from another thread

    def _guarded(self) -> Any:
        with self._session_lock:
            if self._session is None:
                from splice_build.security.guarded_http import GuardedSession

                # Exactly this client's host: a fake on 127.0.0.1 is reachable only because
                # the test-only endpoint makes that literal the one allowed host (an explicit
                # grant). And exactly its origin: the key rides in headers such as x-api-key,
                # which a redirect to http:// or another port of the same host would carry.
                self._session = GuardedSession(
                    [self._host],
                    max_response_bytes=self._max_bytes,
                    timeout_s=self._timeout,
                    same_origin_redirects=True,
                )
                if self._aborted:
                    self._session.abort()
            return self._session

    def abort(self) -> None:
        """Fail the request in progress (from another thread: the call was cancelled) and
        every later one of this client; its sockets are shut, so a blocked read returns."""
        with self._session_lock:
            self._aborted = True
            session = self._session
        if session is not None:
            session.abort()

    def request(
        self,
        method: str,
        template: str,
        *,
        path_params: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        max_bytes: int | None = None,
    ) -> Response:
        """Send one request to ``base + template`` (``{name}`` filled, percent-encoded).

        Raises ProviderFailure for network errors, timeouts, oversize bodies and any status
        but 2xx (404 → NOT_FOUND, 429 → RATE_LIMITED, others PROVIDER_ERROR).
        """
        endpoint = self._endpoint(method, template)
        path = template.format(**_path_segments(self.provider, endpoint, path_params or {}))
        limit = min(max_bytes or self._max_bytes, self._max_bytes)
        response = self._send(method, self._base + path, endpoint, params, body, headers, limit)
        if response.status not in _SUCCESS:
            raise _status_failure(self.provider, endpoint, response)
        return response

    def not_found(self, method: str, template: str) -> ProviderFailure:
        """The failure a 404 of ``request(method, template)`` is, word for word and status:
        for an answer a provider must not pass on (a private repository the key can see),
        which a tool must not be able to tell from one that does not exist."""
        return _not_found(self.provider, self._endpoint(method, template))

    def release(self, keep: int = 0) -> None:
        """Give back the budget this client's answers held, all but ``keep`` bytes: the
        call made its result, its provider failed (nothing of its answers is kept), or the
        provider keeps only ``keep`` bytes of them (Firecrawl, the text of pages scraped)."""
        given = max(self._held - keep, 0)
        self._budget.give_back(given)
        self._held -= given

    def time_left(self) -> float:
        """Seconds left of the call's time (negative once it has passed)."""
        return self._deadline - time.monotonic()

    def _endpoint(self, method: str, template: str) -> str:
        return f"{method} {self._label}{template}" if self._label or template else f"{method} /"

    def request_path(
        self, method: str, path: str, *, shown_as: str, max_bytes: int | None = None
    ) -> Response:
        """Like ``request`` for a path the provider has already validated (``github.raw``)."""
        endpoint = f"{method} {shown_as}"
        limit = min(max_bytes or self._max_bytes, self._max_bytes)
        response = self._send(method, self._base + path, endpoint, None, None, None, limit)
        if response.status not in _SUCCESS:
            raise _status_failure(self.provider, endpoint, response)
        return response

    def request_json(self, method: str, template: str, **options: Any) -> tuple[Answer, Response]:
        """``request``, its body decoded: the answer is read through ``Answer``'s typed reads
        (``answer_reader.py``), which name this endpoint when a value has another type."""
        response = self.request(method, template, **options)
        endpoint = f"{method} {self._label}{template}"
        return Answer(
            response.json(endpoint, self.provider), f"{self.provider} {endpoint}"
        ), response

    def _send(
        self,
        method: str,
        url: str,
        endpoint: str,
        params: Mapping[str, Any] | None,
        body: Any,
        headers: Mapping[str, str] | None,
        limit: int,
    ) -> Response:
        import requests

        from splice_build.security.net_errors import (
            NetworkDenied,
            NetworkFailure,
            NetworkTimeout,
            ResponseTooLarge,
        )

        where = f"{self.provider} {endpoint}"
        query = {k: v for k, v in (params or {}).items() if v is not None}
        if query:
            url += ("&" if "?" in url else "?") + urlencode(query)
        sent = {"accept": "application/json", **(headers or {})}
        data = None
        if body is not None:
            # Strict JSON: a NaN would be sent as the bare word, which no vendor reads as JSON.
            data = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
            sent["content-type"] = "application/json"
        left = self.time_left()
        if left <= 0:
            raise ProviderFailure(f"{where}: timed out after {self._timeout:g} s")
        # The guard's own messages name the host or carry the URL; none of them is passed on.
        try:
            stream = self._guarded().open(method, url, headers=sent, data=data, timeout_s=left)
            try:
                content = self._read(stream, where)
            finally:
                stream.close()
        except ResponseTooLarge as exc:
            raise ProviderFailure(f"{where}: response larger than {limit} bytes") from exc
        except NetworkTimeout as exc:
            raise ProviderFailure(f"{where}: timed out after {self._timeout:g} s") from exc
        except NetworkDenied as exc:
            raise ProviderFailure(f"{where}: refused by the network guard ({exc.reason})") from exc
        except NetworkFailure as exc:
            if isinstance(exc.__cause__, requests.exceptions.SSLError):
                raise ProviderFailure(
                    f"{where}: TLS certificate verification failed (TLS interception?); "
                    "the provider is degraded and was not retried without verification",
                    degraded=True,
                ) from exc
            raise ProviderFailure(f"{where}: network error") from exc
        if len(content) > limit:
            raise ProviderFailure(f"{where}: response larger than {limit} bytes")
        joined: dict[str, str] = {}
        for name, value in stream.headers:
            joined[name] = f"{joined[name]}, {value}" if name in joined else value
        return Response(stream.status, joined, content)

    def _read(self, stream: Any, where: str) -> bytes:
        """The body, each chunk's bytes taken from the budget before it is read; past the
        budget the call is CAPABILITY_LIMIT (no other provider is tried: it would be too)."""
        body = bytearray()
        while True:
            if not self._budget.take(_READ_CHUNK):
                raise ProviderFailure(
                    f"{where}: capability answers in flight in this process hold "
                    f"{MAX_BYTES_IN_FLIGHT} bytes; try again later",
                    code=ErrorCode.CAPABILITY_LIMIT,
                )
            chunk = b""
            try:
                chunk = stream.read_chunk(_READ_CHUNK)
            finally:  # a failed read (a timeout, a body too large) holds nothing
                self._budget.give_back(_READ_CHUNK - len(chunk))
                self._held += len(chunk)
            if not chunk:
                return bytes(body)
            body += chunk


def _path_segments(provider: str, endpoint: str, params: Mapping[str, Any]) -> dict[str, str]:
    """Each path parameter percent-encoded, which must hold a character other than ``.``
    (an allow-list: ``.`` is the one character ``quote`` leaves that the URL parser reads as
    a step). A ``.`` or ``..`` segment is no name to the parser (``/repos/octo/.`` is
    ``/repos/octo/``, ``/repos/./hello`` is ``/repos/hello``) and an empty one changes the
    path too: such a value sent the request, with the provider's key, to another endpoint
    than the template's."""
    encoded = {}
    for name, value in params.items():
        text = str(value)
        if not text.strip("."):
            raise ProviderFailure(
                f"{provider} {endpoint}: {{{name}}} must hold a character other than '.'",
                code=ErrorCode.INVALID_INPUT,
            )
        encoded[name] = quote(text, safe="")
    return encoded


def _not_found(provider: str, endpoint: str) -> ProviderFailure:
    return ProviderFailure(
        f"{provider} {endpoint}: not found (404)", code=ErrorCode.NOT_FOUND, status=404
    )


def _status_failure(provider: str, endpoint: str, response: Response) -> ProviderFailure:
    status = response.status
    where = f"{provider} {endpoint}"
    if status == 404:
        return _not_found(provider, endpoint)
    if status == 429 or (status == 403 and response.headers.get("x-ratelimit-remaining") == "0"):
        reset = response.headers.get("retry-after") or response.headers.get("x-ratelimit-reset")
        # A count of seconds or a time in ASCII digits only: the message is shown to people
        # and tools, and str.isdigit() also takes "²" or thousands of digits.
        shown = reset is not None and whole_number(reset, 15) is not None
        suffix = f"; retry after {reset}" if shown else ""
        return ProviderFailure(
            f"{where}: rate limited ({status}){suffix}", code=ErrorCode.RATE_LIMITED, status=status
        )
    if status in (401, 403):
        return ProviderFailure(f"{where}: the key was refused ({status})", status=status)
    return ProviderFailure(f"{where}: answered HTTP {status}", status=status)
