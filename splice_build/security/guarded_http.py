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
after decoding) and the whole exchange is time-limited. Proxies, ``.netrc`` and the cookie
jar are never used; TLS is always verified (a custom CA bundle may be given, never ``False``).

The ``resolver`` argument replaces the system resolver; tests use it to simulate DNS
rebinding. Nothing else (no environment variable, no file) can change it.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from splice_build.security.addresses import (
    address_key,
    is_ip_literal,
    is_loopback_address,
    is_public_address,
)
from splice_build.security.net_errors import (
    REASON_NOT_DECLARED,
    REASON_NOT_PUBLIC,
    NetworkDenied,
    NetworkFailure,
    NetworkTimeout,
    ResponseTooLarge,
)
from splice_build.security.netpolicy import NetPolicy, load_policy
from splice_build.security.targets import (
    Target,
    bare_host,
    check_target,
    host_allowed,
    host_grant,
)
from splice_build.security.urls import InvalidUrl, ParsedUrl, parse_url

if TYPE_CHECKING:
    import requests

Resolver = Callable[[str], Sequence[str]]
RedirectMode = Literal["follow", "error", "manual"]

DEFAULT_TIMEOUT_S = 30.0
_CHUNK = 16 * 1024
_FORBIDDEN_METHODS = frozenset({"CONNECT", "TRACE", "TRACK"})
_BODY_HEADERS = ("content-type", "content-encoding", "content-language", "content-location")


def system_resolver(name: str) -> list[str]:
    """Every address the OS resolver gives for ``name`` (hosts file included), in order."""
    infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


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


@dataclass
class _Guard:
    """What the connection class needs: patterns, policy, resolver; counts lookups."""

    patterns: tuple[str, ...]
    policy: NetPolicy
    resolver: Resolver
    lookups: int = 0
    connected: list[str] = field(default_factory=list)

    def checked_addresses(self, raw_host: str) -> list[str]:
        """(4) Resolve once and check every answer; the connection uses exactly these."""
        host = bare_host(raw_host)
        if not host_allowed(host, self.patterns):  # defence in depth: checked before too
            raise NetworkDenied(
                f'Network access to "{host}" is denied: it is not an allowed host.',
                REASON_NOT_DECLARED,
            )
        grant = host_grant(host, self.patterns, self.policy)
        if is_ip_literal(host):
            return [host]
        self.lookups += 1
        try:
            answers = [str(a) for a in self.resolver(host)]
        except OSError as exc:
            raise NetworkFailure(f'Could not resolve "{host}": {exc}') from exc
        if not answers:
            raise NetworkFailure(f'Could not resolve "{host}": no addresses')
        for address in answers:
            if grant == "localhost":
                ok, kind = is_loopback_address(address, self.policy), "a loopback"
            else:
                ok, kind = is_public_address(address, self.policy), "a public"
            if not ok:
                raise NetworkDenied(
                    f'Network access to "{host}" is denied: it resolves to {address},'
                    f" which is not {kind} address.",
                    REASON_NOT_PUBLIC,
                )
        return answers

    def connect(
        self,
        host: str,
        port: int,
        timeout: float | None,
        socket_options: Sequence[tuple[int, int, int | bytes]] | None,
    ) -> socket.socket:
        addresses = self.checked_addresses(host)
        allowed = {address_key(a) for a in addresses}
        last: OSError | None = None
        for address in addresses:
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                for option in socket_options or ():
                    sock.setsockopt(*option)
                sock.settimeout(timeout)
                sock.connect((address, port))
                peer = sock.getpeername()[0]
                if address_key(peer) not in allowed:
                    raise NetworkDenied(
                        f'Network access to "{host}" is denied: the connection reached an'
                        " unchecked address.",
                        REASON_NOT_PUBLIC,
                    )
                self.connected.append(peer)
                return sock
            except OSError as exc:
                sock.close()
                last = exc
            except BaseException:
                sock.close()
                raise
        assert last is not None, "BUG: no address to connect to"
        raise last


def _connection_classes(guard: _Guard) -> tuple[type, type]:
    """urllib3 pool classes whose connections resolve and check inside ``_new_conn``."""
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
    from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

    def new_conn(self: Any) -> socket.socket:
        try:
            return guard.connect(self.host, self.port, self.timeout, self.socket_options)
        except TimeoutError as exc:
            raise ConnectTimeoutError(self, f"Connection to {self.host} timed out") from exc
        except OSError as exc:
            raise NewConnectionError(self, f"Failed to establish a new connection: {exc}") from exc

    http_conn = type("GuardedHTTPConnection", (HTTPConnection,), {"_new_conn": new_conn})
    https_conn = type("GuardedHTTPSConnection", (HTTPSConnection,), {"_new_conn": new_conn})
    http_pool = type("GuardedHTTPPool", (HTTPConnectionPool,), {"ConnectionCls": http_conn})
    https_pool = type("GuardedHTTPSPool", (HTTPSConnectionPool,), {"ConnectionCls": https_conn})
    return http_pool, https_pool


