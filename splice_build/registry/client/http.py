"""``HttpRegistryClient``: the registry API over ``requests``.

Every ``requests`` failure becomes ``REGISTRY_UNREACHABLE`` (``raise … from exc``); every
non-2xx answer goes through ``statuses.error_for_status``; every request has one deadline for
connect, headers and body (``deadline``, ``REGISTRY_UNAVAILABLE`` past it); every JSON answer
is decoded by the hostile-input decoder and validated before it is returned, a read's or an
authenticated route's (``answers``, ``REGISTRY_ERROR``). The token is sent as an
``Authorization`` header to this registry's own URL, only on the routes that act as a user
(``_as_user``), and only where ``credential_route`` lets it go (https, or http to a loopback
address): reads and downloads are anonymous (docs/registry.md#http-api), so a registry that
only serves packages never sees it. It never appears in an error.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.api import BUNDLE_CONTENT_TYPE, INTEGRITY_HEADER, TARGZ_CONTENT_TYPE
from splice_build.registry.client.answers import MAX_ANSWER_DEPTH, checked, malformed
from splice_build.registry.client.credential_route import authorization_header, direct_only
from splice_build.registry.client.deadline import DEADLINE_ENV, MIN_RATE_ENV, Budget, Deadlines
from splice_build.registry.client.interface import split_package_id, token_body
from splice_build.registry.client.statuses import error_for_status
from splice_build.spec.digests import integrity_of
from splice_build.spec.limits import MAX_ARCHIVE_BYTES
from splice_build.spec.number_text import capped_count
from splice_build.spec.untrusted_json import UntrustedJsonError, decode

if TYPE_CHECKING:
    import requests

    from splice_build.registry.client.sockets import Exchange

CONNECT_TIMEOUT = 10.0
# A registry is a remote party: every body is read with a cap, never whole on trust.
MAX_JSON_BYTES = 16 * 1024 * 1024  # metadata and search answers (a manifest is far smaller)
MAX_ERROR_BYTES = 64 * 1024
CHUNK = 64 * 1024


def _new_session(base_url: str) -> requests.Session:
    """A session that takes proxies and CA bundles from the environment, but never a
    credential: with ``trust_env`` alone, ``requests`` would add the ``~/.netrc`` password
    of the registry's host (or of its ``default`` entry, any host) as ``Authorization:
    Basic`` to every request, reads and downloads included, and to a registry that only a
    checkout's ``splice.json`` names. An ``auth`` of the session's own turns that look-up
    off; it leaves each request as it is (the token is ``_as_user``'s header).

    A plain-HTTP registry on a loopback address takes nothing from the environment: a proxy
    would receive its requests, token included, in clear (``credential_route.direct_only``)."""
    from splice_build.registry.client.sockets import mount as mount_held
    from splice_build.security.http_session import new_session

    session = new_session()
    mount_held(session)
    session.trust_env = not direct_only(base_url)
    session.auth = _no_credentials
    session.headers["accept"] = "application/json"
    session.headers["user-agent"] = "splice-build"
    return session


def _no_credentials(request: requests.PreparedRequest) -> requests.PreparedRequest:
    return request


class HttpRegistryClient:
    def __init__(
        self, base_url: str, *, token: str | None = None, deadlines: Deadlines | None = None
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.deadlines = deadlines or Deadlines()
        self.has_token = token is not None
        self._token = token
        # (package id, version) -> the integrity this registry's version answer gave it
        self._answered_integrity: dict[tuple[str, str], str] = {}
        self._session = _new_session(self.base_url)

    # -- plumbing ---------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        limit: int = MAX_JSON_BYTES,
        download: bool = False,
        **kwargs: Any,
    ) -> tuple[requests.Response, bytes]:
        """The answer and its body, read in chunks and refused past ``limit`` bytes, all of it
        within the request's deadline (``deadline.Budget``).

        The exchange runs in a daemon thread while this one waits for the deadline: a read
        blocked on a stalled socket cannot be interrupted otherwise. On expiry the request is
        abandoned (``_abandon``: its sockets shut, so its thread ends) and the session replaced.
        """
        sent = kwargs.get("data")
        upload = len(sent) if isinstance(sent, bytes) else 0
        budget = Budget(
            self.deadlines.for_download(upload) if upload else self.deadlines.request,
            ceiling=self.deadlines.for_download(limit) if download else None,
        )
        from splice_build.registry.client.sockets import Exchange, exchange_in_this_thread

        outcome: dict[str, Any] = {}
        done = threading.Event()
        session = self._session
        held = Exchange()

        def exchange() -> None:
            try:
                with exchange_in_this_thread(held):
                    outcome["value"] = self._exchange(
                        session, method, path, limit, download, budget, kwargs
                    )
            except BaseException as exc:  # handed to the waiting thread, raised there
                outcome["error"] = exc
            finally:
                done.set()

        worker = threading.Thread(target=exchange, name="splice-registry-request", daemon=True)
        worker.start()
        while not done.wait(max(budget.remaining(), 0.0)):
            if budget.expired():
                self._abandon(held)
                raise self._late(path, budget)
        if isinstance(outcome.get("error"), _Expired):
            self._abandon(held)
            raise self._late(path, budget)
        if "error" in outcome:
            raise outcome["error"]
        value: tuple[requests.Response, bytes] = outcome["value"]
        return value

    def _exchange(
        self,
        session: requests.Session,
        method: str,
        path: str,
        limit: int,
        download: bool,
        budget: Budget,
        kwargs: dict[str, Any],
    ) -> tuple[requests.Response, bytes]:
        import requests

        connect = min(CONNECT_TIMEOUT, max(budget.remaining(), 0.001))
        try:
            response = session.request(
                method,
                self.base_url + path,
                timeout=(connect, max(budget.until_ceiling(), 0.001)),
                allow_redirects=False,
                stream=True,
                **kwargs,
            )
            with response:
                ok = 200 <= response.status_code < 300
                if ok and download:
                    budget.extend_to(self.deadlines.for_download(_expected_size(response, limit)))
                if ok:
                    body = _read_capped(response, limit, path, budget)
                else:
                    body = _read_error_body(response, budget)
        except requests.RequestException as exc:
            if budget.expired():  # a socket timeout that raced the waiting thread
                raise _Expired from exc
            raise RegistryError(
                ErrorCode.REGISTRY_UNREACHABLE,
                f"Cannot reach the registry at {self.base_url}",
                details=[type(exc).__name__],
                hint=_unreachable_hint(self.base_url, exc),
            ) from exc
        if not ok:
            raise _error(response, body)
        return response, body

    def _abandon(self, held: Exchange) -> None:
        """Drop a request past its deadline and start a fresh session.

        The answer is not closed here: closing waits for the lock the reading thread holds.
        The sockets the request used are shut down instead (``sockets.Exchange``), which ends
        the read at once, the head's too, and any connection it makes after this.
        """
        held.abandon()
        self._session = _new_session(self.base_url)

    def _late(self, path: str, budget: Budget) -> RegistryError:
        return RegistryError(
            ErrorCode.REGISTRY_UNAVAILABLE,
            f"The registry at {self.base_url} did not answer {path} within {round(budget.seconds, 1):g} s",
            details=[f"deadline: {round(budget.seconds, 1):g} s for connect, headers and body"],
            hint=(
                "The registry is stalled or too slow; nothing was changed. Retry later, or "
                f"raise {DEADLINE_ENV} / lower {MIN_RATE_ENV} (docs/registry.md#deadlines)."
            ),
        )

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        _, body = self._request(method, path, **kwargs)
        return _answer(body, path)

    def _as_user(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """A request that acts as the user: the only kind that carries the token, with the
        header ``credential_route`` builds (refused, nothing sent, over plain http to a host
        that is not a loopback address)."""
        if self._token is not None:
            credential = authorization_header(self.base_url, self._token)
            kwargs["headers"] = {**kwargs.get("headers", {}), **credential}
        return self._json(method, path, **kwargs)

    @staticmethod
    def _pkg(package_id: str, *rest: str) -> str:
        ns, name = split_package_id(package_id)
        parts = [ns, name, *rest]
        return "/packages/" + "/".join(quote(part, safe="") for part in parts)

    # -- reads ------------------------------------------------------------------------

    def search(self, query: str, *, limit: int = 20) -> dict[str, Any]:
        path = "/packages/search"
        answer = self._json("GET", path, params={"q": query, "limit": str(limit)})
        return checked("search", answer, path)

    def package(self, package_id: str) -> dict[str, Any]:
        path = self._pkg(package_id)
        return checked("package", self._json("GET", path), path, package_id=package_id)

    def versions(self, package_id: str, *, cursor: str | None = None) -> dict[str, Any]:
        path = self._pkg(package_id, "versions")
        params = {"cursor": cursor} if cursor is not None else None
        answer = self._json("GET", path, params=params)
        return checked("versions", answer, path, package_id=package_id)

    def version(self, package_id: str, version: str) -> dict[str, Any]:
        path = self._pkg(package_id, version)
        answer = self._json("GET", path)
        answer = checked("version", answer, path, package_id=package_id, version=version)
        self._answered_integrity[package_id, version] = answer["integrity"]
        return answer

    def provenance(self, package_id: str, version: str) -> dict[str, Any]:
        path = self._pkg(package_id, version, "provenance")
        answer = self._json("GET", path)
        return checked("provenance", answer, path, package_id=package_id, version=version)

    def download(self, package_id: str, version: str) -> bytes:
        """The artifact bytes (≤ 5 MiB, refused while reading past that).

        Nothing about them is trusted here: the installer verifies them against the lock or
        the metadata (SHA-256 and size), which no header can stand in for. A header can only
        refuse them: an ``x-splice-integrity`` that names neither them nor what the registry's
        version answer said is ``INTEGRITY_MISMATCH`` (``_declared_integrity``).
        """
        accept = f"{TARGZ_CONTENT_TYPE}, {BUNDLE_CONTENT_TYPE}"
        path = self._pkg(package_id, version, "download")
        response, body = self._request(
            "GET", path, limit=MAX_ARCHIVE_BYTES, download=True, headers={"accept": accept}
        )
        answered = self._answered_integrity.get((package_id, version))
        _declared_integrity(response, body, answered, path)
        return body

    def namespace(self, namespace: str) -> dict[str, Any]:
        return checked("namespace", self._json("GET", _ns(namespace)), _ns(namespace))

    def keys(self, namespace: str) -> dict[str, Any]:
        path = _ns(namespace) + "/keys"
        return checked("keys", self._json("GET", path), path)

    # -- authenticated ----------------------------------------------------------------

    def publish(self, archive: bytes) -> dict[str, Any]:
        content_type = TARGZ_CONTENT_TYPE if archive[:2] == b"\x1f\x8b" else BUNDLE_CONTENT_TYPE
        headers = {"content-type": content_type}
        answer = self._as_user("POST", "/publish", data=archive, headers=headers)
        return checked("publish", answer, "/publish")

    def whoami(self) -> dict[str, Any]:
        return checked("whoami", self._as_user("GET", "/auth/whoami"), "/auth/whoami")

    def tokens(self) -> dict[str, Any]:
        return checked("tokens", self._as_user("GET", "/auth/tokens"), "/auth/tokens")

    def create_token(
        self,
        *,
        label: str | None = None,
        namespaces: Sequence[str] | None = None,
        expires_in_days: int | None = None,
    ) -> dict[str, Any]:
        body = token_body(label, namespaces, expires_in_days)
        answer = self._as_user("POST", "/auth/tokens", json=body)
        return checked("createdToken", answer, "/auth/tokens")

    def revoke_token(self, token_id: str) -> dict[str, Any]:
        path = "/auth/tokens/" + quote(token_id, safe="")
        return checked("revokedToken", self._as_user("DELETE", path), path)

    def set_maintainer(self, namespace: str, user: str, *, add: bool) -> dict[str, Any]:
        path = _ns(namespace) + "/maintainers/" + quote(user, safe="")
        return checked("namespace", self._as_user("PUT" if add else "DELETE", path), path)

    def add_key(self, namespace: str, public_key: str) -> dict[str, Any]:
        path = _ns(namespace) + "/keys"
        return checked("key", self._as_user("POST", path, json={"publicKey": public_key}), path)

    def revoke_key(self, namespace: str, key_id: str) -> dict[str, Any]:
        path = _ns(namespace) + "/keys/" + quote(key_id, safe="")
        return checked("key", self._as_user("DELETE", path), path)

    def add_signature(
        self, package_id: str, version: str, key_id: str, signature: str
    ) -> dict[str, Any]:
        body = {"keyId": key_id, "signature": signature}
        path = self._pkg(package_id, version, "signatures")
        return checked("signature", self._as_user("POST", path, json=body), path)

    def close(self) -> None:
        self._session.close()


def _ns(namespace: str) -> str:
    return "/namespaces/" + quote(namespace.removeprefix("@"), safe="")


def _answer(body: bytes, path: str) -> dict[str, Any]:
    """A JSON answer as the hostile-input decoder reads it, nested no deeper than any answer a
    registry can legitimately give (``answers.MAX_ANSWER_DEPTH``): a deeper one is refused
    by a linear scan before any parsing, so it costs no more than its bytes."""
    try:
        value = decode(
            body, max_bytes=MAX_JSON_BYTES, max_depth=MAX_ANSWER_DEPTH, lone_surrogates=True
        )
    except UntrustedJsonError as exc:
        raise malformed(path, [f"the answer is not JSON: {exc}"]) from exc
    if not isinstance(value, dict):
        raise malformed(path, ["the answer is not a JSON object"])
    return value


def _declared_integrity(
    response: requests.Response, body: bytes, answered: str | None, path: str
) -> None:
    """A download's ``x-splice-integrity``, when sent, must name the bytes it came with or the
    integrity of the registry's version answer (``answered``, when this client read one).

    One that names neither is the registry contradicting itself: ``INTEGRITY_MISMATCH``.
    Otherwise the installer holds the bytes to the metadata and the lock as it always does
    (``INTEGRITY_MISMATCH``, or ``LOCK_MISMATCH`` first for a locked version), so a header
    that differs from the metadata never installs (docs/compatibility.md#install-pipeline).
    """
    declared = response.headers.get(INTEGRITY_HEADER)
    actual = integrity_of(body)
    if declared is None or declared in (actual, answered):
        return
    said = [f"metadata: {answered}"] if answered is not None else []
    raise RegistryError(
        ErrorCode.INTEGRITY_MISMATCH,
        f"The registry sent {path} with an {INTEGRITY_HEADER} header that matches neither "
        "its bytes nor its metadata",
        details=[f"header: {declared[:80]}", f"bytes: {actual}", *said],
        hint="The registry may be misbehaving or compromised; nothing was used or kept.",
    )


def _declared_length(response: requests.Response, limit: int) -> int | None:
    """The answer's ``content-length`` when it is a decimal number, at most ``limit + 1`` (any
    larger length is just over the cap); None when absent or not a number. ASCII digits only:
    ``str.isdigit()`` also accepts ``²``, which ``int()`` refuses, as it refuses 4,300 digits
    or more, and a registry chooses its headers."""
    return capped_count(response.headers.get("content-length", ""), limit)


def _expected_size(response: requests.Response, limit: int) -> int:
    """The size a download's deadline is scaled by: the declared length, at most the cap."""
    declared = _declared_length(response, limit)
    return min(declared, limit) if declared is not None else limit


def _read_capped(response: requests.Response, limit: int, path: str, budget: Budget) -> bytes:
    declared = _declared_length(response, limit)
    if declared is not None and declared > limit:
        raise _too_large(path, limit)
    chunks: list[bytes] = []
    total = 0
    for chunk in response.iter_content(CHUNK):
        if budget.expired():
            raise _Expired
        total += len(chunk)
        if total > limit:
            raise _too_large(path, limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _read_error_body(response: requests.Response, budget: Budget) -> bytes:
    """At most ``MAX_ERROR_BYTES`` of an error answer: the rest is dropped, not refused, so an
    oversized body still reports its status (a 401 stays ``UNAUTHENTICATED``)."""
    chunks: list[bytes] = []
    total = 0
    for chunk in response.iter_content(CHUNK):
        if budget.expired():
            raise _Expired
        chunks.append(chunk[: MAX_ERROR_BYTES - total])
        total += len(chunks[-1])
        if total >= MAX_ERROR_BYTES:
            break
    return b"".join(chunks)


class _Expired(Exception):
    """The reading thread saw the deadline pass between chunks; the waiting thread reports it."""


def _too_large(path: str, limit: int) -> RegistryError:
    return RegistryError(
        ErrorCode.REGISTRY_ERROR,
        f"Registry error: the answer to {path} is larger than {limit} bytes",
        hint="The registry may be misbehaving; nothing was kept.",
    )


def _error(response: requests.Response, raw: bytes) -> RegistryError:
    message: str | None = None
    details: list[str] = []
    server_code: str | None = None
    try:
        body = decode(raw, max_bytes=MAX_ERROR_BYTES)
    except UntrustedJsonError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        message = error.get("message") if isinstance(error.get("message"), str) else None
        server_code = error.get("code") if isinstance(error.get("code"), str) else None
        raw = error.get("details")
        if isinstance(raw, list):
            details = [str(item) for item in raw]
    return error_for_status(
        response.status_code,
        message,
        details,
        server_code=server_code,
        retry_after=response.headers.get("retry-after"),
    )


def _unreachable_hint(base_url: str, exc: requests.RequestException) -> str:
    """What to do about a registry that could not be reached. A connection refused on this
    machine is a registry that is not running (the ``local`` alias before ``splice registry
    serve``): "check your network" sent a new user looking at the wrong thing."""
    from urllib.parse import urlsplit

    import requests

    host = urlsplit(base_url).hostname or ""
    refused = isinstance(exc, requests.ConnectionError) and "refused" in str(exc).lower()
    if refused and (host.startswith("127.") or host in ("::1", "localhost")):
        return (
            f"Nothing listens at {base_url}: start it (`splice registry serve`), or check the "
            "URL (`splice config get registry`)."
        )
    return "Check the URL (`splice config get registry`) and your network."
