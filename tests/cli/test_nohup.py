"""A server started ignoring SIGHUP (``nohup splice mcp --http &``) keeps ignoring it.

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


def test_the_http_server_leaves_an_ignored_sighup_ignored() -> None:
    import uvicorn

    server = graceful_server(uvicorn.Config(app=None), Stop(grace=0), lambda: None)
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with server.capture_signals():
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)
