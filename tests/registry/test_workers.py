"""`splice registry serve --workers N` (docs/registry.md#workers), against the real server.

Which worker answers is made certain by stopping the other one (SIGSTOP): a stopped process
accepts nothing, so every fresh connection goes to the one left running. That shows each
worker serves, and that a lockout or a rate limit spent through one is enforced by the other
(their windows live in the store, SQLite or PostgreSQL). The supervisor restarts a killed
worker with a log line, and SIGTERM (or a parent killed outright) leaves no process behind.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from splice_build.registry.service.ratelimit import RateLimits
from splice_build.registry.storage import DB_FILE
from testing.cli import run_splice
from testing.mcp_clients import child_env, closed_by_server, read_by_the_server
from testing.rate_windows import away_from_window_ends
from testing.registry_backends import StoreBackend
from testing.registry_server import RunningRegistry, registry_server, user_token

BUDGET = RateLimits().failed_auth
BOGUS = "splice_" + "x" * 43
REQUESTS = 3  # --request-limit of the shared-limit test


def _workers(server: RunningRegistry) -> list[int]:
    pid = server.process.pid
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return sorted(int(p) for p in text.split())


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@contextmanager
def _only(running: int, stopped: list[int]) -> Iterator[int]:
    """Stop every worker in ``stopped``: fresh connections reach ``running`` alone."""
    for pid in stopped:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield running
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)


def _whoami(server: RunningRegistry, token: str) -> int:
    headers = {"authorization": f"Bearer {token}"}  # a fresh connection every time
    return requests.get(f"{server.url}/auth/whoami", headers=headers, timeout=10).status_code


def _two_workers(
    data: Path, backend: StoreBackend, *extra: str
) -> AbstractContextManager[RunningRegistry]:
    return registry_server(data, "--workers", "2", "--publish-limit", "0", *extra, backend=backend)


def test_each_worker_serves_and_limits_are_shared(
    new_backend: Callable[..., StoreBackend], tmp_path: Path
) -> None:
    backend = new_backend()
    with _two_workers(tmp_path / "data", backend, "--request-limit", str(REQUESTS)) as server:
        first, second = _workers(server)
        token = user_token(server, "alice")
        away_from_window_ends(60)
        away_from_window_ends(RateLimits().failed_auth_period)
        with _only(first, [second]):
            assert requests.get(server.url + "/health", timeout=10).status_code == 200
            for _ in range(BUDGET):
                assert _whoami(server, BOGUS) == 401
            for _ in range(REQUESTS - 1):
                assert _whoami(server, token) == 200
        with _only(second, [first]):
            assert requests.get(server.url + "/health", timeout=10).status_code == 200
            assert _whoami(server, BOGUS) == 429, "the lockout spent through the other worker"
            assert _whoami(server, token) == 200, "a valid token still passes"
            assert _whoami(server, token) == 429, "the request limit counts both workers"
        assert _workers(server) == [first, second], "no worker died meanwhile"


def test_concurrent_failures_cannot_exceed_the_budget(
    new_backend: Callable[..., StoreBackend], tmp_path: Path
) -> None:
    """Failures racing through two workers: exactly ``BUDGET`` get 401, every other one 429."""
    backend = new_backend()
    with _two_workers(tmp_path / "data", backend, "--request-limit", "0") as server:
        away_from_window_ends(RateLimits().failed_auth_period, margin=30)
        with ThreadPoolExecutor(16) as pool:
            codes = list(pool.map(lambda _: _whoami(server, BOGUS), range(BUDGET * 3)))
        assert sorted(set(codes)) == [401, 429]
        assert codes.count(401) == BUDGET, codes


def _stderr_line(server: RunningRegistry, needle: str, timeout: float = 20) -> str:
    stream = server.process.stderr
    assert stream is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.5)
        if ready:
            line = stream.readline()
            if needle in line:
                return line
    raise AssertionError(f"no log line with {needle!r}")


def test_a_killed_worker_is_started_again(tmp_path: Path) -> None:
    with registry_server(tmp_path / "data", "--workers", "2") as server:
        victim, survivor = _workers(server)
        os.kill(victim, signal.SIGKILL)
        line = _stderr_line(server, f"(pid {victim}) was killed by SIGKILL")
        assert "starting it again" in line
        _wait_for(lambda: len(_workers(server)) == 2, "a second worker")
        workers = _workers(server)
        assert survivor in workers and victim not in workers
        (replacement,) = set(workers) - {survivor}
        with _only(replacement, [survivor]):
            _wait_for(
                lambda: requests.get(server.url + "/health", timeout=10).status_code == 200,
                "the new worker to answer",
            )


def _gone(pid: int) -> bool:
    """Ended: no such process, or a zombie waiting for whoever adopted it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _stopped_by(server: RunningRegistry, sig: signal.Signals) -> int:
    server.process.send_signal(sig)
    return server.process.wait(timeout=30)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_leaves_no_process(tmp_path: Path, sig: signal.Signals) -> None:
    with registry_server(tmp_path / "one", "--workers", "1") as server:
        single = _stopped_by(server, sig)
    assert single == (0 if sig == signal.SIGTERM else 128 + sig)  # a service's stop is clean
    with registry_server(tmp_path / "data", "--workers", "2") as server:
        workers = _workers(server)
        assert _stopped_by(server, sig) == single, "the exit code of one worker"
        _wait_for(lambda: all(_gone(pid) for pid in workers), "the workers to end")
        with pytest.raises(requests.ConnectionError):
            requests.get(server.url + "/health", timeout=5)


