"""A download answer streamed from the store, ``CHUNK_BYTES`` at a time, within a write deadline.

Held whole, an answer kept its artifact (up to 5 MiB) in memory until its client had read it
all: 200 clients that asked for a large download and never read grew the server by about
a gigabyte. Streamed, a connection holds at most one chunk plus the transport's write buffer,
which uvicorn lets grow to its high-water mark (64 KiB) before the next chunk waits for the
client to read (docs/registry.md#connections).

The whole answer must be written within ``write_seconds(size)``: the deadline the registry
client gives itself for a download of that size (docs/registry.md#deadlines, its defaults, as
``body.py`` gives request bodies), so no client within its own deadline is cut off. Past it
(or if the stored file can no longer be read, or ends before its size) the connection is aborted, what it still buffers
dropped (``connections.ABORT_EXTENSION``): the client sees a short body, never a complete
answer with other bytes, and holds nothing any longer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from splice_build.connections import ABORT_EXTENSION
from splice_build.registry.blobs.interface import BlobReader
from splice_build.registry.http import body

CHUNK_BYTES = 65536


def write_seconds(size: int) -> float:
    """How long an answer of ``size`` bytes may take to be written (``body.CLIENT_DEADLINES``)."""
    return body.CLIENT_DEADLINES.for_download(size)


class ArtifactResponse(Response):
    """``blob`` with ``headers`` and its exact ``content-length``."""

    def __init__(self, blob: BlobReader, headers: Mapping[str, str], media_type: str) -> None:
        self.status_code = 200
        self.media_type = media_type
        self.background = None
        self.blob = blob
        self.init_headers({**headers, "content-length": str(blob.size)})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with asyncio.timeout(write_seconds(self.blob.size)):
                await self._send(scope, send)
        except (TimeoutError, OSError):
            await _abort(scope, receive)

    async def _send(self, scope: Scope, send: Send) -> None:
        headers = {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
        await send(headers)
        if scope["method"] == "HEAD":
            # The headers alone: uvicorn drops a HEAD answer's body, so reading it cost the
            # store the whole artifact for no byte sent (20 pipelined HEADs of a 4 MB
            # artifact read 80 MB, and as fast as the store gave it: no client read to wait for).
            await send({"type": "http.response.body", "body": b""})
            return
        offset = 0
        while offset < self.blob.size:
            count = min(CHUNK_BYTES, self.blob.size - offset)
            chunk = await run_in_threadpool(self.blob.read, offset, count)
            if len(chunk) != count:
                raise OSError(f"the stored artifact ended before its size ({self.blob.size})")
            offset += count
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


async def _abort(scope: Scope, receive: Receive) -> None:
    """Abort the connection, then wait for the server to report it gone (the answer is then
    neither finished nor an error of the app)."""
    scope["extensions"][ABORT_EXTENSION]()
    while (await receive())["type"] != "http.disconnect":
        pass
