"""The gzip layer of package artifacts: a byte-exact writer and a bounded reader.

Writer (docs/compatibility.md#archive-format): a fixed 10-byte header (mtime 0, XFL 0, OS 255), DEFLATE *stored*
blocks of at most 65535 bytes written by hand (never zlib compression, whose output differs
between zlib versions and levels), then CRC-32 and ISIZE. The same input gives the same bytes
here and in the TypeScript Splice.

Reader: inflates untrusted input with ``zlib.decompressobj`` in bounded steps and stops as soon
as the output passes the limit, so a decompression bomb never allocates more than the limit plus
one step. Archives from other gzip implementations are accepted, including multi-member streams
(RFC 1952 2.2: a gzip file is a series of members; ``cat a.gz b.gz`` is valid gzip, and zlib's and
Node's gunzip read it). Anything after the last member that is not another member is rejected, as
are a truncated stream and a bad CRC-32 or ISIZE.
"""

from __future__ import annotations

import struct
import zlib

from splice_build.errors import ErrorCode, SpecError

GZIP_MAGIC = b"\x1f\x8b"
# ID1 ID2 CM=deflate FLG=0 MTIME=0 XFL=0 OS=255 (unknown): docs/compatibility.md#archive-format.
_STORED_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
_MAX_STORED_BLOCK = 0xFFFF  # LEN is 16 bits (RFC 1951 3.2.4)
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # zlib parses the gzip header and checks CRC-32 + ISIZE

# Reader step sizes: small enough that a bomb's overshoot stays tiny, large enough to be fast.
_INPUT_STEP = 64 * 1024
_OUTPUT_STEP = 256 * 1024


def starts_stored(data: bytes) -> bytes | None:
    """The start of the first stored block's data when ``data`` begins as ``gzip_stored``
    writes (its fixed header, then a stored block's header), else ``None``."""
    head = len(_STORED_HEADER) + 5  # BFINAL/BTYPE byte, LEN, NLEN
    if not data.startswith(_STORED_HEADER) or len(data) < head:
        return None
    if data[len(_STORED_HEADER)] & 0b110:  # BTYPE 00: stored
        return None
    return data[head:]


def gzip_stored(data: bytes) -> bytes:
    """Wrap ``data`` in a deterministic gzip member made of stored (uncompressed) blocks."""
    view = memoryview(data)
    parts = [_STORED_HEADER]
    starts = range(0, max(len(view), 1), _MAX_STORED_BLOCK)
    for index, start in enumerate(starts):
        block = view[start : start + _MAX_STORED_BLOCK]
        final = 1 if index == len(starts) - 1 else 0
        length = len(block)
        parts.append(struct.pack("<BHH", final, length, length ^ 0xFFFF))
        parts.append(bytes(block))
    parts.append(struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF))
    return b"".join(parts)


def _not_gzip(reason: str, *, offset: int) -> SpecError:
    return SpecError(
        ErrorCode.INVALID_PACKAGE,
        "Archive is not valid gzip",
        details=[f"gzip stream at byte {offset}: {reason}"],
    )


def _too_big(limit: int) -> SpecError:
    return SpecError(
        ErrorCode.INVALID_PACKAGE,
        f"Archive expands beyond {limit} bytes",
        details=[f"gzip stream: inflation stopped after {limit} bytes"],
    )


def _inflate_member(view: memoryview, start: int, out: bytearray, limit: int) -> int:
    """Inflate the member starting at ``start`` into ``out``; return where the member ends."""
    inflater = zlib.decompressobj(wbits=_GZIP_WBITS)
    position = start
    while position < len(view):
        pending: bytes | memoryview = view[position : position + _INPUT_STEP]
        position += len(pending)
        while True:
            step = min(_OUTPUT_STEP, limit + 1 - len(out))
            try:
                piece = inflater.decompress(pending, step)
            except zlib.error as exc:
                raise _not_gzip(str(exc), offset=start) from exc
            out += piece
            if len(out) > limit:
                raise _too_big(limit)
            if inflater.eof:
                return position - len(inflater.unused_data)
            pending = inflater.unconsumed_tail
            # A full step may leave output buffered inside zlib: drain it before moving on.
            if not pending and len(piece) < step:
                break
    raise _not_gzip("truncated (no end of member)", offset=start)


def gunzip_bounded(data: bytes, *, limit: int) -> bytearray:
    """Inflate a gzip stream of one or more members, refusing to produce more than ``limit``.

    Returns the buffer itself (no final copy, so the peak stays near ``limit``). Raises SpecError(INVALID_PACKAGE) for invalid, truncated or trailing data and for output
    beyond ``limit``.
    """
    view = memoryview(data)
    out = bytearray()
    position = 0
    while True:
        if view[position : position + 2] != GZIP_MAGIC:
            raise _not_gzip("expected a gzip member (1f 8b)", offset=position)
        position = _inflate_member(view, position, out, limit)
        if position == len(view):
            return out
