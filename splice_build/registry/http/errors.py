"""The one function that turns a ``SpliceError`` into an HTTP error response.

Body ``{"error": {"code", "message", "details"?}}`` (docs/compatibility.md#registry-api); 429 and a
stopping server's 503 add ``retry-after``. The status comes from ``service.status`` (one table keyed by error code).
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import Response

from splice_build.errors import SpliceError
from splice_build.registry.service.status import RetryLaterError, status_for
from splice_build.spec import json_text


def json_bytes(data: object) -> bytes:
    """The answer indented by 2, unless that would multiply it (``json_text.readable``): a
    published manifest of 2 MiB nesting a million numbers 400 levels deep was an 860 MB
    answer, 18-20 s of the server's CPU on the event loop, for every anonymous read."""
    return (json_text.readable(data) + "\n").encode("utf-8")


def error_response(exc: SpliceError, *, headers: Mapping[str, str] | None = None) -> Response:
    error: dict[str, object] = {"code": str(exc.code), "message": exc.message}
    if exc.details:
        error["details"] = list(exc.details)
    out = {"cache-control": "no-store", **(headers or {})}
    if isinstance(exc, RetryLaterError):
        out["retry-after"] = str(exc.retry_after)
    return Response(
        json_bytes({"error": error}),
        status_code=status_for(exc.code),
        media_type="application/json; charset=utf-8",
        headers=out,
    )
