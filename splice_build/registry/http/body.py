"""Request bodies read with a limit enforced while streaming (413 as soon as it is passed).

A declared ``content-length`` over the limit is refused before a byte is read; a body that
lies about its length, or is chunked, is cut off at the first chunk that crosses the limit.
"""

from __future__ import annotations

from starlette.requests import Request

from splice_build.errors import ErrorCode, RegistryError


def too_large(limit: int) -> RegistryError:
    return RegistryError(ErrorCode.PAYLOAD_TOO_LARGE, f"Request body exceeds {limit} bytes")


async def read_limited(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            length = int(declared)
        except ValueError as exc:
            raise RegistryError(ErrorCode.BAD_REQUEST, "Invalid content-length") from exc
        if length > limit:
            raise too_large(limit)
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)
