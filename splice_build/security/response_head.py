"""A response's head as a fetch client may see it: header names are tokens, values and the
reason phrase hold no control character.

http.client keeps what a server sends (``X: a\\x00b``, a folded ``a\\r\\n b``, ``X@: v``)
and the tool's ``Headers`` (runtime/host/fetch_headers.mjs) take the parent's lines as
already checked, so they are checked here, for every hop, as Node's parser does: a folded
value is unfolded to one space, and any other control character (HTAB aside) or a name
that is not a token fails the request with Node's cause ``HPE_INVALID_HEADER_TOKEN``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from splice_build.security.net_errors import NetworkFailure

CAUSE_INVALID_HEADER = "HPE_INVALID_HEADER_TOKEN"
# An HTTP token (RFC 9110): a header name or a method; the sandbox's request frames are
# checked with it too (runtime/protocol.py).
HTTP_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FOLD = re.compile(r"\r\n[ \t]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def checked_head(
    reason: str, lines: Iterable[tuple[str, str]], host: str
) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``(reason, ((lower-case name, value), …))``; raises NetworkFailure for a bad head."""
    if _CONTROL.search(reason):
        raise _invalid(host, "status line")
    checked = []
    for name, value in lines:
        unfolded = _FOLD.sub(" ", value)
        if not HTTP_TOKEN.fullmatch(name) or _CONTROL.search(unfolded):
            raise _invalid(host, "header")
        checked.append((name.lower(), unfolded))
    return reason, tuple(checked)


def _invalid(host: str, part: str) -> NetworkFailure:
    return NetworkFailure(
        f'Request to "{host}" failed: the response has an invalid {part}',
        cause=CAUSE_INVALID_HEADER,
    )
