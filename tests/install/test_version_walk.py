"""A registry whose version pages never end cannot hold `splice info` or `splice add` forever.

The registry here is a real HTTP server on 127.0.0.1 that says a package's version list is
truncated, then answers every ``/versions`` page with a cursor of its choosing: two cursors in
turn, a new cursor for every empty page, or a version it already listed. Each walk is refused
as the malformed answer it is (``REGISTRY_ERROR``), and the project is left as it was.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from testing.cli import run_splice
from testing.netservers import serve_handler
from testing.project_state import state_bytes

PACKAGE = "@acme/greeter"
# (cursor asked for, number of the page) -> the page
Pages = Callable[[str | None, int], dict[str, Any]]


def _alternating(cursor: str | None, number: int) -> dict[str, Any]:
    return {"name": PACKAGE, "versions": [], "nextCursor": "b" if cursor == "a" else "a"}


def _ever_new_empty(cursor: str | None, number: int) -> dict[str, Any]:
    return {"name": PACKAGE, "versions": [], "nextCursor": f"page-{number + 1}"}


def _same_version_again(cursor: str | None, number: int) -> dict[str, Any]:
    entry = {"version": "1.0.0", "integrity": "sha256-" + "0" * 64}
    return {"name": PACKAGE, "versions": [entry], "nextCursor": f"page-{number + 1}"}


WALKS: dict[str, Pages] = {
    "two-cursors-in-turn": _alternating,
    "a-new-cursor-for-every-empty-page": _ever_new_empty,
    "one-version-on-every-page": _same_version_again,
}


@contextmanager
def _endless_registry(pages: Pages) -> Iterator[str]:
    counter = itertools.count()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/packages/acme/greeter":
                body: dict[str, Any] | None = {
                    "name": PACKAGE,
                    "versions": [{"version": "1.0.0"}],
                    "latest": "1.0.0",
                    "versionsTruncated": True,
                }
            elif url.path == "/packages/acme/greeter/versions":
                cursor = parse_qs(url.query).get("cursor", [None])[0]
                body = pages(cursor, next(counter))
            else:
                body = None
            data = json.dumps(body or {"error": {"code": "NOT_FOUND"}}).encode()
            self.send_response(200 if body is not None else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    with serve_handler(Handler) as url:
        yield url


@pytest.mark.parametrize("walk", sorted(WALKS))
@pytest.mark.parametrize("command", ["info", "add"])
def test_a_version_walk_that_never_ends_is_a_registry_error(
    tmp_path: Path, walk: str, command: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    assert run_splice("init", cwd=project).code == 0
    before = state_bytes(project)
    with _endless_registry(WALKS[walk]) as url:
        done = run_splice("--json", "--registry", url, command, PACKAGE, cwd=project, timeout=60)
    assert done.code == 1, done.stdout + done.stderr
    error = done.json()["error"]
    assert error["code"] == "REGISTRY_ERROR", error
    assert "/versions" in error["message"]
    assert state_bytes(project) == before
