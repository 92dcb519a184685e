"""Errors of the Python network guard (``targets``, ``guarded_http``).

Tree::

    SpliceError
    ├── NetworkDenied        PERMISSION_DENIED: the policy refused the target (``reason``)
    └── NetworkFailure       NETWORK_ERROR: the request failed (DNS, connect, TLS, protocol)
        ├── NetworkTimeout   TIMEOUT: the time limit was reached
        └── ResponseTooLarge RESPONSE_TOO_LARGE: the body is over the size limit

``NetworkFailure.cause`` names what happened in the words Node uses for ``err.cause.code``
of a failed ``fetch`` (``ENOTFOUND``, ``ECONNREFUSED``, ``UNABLE_TO_VERIFY_LEAF_SIGNATURE``,
…; ``net_causes.py`` derives it), or is None when there is no such code (too many
redirects, a refused redirect mode).
"""

from __future__ import annotations

from splice_build.errors import ErrorCode, SpliceError

# Machine reasons of a refusal (the sandbox's fetch exposes them as ``err.reason``).
REASON_SCHEME = "scheme"
REASON_CREDENTIALS = "credentials"
REASON_NOT_DECLARED = "not-declared"
REASON_NOT_PUBLIC = "not-public"

# Cause codes Splice itself defines (the others are errno and OpenSSL names).
CAUSE_TOO_LARGE = "ERR_SPLICE_RESPONSE_TOO_LARGE"
CAUSE_INVALID_RESPONSE = "ERR_SPLICE_INVALID_RESPONSE"
CAUSE_TIMEOUT = "ETIMEDOUT"


class NetworkDenied(SpliceError):
    """The network policy refused a URL, a redirect hop or a DNS answer.

    ``host`` is the refused host when there is one (an invalid scheme has none)."""

    def __init__(self, message: str, reason: str, *, host: str | None = None) -> None:
        super().__init__(ErrorCode.PERMISSION_DENIED, message)
        self.reason = reason
        self.host = host


class NetworkFailure(SpliceError):
    """The request could not be completed (what Node reports as ``TypeError('fetch failed')``)."""

    def __init__(
        self, message: str, code: ErrorCode = ErrorCode.NETWORK_ERROR, *, cause: str | None = None
    ) -> None:
        super().__init__(code, message)
        self.cause = cause


class NetworkTimeout(NetworkFailure):
    def __init__(self, message: str) -> None:
        super().__init__(message, ErrorCode.TIMEOUT, cause=CAUSE_TIMEOUT)


class ResponseTooLarge(NetworkFailure):
    def __init__(self, message: str) -> None:
        super().__init__(message, ErrorCode.RESPONSE_TOO_LARGE, cause=CAUSE_TOO_LARGE)
