"""Body limits, rate limits and crash safety of the real server, on each store back end."""

from __future__ import annotations

import http.client
import json
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import requests

from splice_build.registry.service.ratelimit import RateLimits
from testing.cli import run_splice
from testing.rate_windows import away_from_window_ends
from testing.registry import artifact, package_dir
from testing.registry_backends import StoreBackend
from testing.registry_server import (
    launch,
    python_server_argv,
    registry_server,
    serve_argv,
    user_token,
)


def _raw_post(url: str, head: str, body_part: bytes) -> tuple[bytes, float]:
    """Send headers and only part of a body; return the response the server gives anyway."""
    parts = urlsplit(url)
    start = time.monotonic()
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(head.encode() + body_part)
        answer = sock.recv(65536)
    return answer, time.monotonic() - start


def test_oversize_bodies_are_413_without_reading_them(server) -> None:
    token = user_token(server, "oversize")  # an unknown client is 401 before any body check
    declared = (
        "POST /publish HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/gzip\r\n\r\n"
    )
    answer, _ = _raw_post(server.url, declared, b"\x1f\x8b")  # 100 MiB announced, 2 bytes sent
    assert answer.startswith(b"HTTP/1.1 413")
    chunked = "POST /auth/tokens HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunk = b"x" * 70_000
    answer, _ = _raw_post(
        server.url, chunked, b"%x\r\n" % len(chunk) + chunk + b"\r\n"
    )  # never terminated
    assert answer.startswith(b"HTTP/1.1 413")


def test_an_unauthenticated_publish_is_401_before_its_body_is_read(server) -> None:
    """Otherwise every connection of an unknown client makes the server hold up to 5 MiB
    (1,024 connections: 5 GiB). The answer comes with nothing of the body sent."""
    parts = urlsplit(server.url)
    for authorization in (None, "Bearer splice_" + "u" * 43):
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        connection.putrequest("POST", "/publish")
        connection.putheader("content-length", "5000000")
        connection.putheader("content-type", "application/gzip")
        if authorization is not None:
            connection.putheader("authorization", authorization)
        connection.endheaders()  # the head only: not a byte of the body
        answer = connection.getresponse()
        assert answer.status == 401
        assert json.loads(answer.read())["error"]["code"] == "UNAUTHENTICATED"
        connection.close()


def _window() -> int:
    """The server's publish window now (service/ratelimit.py: fixed windows of 60 s)."""
    return int(time.time() // 60)


def test_rate_limits_answer_429_with_retry_after(tmp_path: Path, backend: StoreBackend) -> None:
    """With ``--publish-limit 2`` a third publish in one window is refused. The windows are
    fixed, so publishes that straddle a boundary may all pass: the test publishes until one
    is refused (a refusal must come within two windows, five publishes) and checks the third
    when the first three ran within one window, as they do unless the machine is slow."""
    with registry_server(backend.data, "--publish-limit", "2", backend=backend) as server:
        token = user_token(server, "busy")
        spans: list[tuple[int, int]] = []
        refused = None
        for patch in range(7):
            directory = package_dir(tmp_path / "p", "busy", "x", f"1.0.{patch}")
            before = _window()
            done = run_splice(
                "publish",
                str(directory),
                "--registry",
                server.url,
                "--json",
                env={"SPLICE_TOKEN": token},
            )
            spans.append((before, _window()))
            if done.code != 0:
                refused = done
                break
        assert refused is not None, spans
        assert refused.code == 1 and refused.json()["error"]["code"] == "RATE_LIMITED"
        assert len(spans) >= 3, spans  # two publishes fit in any window
        within_one = spans[0][0] == spans[2][1]
        assert len(spans) == 3 or not within_one, spans
        bad = {"authorization": "Bearer splice_" + "B" * 43}
        away_from_window_ends(RateLimits().failed_auth_period, margin=15)  # 21 in one window
        statuses = [
            requests.get(server.url + "/auth/whoami", headers=bad, timeout=5).status_code
            for _ in range(20)
        ]
        assert set(statuses) == {401}
        blocked = requests.get(server.url + "/auth/whoami", headers=bad, timeout=5)
        assert blocked.status_code == 429 and blocked.headers["retry-after"] == "600"
        # a valid token from the same address still works (docs/registry.md#abuse-limits)
        valid = {"authorization": f"Bearer {token}"}
        assert requests.get(server.url + "/auth/whoami", headers=valid, timeout=5).ok


CRASH_SERVER = """
import os, signal, sys
from pathlib import Path
from splice_build.registry.db.postgres import PostgresMetadataStore
from splice_build.registry.db.sqlite import SqliteMetadataStore
from splice_build.registry.http.server import serve
from splice_build.registry.service.ratelimit import RateLimits
from splice_build.registry.storage import StorageConfig

def crash(self, new, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)  # kill -9 after the artifact write, before the commit

SqliteMetadataStore.insert_version = crash
PostgresMetadataStore.insert_version = crash
serve(Path(sys.argv[1]), host="127.0.0.1", port=0, admin_token_sha256=None, limits=RateLimits(),
      on_listen=lambda url: print("Registry listening on", url, file=sys.stderr, flush=True),
      config=StorageConfig.from_env(os.environ))
"""


def test_crash_between_artifact_and_metadata_then_retry(
    tmp_path: Path, backend: StoreBackend
) -> None:
    data = backend.data
    with registry_server(data, backend=backend) as first:
        token = user_token(first, "crashy")
    archive = artifact(tmp_path / "p", "crashy", "pkg", "1.0.0")
    crashing = launch([*python_server_argv(CRASH_SERVER), str(data)], data, env=backend.env)
    try:
        try:
            requests.post(
                crashing.url + "/publish",
                data=archive,
                headers={"authorization": f"Bearer {token}"},
                timeout=30,
            )
        except requests.ConnectionError:
            pass
        else:
            raise AssertionError("the crashing server answered")
        assert crashing.process.wait(timeout=10) == -9
    finally:
        crashing.stop()
    assert list(backend.artifacts().values()) == [archive]  # the artifact made it
    restarted = launch(serve_argv(data), data, env=backend.env)
    try:
        assert (
            requests.get(restarted.url + "/packages/crashy/pkg/1.0.0", timeout=5).status_code == 404
        )
        retry = requests.post(
            restarted.url + "/publish",
            data=archive,
            headers={"authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert retry.status_code == 201, retry.text
        assert (
            requests.get(restarted.url + "/packages/crashy/pkg/1.0.0/download", timeout=5).content
            == archive
        )
    finally:
        restarted.stop()
