"""The registry server's log cannot drive the operator's terminal nor forge a log line
(docs/registry.md, docs/security.md#terminal-output).

A client chooses the path it requests, and the server logs the path of a request that failed
unexpectedly. Every code point of the categories Cc, Cf, Zl and Zp (the C1 range included),
percent-encoded in a path, reaches the log escaped, on the log line's own line.
"""

from __future__ import annotations

import logging
import sys
import unicodedata
from pathlib import Path
from urllib.parse import quote

import requests

from splice_build.security.log_format import RedactingFormatter
from testing.registry_server import launch, python_server_argv

_WALKED = frozenset({"Cc", "Cf", "Zl", "Zp"})
_RAW = _WALKED | {"Cs", "Co", "Cn"}
EVERY = "".join(
    chr(point) for point in range(sys.maxunicode + 1) if unicodedata.category(chr(point)) in _WALKED
)


def raw_code_points(text: str) -> list[str]:
    """What ``terminal_safe`` would have escaped (a traceback keeps its newlines and tabs)."""
    return [f"U+{ord(c):04X}" for c in text if c not in "\n\t" and unicodedata.category(c) in _RAW]


def test_a_record_and_its_traceback_are_shown_escaped_and_the_message_on_one_line() -> None:
    try:
        raise RuntimeError(f"boom {EVERY}")
    except RuntimeError:
        record = logging.LogRecord(
            "splice", logging.ERROR, __file__, 1, "failed on %s", (EVERY,), sys.exc_info()
        )
    text = RedactingFormatter("%(levelname)s %(name)s: %(message)s").format(record)
    assert raw_code_points(text) == []
    head, *traceback = text.split("\n")
    assert head.startswith("ERROR splice: failed on \\x00\\x01")  # every line break escaped
    assert "\t" not in head
    assert traceback[0] == "Traceback (most recent call last):"
    assert "RuntimeError: boom \\x00\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\t" in traceback


CRASHING_SERVER = """
import sys
from pathlib import Path
from splice_build.registry.http.server import serve
from splice_build.registry.service.ratelimit import RateLimits
from splice_build.registry.service.registry_service import RegistryService

def fail(self, *args):
    raise RuntimeError("a bug")

RegistryService.package_document = fail  # the route of /packages/{ns}/{name}
serve(Path(sys.argv[1]), host="127.0.0.1", port=0, admin_token_sha256=None, limits=RateLimits(),
      on_listen=lambda url: print("Registry listening on", url, file=sys.stderr, flush=True))
"""


def test_a_request_path_in_the_servers_log_is_escaped(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = launch([*python_server_argv(CRASHING_SERVER), str(data)], data)
    try:
        answer = requests.get(f"{server.url}/packages/acme/{quote(EVERY, safe='')}", timeout=10)
        assert answer.status_code == 500
        assert answer.json()["error"]["code"] == "INTERNAL_ERROR"
    finally:
        server.stop()
    assert server.process.stderr is not None
    log = server.process.stderr.read()
    assert raw_code_points(log) == []
    [line] = [line for line in log.splitlines() if "unexpected failure" in line]
    assert line.startswith("ERROR splice_build.registry.http.app: unexpected failure on GET ")
    assert line.endswith(": RuntimeError")
