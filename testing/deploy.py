"""Run the deployment of docs/deploy.md on loopback: Debian's nginx with docs/deploy/nginx.conf.

``render`` rewrites only the ports of that file (its listen ports and its upstream
addresses, each of which must be found, so the file and the test cannot drift apart);
``nginx`` wraps it in what Debian's /etc/nginx/nginx.conf provides around conf.d (pid, logs,
temporary directories, all in a test directory) and runs it in the foreground. The access log
names the upstream that answered each request and its ``mcp-session-id``, so a test can see
which instance served what.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from testing.switches import SWITCHES

REPO = Path(__file__).resolve().parent.parent
NGINX_CONF = REPO / "docs" / "deploy" / "nginx.conf"
PROXY_ADDRESS = "127.0.0.1"  # where nginx connects to the instances from (--trusted-proxy)
# The file's own addresses, by role.
REGISTRY_LISTEN = "listen 8787;"
MCP_LISTEN = "listen 8788;"
REGISTRY_UPSTREAMS = ("127.0.0.1:8801", "127.0.0.1:8802")
MCP_UPSTREAMS = ("127.0.0.1:8811", "127.0.0.1:8812")
START_TIMEOUT = 20.0
_LOG_FORMAT = (
    "log_format deploy '$remote_addr $request_method $uri $status "
    'upstream=$upstream_addr session="$http_mcp_session_id"\';'
)
_TEMP_PATHS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")


def missing_nginx() -> str | None:
    """Why nginx cannot run here, or None."""
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").is_file():
        return "nginx not found; install Debian's nginx (or nginx-light) package, as .ci/run does"
    return None


def nginx_required() -> bool:
    """CI (``SPLICE_TEST_REQUIRE_SERVICES=1``) fails where nginx is missing instead of skipping."""
    return SWITCHES.require_services


def nginx_executable() -> str:
    return shutil.which("nginx") or "/usr/sbin/nginx"


def render(
    text: str,
    *,
    registry_port: int,
    mcp_port: int,
    registry_upstreams: tuple[int, int],
    mcp_upstreams: tuple[int, int],
) -> str:
    """``text`` (the repository's nginx.conf) with its ports replaced; nothing else changes."""
    replacements = {
        REGISTRY_LISTEN: f"listen {PROXY_ADDRESS}:{registry_port};",
        MCP_LISTEN: f"listen {PROXY_ADDRESS}:{mcp_port};",
    }
    for old, port in zip(
        REGISTRY_UPSTREAMS + MCP_UPSTREAMS, registry_upstreams + mcp_upstreams, strict=True
    ):
        replacements[f"server {old} "] = f"server 127.0.0.1:{port} "
    for old, new in replacements.items():
        if text.count(old) != 1:
            raise AssertionError(f"BUG: {NGINX_CONF.name} must hold {old!r} exactly once")
        text = text.replace(old, new)
    return text


def _main_conf(root: Path, site: Path) -> str:
    temp = "\n".join(f"    {name}_temp_path {root / name};" for name in _TEMP_PATHS)
    # As root the workers would run as nobody and could not write the temporary directories.
    user = "user root;" if os.geteuid() == 0 else ""
    return f"""daemon off;
worker_processes 2;
pid {root / "nginx.pid"};
error_log {root / "error.log"} warn;
{user}
events {{ worker_connections 512; }}
http {{
    {_LOG_FORMAT}
    access_log {root / "access.log"} deploy;
{temp}
    include {site};
}}
"""


@dataclass
class RunningNginx:
    root: Path
    process: subprocess.Popen[bytes]
    registry_url: str
    mcp_url: str

    def access_log(self) -> list[str]:
        path = self.root / "access.log"
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []

    def error_log(self) -> str:
        path = self.root / "error.log"
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


@contextmanager
def nginx(
    root: Path,
    *,
    registry_upstreams: tuple[int, int],
    mcp_upstreams: tuple[int, int],
) -> Iterator[RunningNginx]:
    """nginx with the rendered configuration on free 127.0.0.1 ports; stopped afterwards."""
    root.mkdir(parents=True, exist_ok=True)
    registry_port, mcp_port = _free_port(), _free_port()
    site = root / "splice.conf"
    site.write_text(
        render(
            NGINX_CONF.read_text(encoding="utf-8"),
            registry_port=registry_port,
            mcp_port=mcp_port,
            registry_upstreams=registry_upstreams,
            mcp_upstreams=mcp_upstreams,
        ),
        encoding="utf-8",
    )
    main = root / "nginx.conf"
    main.write_text(_main_conf(root, site), encoding="utf-8")
    argv = [nginx_executable(), "-p", str(root), "-e", str(root / "error.log"), "-c", str(main)]
    checked = subprocess.run([*argv, "-t"], capture_output=True, text=True, timeout=30)
    if checked.returncode != 0:
        raise AssertionError(f"nginx -t refused the configuration: {checked.stderr}")
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    running = RunningNginx(
        root, process, f"http://127.0.0.1:{registry_port}", f"http://127.0.0.1:{mcp_port}/mcp"
    )
    try:
        _wait_listening(running, (registry_port, mcp_port))
        yield running
    finally:
        _stop(process)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(running: RunningNginx, ports: tuple[int, ...]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    for port in ports:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if running.process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"nginx did not start: {running.error_log()}") from None
                time.sleep(0.05)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGQUIT)  # graceful: workers finish their requests
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes


def request_from(source: str, url: str, *, headers: dict[str, str] | None = None) -> Answer:
    """``GET url`` on a new connection whose local address is ``source`` (any 127/8 address
    on Linux), so one machine plays several clients."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    conn = http.client.HTTPConnection(
        parts.hostname, parts.port, timeout=30, source_address=(source, 0)
    )
    try:
        conn.request("GET", parts.path or "/", headers=headers or {})
        response = conn.getresponse()
        return Answer(response.status, response.read())
    finally:
        conn.close()
