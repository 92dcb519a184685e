"""Errors of the Python network guard (``targets``, ``guarded_http``).

Tree::

    SpliceError
    ├── NetworkDenied        PERMISSION_DENIED: the policy refused the target (``reason``)
    └── NetworkFailure       NETWORK_ERROR: the request failed (DNS, connect, TLS, protocol)
        ├── NetworkTimeout   TIMEOUT: the time limit was reached
        └── ResponseTooLarge RESPONSE_TOO_LARGE: the body is over the size limit
"""

from __future__ import annotations

from splice_build.errors import ErrorCode, SpliceError

# Machine reasons of a refusal; the Node guard uses the same strings (net_target.mjs).
REASON_SCHEME = "scheme"
REASON_CREDENTIALS = "credentials"
REASON_NOT_DECLARED = "not-declared"
REASON_NOT_PUBLIC = "not-public"


class NetworkDenied(SpliceError):
    """The network policy refused a URL, a redirect hop or a DNS answer."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(ErrorCode.PERMISSION_DENIED, message)
        self.reason = reason


class NetworkFailure(SpliceError):
    """The request could not be completed (what Node reports as ``TypeError('fetch failed')``)."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.NETWORK_ERROR) -> None:
        super().__init__(code, message)


class NetworkTimeout(NetworkFailure):
    def __init__(self, message: str) -> None:
        super().__init__(message, ErrorCode.TIMEOUT)


class ResponseTooLarge(NetworkFailure):
    def __init__(self, message: str) -> None:
        super().__init__(message, ErrorCode.RESPONSE_TOO_LARGE)
