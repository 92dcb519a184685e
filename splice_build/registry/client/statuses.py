"""HTTP status → client error code: the one table of docs/compatibility.md#error-codes.

The embedded client routes service errors through the server's code → status table and then
this one, so both clients report the same codes for the same failure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from splice_build.errors import ErrorCode, RegistryError

CODE_BY_STATUS: Mapping[int, ErrorCode] = {
    401: ErrorCode.UNAUTHENTICATED,
    403: ErrorCode.FORBIDDEN,
    404: ErrorCode.PACKAGE_NOT_FOUND,
    409: ErrorCode.VERSION_EXISTS,
    422: ErrorCode.INVALID_PACKAGE,
    429: ErrorCode.RATE_LIMITED,
    503: ErrorCode.REGISTRY_UNAVAILABLE,
}
# Server codes the client reports as themselves: mapping them by status alone would call a
# conflicting key VERSION_EXISTS and a bad signature INVALID_PACKAGE (docs/compatibility.md#signatures).
KEPT_SERVER_CODES = frozenset(
    {
        ErrorCode.KEY_EXISTS,
        ErrorCode.KEY_REVOKED,
        ErrorCode.KEY_NOT_REGISTERED,
        ErrorCode.INVALID_SIGNATURE,
    }
)
_HINTS: Mapping[ErrorCode, str] = {
    ErrorCode.UNAUTHENTICATED: "Log in with `splice login` or set SPLICE_TOKEN.",
    ErrorCode.VERSION_EXISTS: "Published versions are immutable: bump the version and publish again.",
    ErrorCode.KEY_NOT_REGISTERED: "Register the key first: `splice keys register @<namespace>`.",
    ErrorCode.KEY_REVOKED: "Generate a new key (`splice keys generate <name>`) and register it.",
}


# A registry's error is shown to people: its message, a bounded number of its details and a
# wait in whole seconds, each cut short (the body may be 64 KiB of details, one line each).
MAX_ERROR_DETAILS = 50
MAX_ERROR_TEXT = 1000
_SECONDS = re.compile(r"[0-9]{1,9}")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_ERROR_TEXT else text[:MAX_ERROR_TEXT] + "…"


def error_for_status(
    status: int,
    message: str | None,
    details: Sequence[str] = (),
    *,
    server_code: str | None = None,
    retry_after: str | None = None,
) -> RegistryError:
    """The client error for a non-2xx answer; the server's own code is kept as a detail.

    Splice's hint quotes ``retry-after`` only when it is a number of seconds: any other text
    there would speak in Splice's voice (``hint: Retry after 5 s. First run …``)."""
    code = CODE_BY_STATUS.get(status, ErrorCode.REGISTRY_ERROR)
    if server_code in KEPT_SERVER_CODES:
        code = ErrorCode(server_code)
    text = _cut(message or f"HTTP {status}")
    if code is ErrorCode.REGISTRY_ERROR:
        text = f"Registry error: {text}"
    extra = [_cut(detail) for detail in details[:MAX_ERROR_DETAILS]]
    if len(details) > MAX_ERROR_DETAILS:
        extra.append(f"and {len(details) - MAX_ERROR_DETAILS} more")
    if server_code and server_code != str(code):
        extra.append(f"registry code: {_cut(server_code)}")
    hint = _HINTS.get(code)
    if retry_after and _SECONDS.fullmatch(retry_after.strip()):
        hint = f"Retry after {retry_after.strip()} s."
        extra.append(f"retry-after: {retry_after.strip()}")
    return RegistryError(code, text, details=extra, hint=hint)
