"""Server error code → HTTP status: the one table for the registry's error responses.

Used by the HTTP app (``http.errors``) and by the embedded client, which pushes service
errors through the same status mapping an HTTP client would see.
"""

from __future__ import annotations

from collections.abc import Mapping

from splice_build.errors import ErrorCode, RegistryError

STATUS_BY_CODE: Mapping[ErrorCode, int] = {
    ErrorCode.BAD_REQUEST: 400,
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.TOKEN_SCOPE: 403,
    ErrorCode.NAMESPACE_RESERVED: 403,
    ErrorCode.NAME_CONFUSABLE: 403,
    ErrorCode.ADMIN_DISABLED: 403,
    ErrorCode.KEY_NOT_REGISTERED: 403,
    ErrorCode.KEY_REVOKED: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.TIMEOUT: 408,
    ErrorCode.VERSION_EXISTS: 409,
    ErrorCode.USER_EXISTS: 409,
    ErrorCode.KEY_EXISTS: 409,
    ErrorCode.PAYLOAD_TOO_LARGE: 413,
    ErrorCode.INVALID_PACKAGE: 422,
    ErrorCode.DEPENDENCIES_UNSUPPORTED: 422,
    ErrorCode.INVALID_SIGNATURE: 422,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.INTERNAL_ERROR: 500,
    ErrorCode.ARTIFACT_STORAGE_FAILED: 502,
    ErrorCode.METADATA_WRITE_FAILED: 503,
    ErrorCode.STORAGE_UNAVAILABLE: 503,
    ErrorCode.SERVER_STOPPING: 503,
}


def status_for(code: ErrorCode) -> int:
    """Codes without an entry are server bugs leaking through: 500."""
    return STATUS_BY_CODE.get(code, 500)


class RetryLaterError(RegistryError):
    """An error answered with the number of seconds to wait (the HTTP ``retry-after``
    header): a rate limit's 429, a stopping server's 503."""

    def __init__(
        self, code: ErrorCode, message: str, *, retry_after: int, hint: str | None = None
    ) -> None:
        super().__init__(code, message, hint=hint)
        self.retry_after = retry_after
