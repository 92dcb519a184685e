"""`splice registry serve --json` prints `{"url"}` on stdout once it listens (docs/cli.md).

It printed nothing there: a caller that asked for JSON had to scrape the banner on stderr
for the address, and SIGTERM, the server's normal stop, left the INTERRUPTED failure as the
only document. As `splice mcp --http --json`: the address document once the socket listens
(with `--workers` too, before the workers start), and a later failure is text on stderr.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from pathlib import Path

from testing.registry_server import serve_argv


def test_serve_json_prints_its_url_once_listening(tmp_path: Path) -> None:
    for workers in ("1", "2"):
        data = tmp_path / f"data{workers}"
        argv = [*serve_argv(data, "--workers", workers), "--json"]
        with subprocess.Popen(
            argv,
            env=os.environ,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as process:
            assert process.stderr is not None
            banner = process.stderr.readline()  # written just before the document
            url = banner.split("Registry listening on ", 1)[1].split(" ", 1)[0]
            with urllib.request.urlopen(url + "/health", timeout=10) as response:
                assert response.status == 200
            process.send_signal(signal.SIGTERM)  # its normal stop: exit 0, nothing more
            stdout, stderr = process.communicate(timeout=60)
        port = int(url.rsplit(":", 1)[1])
        assert stdout == json.dumps({"url": f"http://127.0.0.1:{port}"}, indent=2) + "\n"
        assert process.returncode == 0, stderr  # a clean stop (splice_build/stopping.py)
        assert banner.startswith(f"Registry listening on {url} (data: {data}, admin API: ")
        assert "INTERRUPTED" not in stderr, stderr