def test_an_upload_still_arriving_at_the_cut_is_answered_server_stopping(tmp_path: Path) -> None:
    """A publish whose body still trickled in when the server stopped held it for the grace
    and uvicorn's 2 s, was then cancelled, and uvicorn logged an "Exception in ASGI
    application" traceback (a real ``splice registry serve``: exit after 12.1 s). Its read
    ends at the cut now, answered 503 ``SERVER_STOPPING`` with ``retry-after``; the second
    SIGTERM here ends the grace at once."""
    with registry_server(tmp_path / "data", admin=False) as server:
        token = user_token(server, "alice")
        parts = urlsplit(server.url)
        head = (
            f"POST /publish HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n"
        )
        with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
            sock.sendall(head.encode() + b"x" * 100)
            _wait_for(lambda: read_by_the_server(sock), "the server to take the body's start")
            server.process.send_signal(signal.SIGTERM)
            time.sleep(0.2)
            server.process.send_signal(signal.SIGTERM)
            answer = closed_by_server(sock, time.monotonic() + 30)
        code = server.process.wait(timeout=30)
        stderr = server.process.stderr.read() if server.process.stderr else ""
    assert answer is not None and answer.startswith(b"HTTP/1.1 503 "), (answer, stderr)
    head_of_answer, _, body = answer.partition(b"\r\n\r\n")
    assert b"retry-after: 5" in head_of_answer.lower()
    assert json.loads(body)["error"]["code"] == "SERVER_STOPPING"
    assert code == 0 and "Traceback" not in stderr, stderr


# The supervisor (one worker) in a process of its own: the worker sends it the stop signal,
# then a second one once it is told to stop, and notes how its own stop ends.
_SECOND_SIGNAL = """
import os, signal, sys, time
from splice_build.registry.http import workers

workers.STOP_TIMEOUT = 5.0  # the old code's bound: the worker is then killed
note = sys.argv[1]

def worker() -> None:
    told = []

    def stop(signum: int, frame: object) -> None:
        told.append(signum)
        if len(told) == 1:
            os.kill(os.getppid(), signal.SIGTERM)  # a second SIGTERM to a stopping supervisor
        else:
            with open(note, "w") as f:
                f.write("told again")
            raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    os.kill(os.getppid(), signal.SIGTERM)
    while True:  # a request in flight, for the worker's grace
        time.sleep(0.01)

workers.supervise(1, worker)
"""


def test_a_second_stop_signal_reaches_the_workers(tmp_path: Path) -> None:
    """A second SIGTERM or ^C to a stopping supervisor was taken and told to no worker, so
    with ``--workers`` it changed nothing: the requests in flight held the stop for the
    whole grace, 10 s and uvicorn's 2 s (a real ``splice registry serve --workers 2`` with two
    requests sending their bodies: exit after 12.2 s, one worker 2.3 s). Now it is passed on,
    and ends the workers' grace as it ends a single server's."""
    note = tmp_path / "note"
    done = subprocess.run(
        [sys.executable, "-c", _SECOND_SIGNAL, str(note)],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert note.is_file() and note.read_text() == "told again", done.stderr


def test_a_killed_parent_takes_its_workers_along(tmp_path: Path) -> None:
    with registry_server(tmp_path / "data", "--workers", "2") as server:
        workers = _workers(server)
        server.kill()
        _wait_for(lambda: all(_gone(pid) for pid in workers), "the orphaned workers to end")


def test_sqlite_store_is_in_wal_mode(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with registry_server(data, "--workers", "2") as server:
        assert len(_workers(server)) == 2
        conn = sqlite3.connect(data / DB_FILE)
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            conn.close()


def test_auto_starts_one_worker_per_core(tmp_path: Path) -> None:
    cores = len(os.sched_getaffinity(0))
    expected = cores if cores > 1 else 0  # one worker is the server itself, no supervisor
    with registry_server(tmp_path / "data", "--workers", "auto") as server:
        _wait_for(lambda: len(_workers(server)) == expected, "a worker per core")


@pytest.mark.parametrize("value", ["0", "-1", "two", "257"])
def test_bad_worker_counts_are_usage_errors(tmp_path: Path, value: str) -> None:
    done = run_splice(
        "registry", "serve", "--port", "0", "--data", str(tmp_path), "--workers", value
    )
    assert done.code == 2
    assert "--workers must be an integer from 1 to 256, or auto" in done.stderr
