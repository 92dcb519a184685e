"""A server started ignoring a stop signal (``nohup splice mcp --http &``; a background job's
SIGINT) keeps ignoring it.

The CLI turned SIGHUP into ``INTERRUPTED`` whatever its disposition at start, and the HTTP
server and the registry supervisor took it as a stop: the terminal's hangup at logout
stopped the server that ``nohup`` was there to keep (exit 129). Python keeps an ignored
SIGINT ignored the same way.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from splice_build.stopping import Stop, graceful_server
from testing.mcp_clients import child_env

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")


def test_splice_mcp_started_ignoring_sighup_ignores_it(tmp_path: Path) -> None:
    """Before: exit 129, 'interrupted by SIGHUP'. After the hangup the server still answers
    and ends normally when its client closes stdin."""
    (tmp_path / "splice.json").write_text('{"specVersion": 1, "packages": {}}')
    env = child_env({"HOME": str(tmp_path), "SPLICE_HOME": str(tmp_path / ".splice")})
    process = subprocess.Popen(
        [sys.executable, "-c", "from splice_build.cli.main import entry; entry()", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),  # as nohup does
    )
    assert process.stdin is not None and process.stdout is not None
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode() + b"\n"
    process.stdin.write(ping)
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == 1  # serving, its handlers set
    process.send_signal(signal.SIGHUP)
    process.stdin.write(ping.replace(b'"id": 1', b'"id": 2'))
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == 2
    _out, err = process.communicate(b"", timeout=60)
    assert process.returncode == 0, err.decode()
    assert b"INTERRUPTED" not in err and b"interrupted" not in err, err.decode()


@pytest.mark.parametrize("ignored", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_the_http_servers_leave_an_ignored_stop_signal_ignored(ignored: signal.Signals) -> None:
    """Each stop signal in turn ignored at start: it stays ignored while the server serves
    and after, and the others are the server's. uvicorn took SIGINT whatever its
    disposition: a server a shell started in the background stopped on ^C (exit 0)."""
    import uvicorn

    server = graceful_server(uvicorn.Config(app=None), Stop(grace=0), lambda: None)
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    saved = {signum: signal.getsignal(signum) for signum in stops}
    for signum in stops:  # whatever this test process had (a background run ignores SIGINT)
        signal.signal(signum, signal.SIG_IGN if signum == ignored else signal.SIG_DFL)
    try:
        with server.capture_signals():
            serving = {signum: signal.getsignal(signum) for signum in stops}
        after = signal.getsignal(ignored)
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
    assert serving[ignored] == signal.SIG_IGN and after == signal.SIG_IGN
    assert all(serving[s] == server.handle_exit for s in stops if s != ignored)


def test_a_registry_started_in_the_background_ignores_sigint(tmp_path: Path) -> None:
    """``splice registry serve &`` from a script (SIGINT ignored, as a shell starts a
    background job): ^C to the script leaves it serving; SIGTERM still stops it, exit 0.
    Before: it stopped on SIGINT and exited 0."""
    from testing.registry_server import launch, serve_argv

    data = tmp_path / "data"
    server = launch(serve_argv(data), data, ignored=[signal.SIGINT])
    try:
        server.process.send_signal(signal.SIGINT)
        with pytest.raises(subprocess.TimeoutExpired):
            server.process.wait(timeout=1)
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=30) == 0
    finally:
        server.stop()
