"""A ``requests`` client with the network guard's rules, for host-side outbound calls.

Providers (the broker) and any other code that fetches a URL coming from a package or a user
use ``GuardedSession`` instead of ``requests`` directly::

    with GuardedSession(["api.github.com"]) as http:
        response = http.get("https://api.github.com/repos/x/y")

The rules are the sandbox's (docs/network-security.md): each request and redirect hop is
parsed WHATWG-style and checked (``targets.check_target``) against the caller's allowed
hosts; the address check runs **inside the connection's own DNS step** — the connection
class resolves the name once, refuses the request if any answer is not public, and connects
only to those checked addresses, keeping the name for ``Host``, SNI and certificate
verification; redirects (at most 5) are followed here and re-checked; cross-origin hops drop
``Authorization``, ``Cookie`` and ``Proxy-Authorization``; bodies are size-limited (also
after decoding) and the whole exchange is time-limited. Proxies, ``.netrc`` and a cookie
jar are never used (``http_session.new_session``'s jar keeps nothing); TLS is always verified (a custom CA bundle may be given, never ``False``).

``request`` returns a whole ``GuardedResponse``; ``open`` returns a ``GuardedStream`` whose
body is read chunk by chunk (the sandbox's ``fetch`` streams it to the tool this way,
runtime/fetch_channel.py), and ``abort`` (from any thread) shuts the session's sockets.
Failures name their cause as Node does (``net_causes.py``).

The ``resolver`` argument replaces the system resolver; tests use it to simulate DNS
rebinding. Nothing else (no environment variable, no file) can change it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from splice_build.records import dataclass
from splice_build.security.guarded_connect import Guard, Resolver, system_resolver
from splice_build.security.guarded_connect import adapter as connection_adapter
from splice_build.security.net_causes import failure_for
from splice_build.security.net_errors import (
    CAUSE_INVALID_RESPONSE,
    REASON_NOT_DECLARED,
    NetworkDenied,
    NetworkFailure,
    NetworkTimeout,
    ResponseTooLarge,
)
from splice_build.security.netpolicy import NetPolicy, load_policy
from splice_build.security.response_head import checked_head
from splice_build.security.targets import Target, check_target
from splice_build.security.urls import InvalidUrl, ParsedUrl, parse_url, resolve_reference

if TYPE_CHECKING:
    import requests

__all__ = ["GuardedResponse", "GuardedSession", "GuardedStream", "Resolver", "system_resolver"]

RedirectMode = Literal["follow", "error", "manual"]

DEFAULT_TIMEOUT_S = 30.0
# ``read_all``'s read size: each ``read1`` returns at most what one socket read gives, so larger
# reads mean fewer trips through urllib3 (16 KiB cost twice the CPU per MiB; the whole body is
# held anyway, and bounded by the size limit).
_CHUNK = 256 * 1024
_FORBIDDEN_METHODS = frozenset({"CONNECT", "TRACE", "TRACK"})
# Methods the fetch standard upper-cases; any other method is sent as written.
_NORMALIZED_METHODS = frozenset({"DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"})
_BODY_HEADERS = ("content-type", "content-encoding", "content-language", "content-location")
# The statuses a response may end a request with. http.client skips a 100 and takes any other
# 1xx (101 without an upgrade we never ask for, 102, 103 Early Hints) as the final answer,
# with no body, and passes 600–999 on: such a "response" is a broken server, never an empty
# success for a provider or a tool.
_FINAL_STATUSES = range(200, 600)


@dataclass(frozen=True)
class GuardedResponse:
    """A completed response: the body is fully read (and bounded)."""

    status: int
    url: str
    redirected: bool
    headers: Mapping[str, str]  # lower-case names
    content: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def text(self, encoding: str = "utf-8") -> str:
        return self.content.decode(encoding, "replace")

    def json(self) -> Any:
        import json

        return json.loads(self.content)


class _Deadline:
    """One request's deadline, kept by a timer: when it comes, every socket of the session is
    shut (``Guard.expire``), so no read outlives it, whether it is a read of the head, of the
    body, or a loop inside urllib3 or http.client that reads on while each read brings
    something (a gzip stream that decodes to nothing, chunked trailer lines without end)."""

    def __init__(self, guard: Guard, deadline: float) -> None:
        self.at = deadline
        self._guard = guard
        self._lock = threading.Lock()
        self._fired = False
        self._cancelled = False
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._fired = True
            self._guard.expire()

    @property
    def fired(self) -> bool:
        """The sockets were shut: what a read returned since may be cut short."""
        with self._lock:
            return self._fired

    @property
    def passed(self) -> bool:
        return self.fired or time.monotonic() >= self.at

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
        self._timer.cancel()


class GuardedStream:
    """A response whose head has arrived; its body is read with ``read_chunk``.

    ``headers`` keeps every header line (lower-case names, repeated names repeated, in the
    server's order), checked by ``response_head.checked_head``. The decoded body is bounded by the session's size limit and the
    request's deadline; ``close`` releases the connection.
    """

    def __init__(
        self,
        response: requests.Response,
        *,
        reason: str,
        headers: tuple[tuple[str, str], ...],
        url: str,
        redirected: bool,
        host: str,
        max_bytes: int,
        deadline: _Deadline,
    ) -> None:
        self._response = response
        self.status: int = response.status_code
        self.reason = reason
        self.url = url
        self.redirected = redirected
        self.headers = headers
        self._host = host
        self._max_bytes = max_bytes
        self._deadline = deadline
        self._size = 0
        self._done = False

    def read_chunk(self, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` of decoded body (less when less has arrived); b"" at the end.

        Raises ``ResponseTooLarge``, ``NetworkTimeout`` or ``NetworkFailure``."""
        from urllib3.exceptions import HTTPError as Urllib3Error

        if self._done:
            return b""
        if self._deadline.passed:
            self.close()
            raise NetworkTimeout("Reading the response timed out")
        try:
            chunk = self._response.raw.read1(max_bytes, decode_content=True)
        except (Urllib3Error, OSError) as exc:
            self.close()
            if self._deadline.fired:
                raise NetworkTimeout("Reading the response timed out") from exc
            raise failure_for(self._host, exc) from exc
        if self._deadline.fired:
            # The read ended because the deadline shut the socket: a body read until the
            # connection closes would otherwise end here, cut short, as if complete.
            self.close()
            raise NetworkTimeout("Reading the response timed out")
        if not chunk:
            self.close()
            return b""
        self._size += len(chunk)
        if self._size > self._max_bytes:
            self.close()
            raise ResponseTooLarge(f"response body larger than {self._max_bytes} bytes")
        return bytes(chunk)

    def read_all(self) -> bytes:
        chunks: list[bytes] = []
        while chunk := self.read_chunk(_CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self._done = True
        self._deadline.cancel()
        self._response.close()


class GuardedSession:
    """HTTP(S) requests restricted to ``allowed_hosts`` and to public addresses.

    ``allowed_hosts`` uses the manifest's host patterns (``api.example.com``,
    ``*.example.com``, ``*`` = any public host; an exact IP literal or ``localhost`` is an
    explicit grant). Raises ``NetworkDenied`` for refusals, ``NetworkTimeout``,
    ``ResponseTooLarge`` and ``NetworkFailure`` for failures; never returns a partial body.
    """

    def __init__(
        self,
        allowed_hosts: Sequence[str],
        *,
        resolver: Resolver | None = None,
        max_response_bytes: int | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        ca_bundle: str | None = None,
        policy: NetPolicy | None = None,
        same_origin_redirects: bool = False,
    ) -> None:
        """``same_origin_redirects``: a redirect to another origin (scheme, host or port) is
        refused, not followed; for a caller whose requests carry a key in a header that the
        cross-origin rule does not know (``x-api-key``), such as the broker's providers."""
        from splice_build.security.http_session import new_session

        if not allowed_hosts:
            raise ValueError("GuardedSession needs at least one allowed host pattern")
        self._policy = policy or load_policy()
        self._patterns = tuple(allowed_hosts)
        self._guard = Guard(self._patterns, self._policy, resolver or system_resolver)
        self._max_bytes = max_response_bytes or self._policy.max_response_bytes
        self._timeout_s = timeout_s
        self._same_origin = same_origin_redirects
        self._session = new_session()  # reads no redirect's body: _follow checks each hop
        self._session.trust_env = False  # no proxies, no .netrc, no REQUESTS_CA_BUNDLE
        self._session.verify = ca_bundle if ca_bundle else True
        adapter = connection_adapter(self._guard)
        self._session.adapters.clear()
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    @property
    def lookups(self) -> int:
        """How many DNS resolutions the guard made (one per new connection to a name)."""
        return self._guard.lookups

    @property
    def connected_addresses(self) -> tuple[str, ...]:
        """The peer address of every connection opened so far."""
        return tuple(self._guard.connected)

    def abort(self) -> None:
        """Make the request in progress (in another thread) fail now; the session is done."""
        self._guard.abort()

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> GuardedSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, url: str, **kwargs: Any) -> GuardedResponse:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> GuardedResponse:
        return self.request("POST", url, **kwargs)

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        data: bytes | str | None = None,
        redirect: RedirectMode = "follow",
        timeout_s: float | None = None,
    ) -> GuardedResponse:
        """Send one request and read the whole body; see the class docstring."""
        stream = self.open(
            method, url, headers=headers, data=data, redirect=redirect, timeout_s=timeout_s
        )
        try:
            content = stream.read_all()
        finally:
            stream.close()
        joined: dict[str, str] = {}
        for name, value in stream.headers:
            joined[name] = f"{joined[name]}, {value}" if name in joined else value
        return GuardedResponse(
            status=stream.status,
            url=stream.url,
            redirected=stream.redirected,
            headers=joined,
            content=content,
        )

    def open(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
        data: bytes | str | None = None,
        redirect: RedirectMode = "follow",
        timeout_s: float | None = None,
    ) -> GuardedStream:
        """Send one request, following redirects per ``redirect``, and return the final
        response with its body unread (``redirect="manual"`` returns a 3xx as it is)."""
        ends = time.monotonic() + (timeout_s or self._timeout_s)
        method = method.upper() if method.upper() in _NORMALIZED_METHODS else method
        if method.upper() in _FORBIDDEN_METHODS:
            raise ValueError(f"HTTP method {method} is not allowed")
        body = data.encode("utf-8") if isinstance(data, str) else data
        items = headers.items() if isinstance(headers, Mapping) else (headers or ())
        sent_headers = {str(k).lower(): str(v) for k, v in items}
        for name in self._policy.dropped_request_headers:
            sent_headers.pop(name, None)
        try:
            parts = parse_url(url)
        except InvalidUrl as exc:
            raise NetworkFailure(str(exc)) from exc
        deadline = _Deadline(self._guard, ends)
        try:
            return self._follow(method, parts, sent_headers, body, redirect, deadline)
        except BaseException:
            deadline.cancel()
            raise

    def _follow(
        self,
        method: str,
        parts: ParsedUrl,
        sent_headers: dict[str, str],
        body: bytes | None,
        redirect: RedirectMode,
        deadline: _Deadline,
    ) -> GuardedStream:
        """The request and each redirect hop, checked; the final response, body unread."""
        redirects = self._policy
        for hop in range(redirects.max_redirects + 1):
            try:
                target = check_target(parts, self._patterns, self._policy)
                response = self._send(target, method, sent_headers, body, deadline)
            except NetworkDenied as exc:
                if hop > 0:
                    raise NetworkDenied(
                        f"Redirect blocked: {exc.message}", exc.reason, host=exc.host
                    ) from None
                raise
            try:
                reason, head = checked_head(
                    response.reason or "", response.raw.headers.items(), target.host
                )
            except NetworkFailure:
                response.close()
                raise
            if response.status_code not in _FINAL_STATUSES:
                response.close()
                raise NetworkFailure(
                    f'Request to "{target.host}" failed: the response has an invalid status'
                    f" {response.status_code}",
                    cause=CAUSE_INVALID_RESPONSE,
                )
            location = response.headers.get("location")
            if (
                response.status_code in redirects.redirect_statuses
                and location is not None
                and redirect != "manual"
            ):
                response.close()
                if redirect == "error":
                    raise NetworkFailure('redirect mode is "error"')
                if hop >= redirects.max_redirects:
                    break
                try:
                    next_parts = resolve_reference(location, parts)
                except InvalidUrl as exc:
                    raise NetworkFailure("invalid redirect location") from exc
                if next_parts.origin != parts.origin or next_parts.origin == "null":
                    if self._same_origin:
                        raise NetworkDenied(
                            "Redirect blocked: it leads to another origin.",
                            REASON_NOT_DECLARED,
                            host=target.host,
                        )
                    for name in redirects.drop_cross_origin:
                        sent_headers.pop(name, None)
                if response.status_code in redirects.to_get_always or (
                    response.status_code in redirects.to_get_after_post and method == "POST"
                ):
                    method = "GET" if method != "HEAD" else method
                    body = None
                    for name in _BODY_HEADERS:
                        sent_headers.pop(name, None)
                parts = next_parts
                continue
            return GuardedStream(
                response,
                reason=reason,
                headers=head,
                url=target.url.href,
                redirected=hop > 0,
                host=target.host,
                max_bytes=self._max_bytes,
                deadline=deadline,
            )
        raise NetworkFailure(f"more than {redirects.max_redirects} redirects")

    def _send(
        self,
        target: Target,
        method: str,
        headers: Mapping[str, str],
        body: bytes | None,
        deadline: _Deadline,
    ) -> requests.Response:
        import requests

        remaining = deadline.at - time.monotonic()
        if remaining <= 0 or deadline.fired:
            raise NetworkTimeout(f'Request to "{target.host}" timed out')
        # The timeouts below bound each socket operation, not the whole head: a server that
        # sends its status line and headers a byte at a time would otherwise hold the request
        # for as long as it likes. The deadline's timer ends it.
        try:
            return self._session.request(
                method,
                target.request_url,
                headers=dict(headers),
                data=body,
                allow_redirects=False,
                stream=True,
                timeout=(remaining, remaining),
                proxies={},
            )
        except requests.exceptions.RequestException as exc:
            if deadline.passed:
                raise NetworkTimeout(f'Request to "{target.host}" timed out') from exc
            raise failure_for(target.host, exc) from exc
