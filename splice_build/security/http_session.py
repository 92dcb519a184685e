"""The ``requests`` session of every HTTP client of Splice: one that never reads a redirect.

Splice's clients follow no redirect through ``requests``: the registry client reports one as
an error (registry/client/http.py) and the guarded session checks each hop itself
(security/guarded_http.py), both with ``allow_redirects=False`` and ``stream=True``. Even so,
``requests.Session.send`` prepares the next request of a redirect for ``Response.next``: it
reads the redirect's whole body (``resp.content``, decompressed, past every cap the caller
sets on the bodies it reads) and parses its ``Location`` (a byte that is not UTF-8 raised
``UnicodeDecodeError``, an unclosed ``[`` ``ValueError``, neither a ``RequestException``).
A server chose both: a 302 with 400 KB of gzip made a client hold 850 MB. This session names
no redirect target, so ``send`` prepares nothing and leaves the body to the caller.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import requests


@functools.cache
def _session_class() -> type[requests.Session]:
    import requests  # imported only by a command that makes a request

    class NoRedirectTarget(requests.Session):
        def get_redirect_target(self, resp: requests.Response) -> None:
            """None: ``send`` and ``resolve_redirects`` then neither read nor follow."""
            return None

    return NoRedirectTarget


def new_session() -> requests.Session:
    """A ``requests.Session`` whose ``send`` never reads a redirect's body or ``Location``."""
    return _session_class()()
