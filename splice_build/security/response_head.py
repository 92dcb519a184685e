"""A response's head as a fetch client may see it: header names are tokens, values and the
reason phrase hold no control character.

http.client keeps what a server sends (``X: a\\x00b``, a folded ``a\\r\\n b``, ``X@: v``)
and the tool's ``Headers`` (runtime/host/fetch_headers.mjs) take the parent's lines as
already checked, so they are checked here, for every hop, as Node's parser does: a folded
value is unfolded to one space, and any other control character (HTAB aside) or a name
that is not a token fails the request with Node's cause ``HPE_INVALID_HEADER_TOKEN``.

A head larger than Node's 16 KiB (``http.maxHeaderSize``) fails as Node's fetch fails it,
``UND_ERR_HEADERS_OVERFLOW``. http.client allows 100 lines of 64 KiB each: such a head,
JSON-escaped into the sandbox's ``fetch-head`` frame (a ``"`` takes two bytes), outgrew the
8 MiB a host accepts from its channel (runtime/host/channel.mjs) and failed the whole call
with ``IPC frame too large``, an error the tool could not catch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from splice_build.security.net_errors import NetworkFailure

CAUSE_INVALID_HEADER = "HPE_INVALID_HEADER_TOKEN"
CAUSE_HEADERS_OVERFLOW = "UND_ERR_HEADERS_OVERFLOW"
# Node's limit on a response head: the status line and the header lines with their CRLFs.
MAX_HEAD_BYTES = 16 * 1024
_STATUS_LINE_BYTES = len("HTTP/1.1 200 \r\n")
# An HTTP token (RFC 9110): a header name or a method; the sandbox's request frames are
# checked with it too (runtime/protocol.py).
HTTP_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FOLD = re.compile(r"\r\n[ \t]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def checked_head(
    reason: str, lines: Iterable[tuple[str, str]], host: str
) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``(reason, ((lower-case name, value), …))``; raises NetworkFailure for a bad or an
    oversized head."""
    if _CONTROL.search(reason):
        raise _invalid(host, "status line")
    # http.client decodes a head as Latin-1: one character per byte.
    size = _STATUS_LINE_BYTES + len(reason)
    _bounded(size, host)
    checked = []
    for name, value in lines:
        size += len(name) + len(value) + 4  # ": " and CRLF
        _bounded(size, host)
        unfolded = _FOLD.sub(" ", value)
        if not HTTP_TOKEN.fullmatch(name) or _CONTROL.search(unfolded):
            raise _invalid(host, "header")
        checked.append((name.lower(), unfolded))
    return reason, tuple(checked)


def _bounded(size: int, host: str) -> None:
    if size > MAX_HEAD_BYTES:
        raise NetworkFailure(
            f'Request to "{host}" failed: the response head is larger than {MAX_HEAD_BYTES} bytes',
            cause=CAUSE_HEADERS_OVERFLOW,
        )


def _invalid(host: str, part: str) -> NetworkFailure:
    return NetworkFailure(
        f'Request to "{host}" failed: the response has an invalid {part}',
        cause=CAUSE_INVALID_HEADER,
    )
