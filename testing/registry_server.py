"""Start the real registry server (``splice registry serve``) as a subprocess for tests.

The server binds port 0 on 127.0.0.1 and announces its URL on stderr; the helper reads that
line, then waits for ``GET /health``. ``stop()`` terminates it; ``kill()`` is ``kill -9``.
With a ``StoreBackend`` (``testing.registry_backends``) the server and the admin CLI get the
environment that selects its stores (PostgreSQL + S3, or the data directory).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from testing.cli import foreground_signals, splice_executable

if TYPE_CHECKING:
    from testing.registry_backends import StoreBackend

_LISTENING = re.compile(r"Registry listening on (http://\S+)")
ADMIN_TOKEN = "splice_admin-token-for-tests-only-000000000000000"
ADMIN_TOKEN_SHA256 = hashlib.sha256(ADMIN_TOKEN.encode()).hexdigest()


@dataclass
class RunningRegistry:
    url: str
    data: Path
    process: subprocess.Popen[str]
    env: dict[str, str] = field(default_factory=dict)  # store selection, for admin commands
    backend: StoreBackend | None = None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


def launch(
    argv: Sequence[str],
    data: Path,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 20,
    ignored: Sequence[int] = (),
) -> RunningRegistry:
    """Run ``argv`` (a server that prints the listening line) and wait until it is healthy;
    its stop signals as in a terminal's foreground whatever this process's, but ``ignored``
    (``testing.cli.foreground_signals``)."""
    full_env = {**os.environ, **(env or {})}
    process = subprocess.Popen(
        list(argv),
        preexec_fn=foreground_signals(*ignored),
        env=full_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + timeout
    assert process.stderr is not None
    url = None
    seen = []
    while url is None:
        line = process.stderr.readline()
        if not line:
            raise AssertionError(f"registry server exited early: {''.join(seen)}")
        seen.append(line)
        match = _LISTENING.search(line)
        url = match.group(1) if match else None
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError("registry server did not announce its URL")
    running = RunningRegistry(url, data, process, dict(env or {}))
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as response:
                if response.status == 200:
                    return running
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                running.stop()
                raise AssertionError("registry server never became healthy") from None
            time.sleep(0.05)


def serve_argv(data: Path, *extra: str) -> list[str]:
    return [splice_executable(), "registry", "serve", "--port", "0", "--data", str(data), *extra]


@contextmanager
def registry_server(
    data: Path,
    *extra: str,
    admin: bool = True,
    env: Mapping[str, str] | None = None,
    backend: StoreBackend | None = None,
) -> Iterator[RunningRegistry]:
    """The real server on a free 127.0.0.1 port with its store in ``data`` (or ``backend``)."""
    server_env = {**(backend.env if backend else {}), **(env or {})}
    if admin:
        server_env["SPLICE_REGISTRY_ADMIN_TOKEN_SHA256"] = ADMIN_TOKEN_SHA256
    running = launch(serve_argv(data, *extra), data, env=server_env)
    running.backend = backend
    try:
        yield running
    finally:
        running.stop()


def python_server_argv(script: str) -> list[str]:
    """A server started by a test's own Python script (e.g. with a crash hook patched in)."""
    return [sys.executable, "-c", script]


def admin(server: RunningRegistry, *args: str) -> str:
    """`splice registry admin --data <server data> ARGS` (must succeed); its stdout."""
    from testing.cli import run_splice

    done = run_splice("registry", "admin", *args, "--data", str(server.data), env=server.env)
    assert done.code == 0, done.stderr
    return done.stdout.strip()


def user_token(server: RunningRegistry, name: str, *extra: str) -> str:
    """Create user ``name`` if needed and return a fresh managing token (``--out``: a 0600
    file next to the data directory, read and removed here)."""
    from testing.cli import run_splice

    run_splice("registry", "admin", "create-user", name, "--data", str(server.data), env=server.env)
    path = server.data.parent / f"token-{name}-{os.urandom(4).hex()}"
    admin(server, "create-token", name, *extra, "--out", str(path))
    try:
        return path.read_text(encoding="utf-8").strip()
    finally:
        path.unlink()
