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
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import requests


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

        def get_redirect_target(self, resp: requests.Response) -> None:
            """None: ``send`` and ``resolve_redirects`` then neither read nor follow."""
            return None

    return NoRedirectTarget


def new_session() -> requests.Session:
    """A ``requests.Session`` whose ``send`` never reads a redirect's body or ``Location``,
    and whose jar never keeps a cookie."""
    return _session_class()()
