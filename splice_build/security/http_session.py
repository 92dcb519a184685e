"""The ``requests`` session of every HTTP client of Splice: one that never reads a redirect
nor keeps a cookie.

Splice's clients follow no redirect through ``requests``: the registry client reports one as
an error (registry/client/http.py) and the guarded session checks each hop itself
(security/guarded_http.py), both with ``allow_redirects=False`` and ``stream=True``. Even so,
``requests.Session.send`` prepares the next request of a redirect for ``Response.next``: it
reads the redirect's whole body (``resp.content``, decompressed, past every cap the caller
sets on the bodies it reads) and parses its ``Location`` (a byte that is not UTF-8 raised
``UnicodeDecodeError``, an unclosed ``[`` ``ValueError``, neither a ``RequestException``).
A server chose both: a 302 with 400 KB of gzip made a client hold 850 MB. This session names
no redirect target, so ``send`` prepares nothing and leaves the body to the caller.

Nor does it keep a cookie. ``requests`` stores every ``Set-Cookie`` of every answer in the
session's jar and sends the whole jar back with each later request to that host. No client of
Splice uses cookies (the registry's credential is a token header), but a registry chose what
its answers set: 90 new cookies of 8 KB per answer, over 42 pages of a version list a
registry may split as it likes, made ``splice info`` send a 29 MB ``Cookie`` header and hold
204 MB for 13 s, growing with the square of the pages. The jar parses and stores nothing.

And no line of a chunked body is longer than ``MAX_CHUNK_LINE``. http.client bounds each
line of the head, but urllib3 reads a chunk's size line and the trailer lines with a bare
``readline()``: a 200 whose first size line never ended made ``splice info`` hold 2.9 GB
in 12 s (then ``MemoryError``, ``INTERNAL_ERROR``), and more until the request's deadline
on a machine with more memory. A longer line is ``http.client.LineTooLong``, which urllib3
reports as a broken answer (``requests.exceptions.ChunkedEncodingError``).
"""

from __future__ import annotations

import functools
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import requests

# A chunk's size line is its size in hexadecimal, perhaps with extensions; a trailer line is
# a header line, which http.client bounds at 64 KiB as well.
MAX_CHUNK_LINE = 64 * 1024


@functools.cache
def _session_class() -> type[requests.Session]:
    import requests  # imported only by a command that makes a request
    from requests.cookies import RequestsCookieJar

    class NoCookies(RequestsCookieJar):
        """A jar that stays empty: what an answer sets is neither parsed nor kept."""

        def set_cookie(self, cookie: object, *args: object, **kwargs: object) -> None:
            return None

        def extract_cookies(self, response: object, request: object) -> None:
            return None

    class NoRedirectTarget(requests.Session):
        def __init__(self) -> None:
            super().__init__()
            self.cookies = NoCookies()
            self.hooks["response"].append(_bound_lines)

        def get_redirect_target(self, resp: requests.Response) -> None:
            """None: ``send`` and ``resolve_redirects`` then neither read nor follow."""
            return None

    return NoRedirectTarget


def new_session() -> requests.Session:
    """A ``requests.Session`` whose ``send`` never reads a redirect's body or ``Location``,
    and whose jar never keeps a cookie."""
    return _session_class()()


class _BoundedLines:
    """The socket file of an answer whose ``readline`` reads at most ``MAX_CHUNK_LINE``
    bytes; everything else is the file's own."""

    def __init__(self, file: IO[bytes]) -> None:
        self._file = file

    def readline(self, limit: int = -1) -> bytes:
        import http.client

        if 0 <= limit <= MAX_CHUNK_LINE:
            return self._file.readline(limit)
        line = self._file.readline(MAX_CHUNK_LINE + 1)
        if len(line) > MAX_CHUNK_LINE:
            raise http.client.LineTooLong("chunked body line")
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


def _bound_lines(response: requests.Response, *args: object, **kwargs: object) -> None:
    """Before any of its body is read, bound the lines urllib3 reads from ``response``."""
    head = getattr(response.raw, "_fp", None)  # http.client's answer, read by urllib3
    file = getattr(head, "fp", None)
    if file is not None and not isinstance(file, _BoundedLines):
        head.fp = _BoundedLines(file)