def _adapter(guard: _Guard) -> requests.adapters.HTTPAdapter:
    from requests.adapters import HTTPAdapter

    http_pool, https_pool = _connection_classes(guard)

    class GuardedAdapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = {"http": http_pool, "https": https_pool}

        def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
            raise NetworkDenied("Proxies are not used by the guarded client.", REASON_NOT_DECLARED)

        def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
            kwargs["proxies"] = None
            return super().send(request, *args, **kwargs)

    return GuardedAdapter(max_retries=0)


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
    ) -> None:
        import http.cookiejar

        import requests

        if not allowed_hosts:
            raise ValueError("GuardedSession needs at least one allowed host pattern")
        self._policy = policy or load_policy()
        self._patterns = tuple(allowed_hosts)
        self._guard = _Guard(self._patterns, self._policy, resolver or system_resolver)
        self._max_bytes = max_response_bytes or self._policy.max_response_bytes
        self._timeout_s = timeout_s
        self._session = requests.Session()
        self._session.trust_env = False  # no proxies, no .netrc, no REQUESTS_CA_BUNDLE
        self._session.verify = ca_bundle if ca_bundle else True
        self._session.cookies.set_policy(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
        adapter = _adapter(self._guard)
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
        """Send one request, following redirects per ``redirect``; see the class docstring."""
        deadline = time.monotonic() + (timeout_s or self._timeout_s)
        method = method.upper()
        if method in _FORBIDDEN_METHODS:
            raise ValueError(f"HTTP method {method} is not allowed")
        body = data.encode("utf-8") if isinstance(data, str) else data
        sent_headers = {k.lower(): str(v) for k, v in (headers or {}).items()}
        for name in self._policy.dropped_request_headers:
            sent_headers.pop(name, None)
        try:
            parts = parse_url(url)
        except InvalidUrl as exc:
            raise NetworkFailure(str(exc)) from exc
        redirects = self._policy
        for hop in range(redirects.max_redirects + 1):
            try:
                target = check_target(parts, self._patterns, self._policy)
                response = self._send(target, method, sent_headers, body, deadline)
            except NetworkDenied as exc:
                if hop > 0:
                    raise NetworkDenied(f"Redirect blocked: {exc.message}", exc.reason) from None
                raise
            location = response.headers.get("location")
            if (
                response.status_code in redirects.redirect_statuses
                and location is not None
                and redirect != "manual"
            ):
                response.close()
                if redirect == "error":
                    raise NetworkFailure('Redirect refused: redirect mode is "error"')
                if hop >= redirects.max_redirects:
                    break
                try:
                    next_parts = resolve_reference(location, parts)
                except InvalidUrl as exc:
                    raise NetworkFailure(f"Invalid redirect location: {location!r}") from exc
                if next_parts.origin != parts.origin or next_parts.origin == "null":
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
            content = self._read(response, deadline)
            return GuardedResponse(
                status=response.status_code,
                url=target.url.href,
                redirected=hop > 0,
                headers={k.lower(): v for k, v in response.headers.items()},
                content=content,
            )
        raise NetworkFailure(f"More than {redirects.max_redirects} redirects")

    def _send(
        self,
        target: Target,
        method: str,
        headers: Mapping[str, str],
        body: bytes | None,
        deadline: float,
    ) -> requests.Response:
        import requests

        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise NetworkTimeout(f'Request to "{target.host}" timed out')
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
        except requests.exceptions.Timeout as exc:
            raise NetworkTimeout(f'Request to "{target.host}" timed out') from exc
        except requests.exceptions.SSLError as exc:
            raise NetworkFailure(f'TLS verification failed for "{target.host}": {exc}') from exc
        except requests.exceptions.RequestException as exc:
            raise NetworkFailure(f'Request to "{target.host}" failed: {exc}') from exc

    def _read(self, response: requests.Response, deadline: float) -> bytes:
        from urllib3.exceptions import HTTPError as Urllib3Error
        from urllib3.exceptions import ReadTimeoutError

        chunks: list[bytes] = []
        size = 0
        try:
            while True:
                if time.monotonic() > deadline:
                    raise NetworkTimeout("Reading the response timed out")
                chunk = response.raw.read(_CHUNK, decode_content=True)
                if not chunk:
                    break
                size += len(chunk)
                if size > self._max_bytes:
                    raise ResponseTooLarge(f"Response body larger than {self._max_bytes} bytes")
                chunks.append(chunk)
        except (ReadTimeoutError, TimeoutError) as exc:
            raise NetworkTimeout("Reading the response timed out") from exc
        except (Urllib3Error, OSError) as exc:
            raise NetworkFailure(f"Reading the response failed: {exc}") from exc
        finally:
            response.close()
        return b"".join(chunks)


def resolve_reference(location: str, base: ParsedUrl) -> ParsedUrl:
    """A redirect ``Location`` against the current URL (the WHATWG forms that occur:
    absolute, scheme-relative, absolute path, query, relative path)."""
    text = location.strip("".join(chr(c) for c in range(0x21)))
    text = text.replace("\t", "").replace("\n", "").replace("\r", "")
    head = text.split("/", 1)[0].split("\\", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if ":" in head:
        return parse_url(text)
    authority = f"{base.protocol}//{base.hostname}{':' + base.port if base.port else ''}"
    if text[:2] in ("//", "\\\\", "/\\", "\\/"):
        return parse_url(f"{base.protocol}{text}")
    if text.startswith(("/", "\\")):
        return parse_url(authority + text)
    path, _, _query = base.path.partition("?")
    if text.startswith("?"):
        return parse_url(authority + path + text)
    if text.startswith("#") or text == "":
        return base
    directory = path.rsplit("/", 1)[0]
    return parse_url(f"{authority}{directory}/{text}")
