"""Request bodies read with a limit enforced while streaming (413 as soon as it is passed).

A declared ``content-length`` over the limit is refused before a byte is read; a body that
lies about its length, or is chunked, is cut off at the first chunk that crosses the limit.
A client that leaves before its body is complete is a ``BAD_REQUEST`` nobody reads, not an
unexpected failure: a connection displaced while its body arrives
(splice_build/connections.py) must not cost the server a traceback in its log.

The whole body must arrive within ``body_seconds(limit)`` of the head (``408 TIMEOUT``,
docs/registry.md#limits): by default the deadline the registry client gives itself for a
request of that size (docs/registry.md#deadlines, its defaults), so no client within its own
deadline is cut off, and a client that sends a head and never the body does not hold a
request forever. ``splice registry serve --body-deadline SECONDS`` replaces the base of it
(``BODY_DEADLINES``, kept in the app's state).

A body still arriving when the server's grace at its stop is over is answered 503
``SERVER_STOPPING`` with ``retry-after`` (``BODY_READS``, splice_build/body_reads.py), not
cancelled with a traceback.
"""

from __future__ import annotations

from starlette.requests import ClientDisconnect, Request

from splice_build.body_reads import BodyReads
from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.client.deadline import Deadlines
from splice_build.registry.service.status import RetryLaterError
from splice_build.spec.number_text import capped_count

# What the registry client gives itself with its defaults (registry/client/deadline.py): the
# server holds a request body, and a download it writes (download.py), to the same.
CLIENT_DEADLINES = Deadlines()
# The app state's name for the ``Deadlines`` whose ``for_download`` is a body's deadline.
BODY_DEADLINES = "body_deadlines"
# The app state's name for the ``BodyReads`` its server's stop ends.
BODY_READS = "body_reads"
STOPPING_RETRY_SECONDS = 5  # a restarted server (or another behind the proxy) is soon there


def body_seconds(limit: int, deadlines: Deadlines = CLIENT_DEADLINES) -> float:
    """How long a body of at most ``limit`` bytes may take, once the head is in."""
    return deadlines.for_download(limit)


def too_large(limit: int) -> RegistryError:
    return RegistryError(ErrorCode.PAYLOAD_TOO_LARGE, f"Request body exceeds {limit} bytes")


async def read_limited(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        # ASCII digits, any number of them (spec/number_text.py): int() also read "+5",
        # " 5", "1_0" and other scripts' digits, and refused a length padded to 4,300 zeros.
        length = capped_count(declared, limit)
        if length is None:
            raise RegistryError(ErrorCode.BAD_REQUEST, "Invalid content-length")
        if length > limit:
            raise too_large(limit)
    chunks: list[bytes] = []
    total = 0
    seconds = body_seconds(limit, getattr(request.app.state, BODY_DEADLINES, CLIENT_DEADLINES))
    reads: BodyReads = getattr(request.app.state, BODY_READS, None) or BodyReads()
    try:
        async with reads.within(seconds):
            async for chunk in request.stream():
                total += len(chunk)
                if total > limit:
                    raise too_large(limit)
                chunks.append(chunk)
    except TimeoutError as exc:
        if reads.ended:
            raise RetryLaterError(
                ErrorCode.SERVER_STOPPING,
                "Server stopping: the request body was not complete when it stopped",
                retry_after=STOPPING_RETRY_SECONDS,
            ) from exc
        raise RegistryError(
            ErrorCode.TIMEOUT, f"Request body not complete within {seconds:g} s"
        ) from exc
    except ClientDisconnect as exc:
        raise RegistryError(
            ErrorCode.BAD_REQUEST, "The client left before its request body was complete"
        ) from exc
    return b"".join(chunks)
