"""What made a request fail, named as Node names it: the ``cause.code`` of a failed ``fetch``.

``failure_for(host, exc)`` turns an exception raised while connecting, sending or reading into
a ``NetworkFailure`` whose ``cause`` a tool can test (``err.cause.code === 'ECONNREFUSED'``):
the errno name of a socket error, ``ENOTFOUND``/``EAI_AGAIN`` for name resolution, the
OpenSSL verification name for a certificate (``UNABLE_TO_VERIFY_LEAF_SIGNATURE``,
``CERT_HAS_EXPIRED``, ``ERR_TLS_CERT_ALTNAME_INVALID`` for a name mismatch), ``ETIMEDOUT``.
The exception chain is walked (``requests`` wraps urllib3, which wraps the socket error).
"""

from __future__ import annotations

import errno
import socket
import ssl

from splice_build.security.net_errors import NetworkFailure, NetworkTimeout

# OpenSSL X509_V_ERR_* codes (x509_vfy.h) under the names Node gives them.
_VERIFY_NAMES = {
    2: "UNABLE_TO_GET_ISSUER_CERT",
    9: "CERT_NOT_YET_VALID",
    10: "CERT_HAS_EXPIRED",
    18: "DEPTH_ZERO_SELF_SIGNED_CERT",
    19: "SELF_SIGNED_CERT_IN_CHAIN",
    20: "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
    21: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    23: "CERT_REVOKED",
    26: "INVALID_PURPOSE",
    62: "ERR_TLS_CERT_ALTNAME_INVALID",  # X509_V_ERR_HOSTNAME_MISMATCH
    64: "ERR_TLS_CERT_ALTNAME_INVALID",  # X509_V_ERR_IP_ADDRESS_MISMATCH
}
_DNS_NOT_FOUND = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and everything it wraps (``__cause__``, ``__context__``, urllib3's ``reason``)."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        item = todo.pop(0)
        if item is None or any(item is s for s in seen) or len(seen) > 16:
            continue
        seen.append(item)
        reason = getattr(item, "reason", None)
        todo.extend(
            [
                item.__cause__,
                item.__context__,
                reason if isinstance(reason, BaseException) else None,
            ]
        )
    return seen


def dns_cause(exc: OSError) -> str:
    if isinstance(exc, socket.gaierror) and exc.errno in _DNS_NOT_FOUND:
        return "ENOTFOUND"
    if isinstance(exc, socket.gaierror) and exc.errno == socket.EAI_AGAIN:
        return "EAI_AGAIN"
    return "ENOTFOUND" if isinstance(exc, socket.gaierror) else _errno_name(exc) or "EAI_FAIL"


def _errno_name(exc: OSError) -> str | None:
    return errno.errorcode.get(exc.errno) if isinstance(exc.errno, int) else None


def _tls_cause(exc: ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return _VERIFY_NAMES.get(exc.verify_code, "CERT_VERIFICATION_FAILED")
    reason = getattr(exc, "reason", None)
    return f"ERR_SSL_{reason}" if isinstance(reason, str) and reason else "ERR_SSL_FAILURE"


def failure_for(host: str, exc: BaseException) -> NetworkFailure:
    """The NetworkFailure (cause named) for ``exc``, raised while talking to ``host``."""
    chain = _chain(exc)
    for item in chain:
        if isinstance(item, NetworkFailure):
            return item
    for item in chain:
        if isinstance(item, ssl.SSLError):
            what = "verification" if isinstance(item, ssl.SSLCertVerificationError) else "handshake"
            return NetworkFailure(
                f'TLS {what} failed for "{host}": {item.reason or item}', cause=_tls_cause(item)
            )
    for item in chain:
        if isinstance(item, TimeoutError | socket.timeout) or "timed out" in str(item).lower():
            return NetworkTimeout(f'Request to "{host}" timed out')
    for item in chain:
        if isinstance(item, OSError) and _errno_name(item):
            name = _errno_name(item)
            return NetworkFailure(
                f'Request to "{host}" failed: {item.strerror or item}', cause=name
            )
    return NetworkFailure(f'Request to "{host}" failed: {exc}', cause=None)
