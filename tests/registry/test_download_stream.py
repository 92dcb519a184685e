"""Downloads of `splice registry serve` streamed from the store within a write deadline
(splice_build/registry/http/download.py, docs/registry.md#connections), attacked for real:
clients that ask for a large artifact and never read, against the real server process."""

from __future__ import annotations

import http.client
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from splice_build.spec.digests import integrity_of
from splice_build.spec.pack import pack_directory
from testing.open_files import room_for_sockets
from testing.packages import minimal_manifest, write_package
from testing.registry_server import (
    RunningRegistry,
    launch,
    python_server_argv,
    serve_argv,
    user_token,
)

DOWNLOAD = b"GET /packages/acme/greeter/1.0.0/download HTTP/1.1\r\nHost: x\r\n\r\n"
CLIENTS = 200
ABORTED = "test: download aborted"
MIB = 1 << 20

# The real server, its write deadline 1 s whatever the size (body.py's CLIENT_DEADLINES), and a
# line on stderr once it has aborted a download, so the test knows without a clock.
QUICK_DEADLINE_SERVER = """
import sys
from splice_build.cli.main import main
from splice_build.registry.client.deadline import Deadlines
from splice_build.registry.http import body, download
body.CLIENT_DEADLINES = Deadlines(1.0, 10**12)
abort = download._abort

async def reported(scope, receive):
    await abort(scope, receive)
    print(ABORTED, file=sys.stderr, flush=True)

download._abort = reported
sys.exit(main(sys.argv[1:]))
""".replace("ABORTED", repr(ABORTED))


# The real server, with a line on stderr for every chunk of an artifact it reads.
CHUNK_READ = "test: artifact chunk read"
COUNTING_SERVER = """
import sys
from splice_build.cli.main import main
from splice_build.registry.http import download
pool = download.run_in_threadpool

async def counted(work, *args):
    print(CHUNK_READ, file=sys.stderr, flush=True)
    return await pool(work, *args)

download.run_in_threadpool = counted
sys.exit(main(sys.argv[1:]))
""".replace("CHUNK_READ", repr(CHUNK_READ))


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    with room_for_sockets() as opened:
        yield opened


def publish_large(server: RunningRegistry, tmp_path: Path) -> bytes:
    """A 4.5 MB artifact (the cap is 5 MiB) that does not compress: more than the sockets'
    buffers hold."""
    files = {f"data/{n}.bin": os.urandom(1_500_000) for n in "abc"}
    archive = pack_directory(write_package(tmp_path / "pkg", minimal_manifest(), files)).archive
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    token = user_token(server, "acme")
    connection.request("POST", "/publish", archive, {"authorization": f"Bearer {token}"})
    assert connection.getresponse().status == 201
    connection.close()
    return archive


def never_reading(server: RunningRegistry) -> socket.socket:
    """A client that asks for the download and never reads it (a small receive buffer)."""
    parts = urlsplit(server.url)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(60)
    sock.connect((parts.hostname, parts.port))
    sock.sendall(DOWNLOAD)
    return sock


def rss(pid: int) -> int:
    """The resident memory of process ``pid`` in bytes (``VmRSS`` of /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS line")


def download(server: RunningRegistry) -> tuple[dict[str, str], bytes]:
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    connection.request("GET", "/packages/acme/greeter/1.0.0/download")
    answer = connection.getresponse()
    assert answer.status == 200
    body = answer.read()
    connection.close()
    return {name.lower(): value for name, value in answer.getheaders()}, body


def rss_growth_with_never_reading_clients(
    server: RunningRegistry, tmp_path: Path, sockets: list[socket.socket]
) -> int:
    """How much the server's RSS grows while ``CLIENTS`` clients each have the first bytes
    of a 4.5 MB download and read none of the rest."""
    publish_large(server, tmp_path)
    download(server)  # the route's first run: its code and pools are in memory
    before = rss(server.process.pid)
    for _ in range(CLIENTS):
        sockets.append(never_reading(server))
    for sock in sockets:  # every answer has started: whatever the server holds, it holds now
        assert sock.recv(1, socket.MSG_PEEK) == b"H"
    return rss(server.process.pid) - before


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_never_reading_clients_cost_the_server_a_bounded_buffer_each(
    tmp_path: Path, sockets: list[socket.socket]
) -> None:
    """Before, each answer held what of the artifact the kernel had not taken until its
    client read it: 200 clients grew the server by 479 MiB (to 521 MiB). Streamed, each holds
    at most a chunk and the write buffer (64 KiB each); 256 KiB apiece leaves room for the
    allocator."""
    server = launch(serve_argv(tmp_path / "data"), tmp_path / "data")
    try:
        growth = rss_growth_with_never_reading_clients(server, tmp_path, sockets)
        assert growth < CLIENTS * MIB // 4, f"{growth / MIB:.0f} MiB"
    finally:
        # The clients leave first: a server stopped with their answers unwritten waited for
        # them until ``stop`` killed it (10 s).
        for sock in sockets:
            sock.close()
        sockets.clear()
        server.stop()


def head_then_health(server: RunningRegistry) -> bytes:
    """A HEAD of the download, then ``GET /health`` on the same connection: once the health
    answer is here, the HEAD's answer was finished (a connection's requests are answered in
    turn). Everything received."""
    parts = urlsplit(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        sock.sendall(
            DOWNLOAD.replace(b"GET", b"HEAD")
            + b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        received = b""
        while chunk := sock.recv(1 << 16):
            received += chunk
    return received


def test_a_download_keeps_its_bytes_and_headers(tmp_path: Path) -> None:
    """Streamed in chunks, the answer is the artifact with the headers of
    docs/compatibility.md#registry-api and its exact content-length. A HEAD answers the same
    headers and reads no chunk of the artifact: it read all of it before, for no byte sent
    (20 pipelined HEADs of a 4 MB artifact made the server read 80 MB)."""
    data = tmp_path / "data"
    server = launch([*python_server_argv(COUNTING_SERVER), *serve_argv(data)[1:]], data)
    try:
        archive = publish_large(server, tmp_path)
        headers, body = download(server)
        received = head_then_health(server)
    finally:
        server.stop()
    assert server.process.stderr is not None
    chunks_read = server.process.stderr.read().splitlines().count(CHUNK_READ)
    assert chunks_read == -(-len(archive) // 65536)  # the GET's chunks, none for the HEAD
    head_answer, health_answer = received.split(b"HTTP/1.1 ")[1:]
    assert head_answer.startswith(b"200 OK\r\n")
    assert f"content-length: {len(archive)}\r\n".encode() in head_answer
    assert head_answer.endswith(b"\r\n\r\n")  # the headers only
    assert health_answer.startswith(b"200 OK\r\n")
    assert body == archive
    assert headers["content-length"] == str(len(archive))
    assert headers["x-splice-integrity"] == integrity_of(archive)
    assert headers["content-type"] == "application/gzip"
    assert headers["content-disposition"] == 'attachment; filename="acme-greeter-1.0.0.tar.gz"'
    assert headers["cache-control"] == "public, max-age=31536000, immutable"
    assert "transfer-encoding" not in headers


def test_a_client_that_reads_too_slowly_is_cut_off_at_its_deadline(
    tmp_path: Path, sockets: list[socket.socket]
) -> None:
    """The answer must be written within the deadline the client gives itself for that size;
    a client that never reads is then cut off: the connection is closed, the body short."""
    data = tmp_path / "data"
    argv = [*python_server_argv(QUICK_DEADLINE_SERVER), *serve_argv(data)[1:]]
    server = launch(argv, data)
    try:
        archive = publish_large(server, tmp_path)
        sock = never_reading(server)
        assert sock.recv(1, socket.MSG_PEEK) == b"H"  # the answer started
        assert server.process.stderr is not None
        assert server.process.stderr.readline().strip() == ABORTED  # past the deadline
        received = b""
        while chunk := sock.recv(1 << 16):  # ends when the server has closed the connection
            received += chunk
        sock.close()
        head, _, body = received.partition(b"\r\n\r\n")
        assert f"content-length: {len(archive)}".encode() in head.lower()
        assert len(body) < len(archive)
    finally:
        server.stop()
    assert server.process.stderr is not None
    log = server.process.stderr.read()
    assert "Traceback" not in log, log[-4000:]
    assert "ERROR" not in log, log[-4000:]


def test_the_deadline_is_the_clients_own_for_that_size() -> None:
    """docs/registry.md#deadlines: 60 s + size / 65536 B/s with the client's defaults."""
    from splice_build.registry.http.download import write_seconds

    assert write_seconds(5 * MIB) == 60 + 80
    assert write_seconds(0) == 60
