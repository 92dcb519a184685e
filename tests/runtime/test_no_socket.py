"""A loopback TCP listener (IPv4 and IPv6) and a Unix-socket listener must see no byte and
no connection from any sandboxed tool, with and without network grants, through every route
a tool has: fetch in all its spellings (literal, mapped, decimal, a name resolving to
loopback, a Request, a dispatcher), every socket builtin by every import route, the internal
bindings, WebSocket/EventSource, undici's dispatcher, a fetch frame forged on the pipe, and
with the in-process guards switched off, raw sockets (the kernel refuses them: seccomp and
the empty network namespace)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from splice_build.runtime import SpliceRuntime
from splice_build.runtime.isolation import seccomp, support
from testing.hostile_packages import write_package

pytestmark = pytest.mark.node


@dataclass
class Listeners:
    tcp4: int
    tcp6: int
    unix: str
    seen: list[str] = field(default_factory=list)


@contextmanager
def listeners(tmp_path: Path) -> Iterator[Listeners]:
    socks = []
    tcp4 = socket.create_server(("127.0.0.1", 0))
    tcp6 = socket.create_server(("::1", 0), family=socket.AF_INET6)
    unix_path = str(tmp_path / "listener.sock")
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(unix_path)
    unix.listen(8)
    socks = [("tcp4", tcp4), ("tcp6", tcp6), ("unix", unix)]
    found = Listeners(tcp4.getsockname()[1], tcp6.getsockname()[1], unix_path)
    stop = threading.Event()

    def serve(name: str, sock: socket.socket) -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(0.5)
                try:
                    data = conn.recv(65536)
                except OSError:
                    data = b""
                found.seen.append(f"{name}: {data[:200]!r}")

    threads = [threading.Thread(target=serve, args=pair, daemon=True) for pair in socks]
    for thread in threads:
        thread.start()
    try:
        yield found
    finally:
        stop.set()
        for thread in threads:
            thread.join(2)
        for _, sock in socks:
            sock.close()


def _routes(where: Listeners) -> dict[str, str]:
    """Route name → an async JS expression; each must throw or resolve without connecting."""
    p4, p6, unix = where.tcp4, where.tcp6, json.dumps(where.unix)
    forged = json.dumps(
        {
            "type": "fetch",
            "id": 999,
            "url": f"http://127.0.0.1:{p4}/forged",
            "method": "GET",
            "headers": [],
            "redirect": "follow",
            "body": False,
        }
    )
    return {
        "fetch literal": f"fetch('http://127.0.0.1:{p4}/')",
        "fetch ipv6": f"fetch('http://[::1]:{p6}/')",
        "fetch mapped": f"fetch('http://[::ffff:127.0.0.1]:{p4}/')",
        "fetch decimal": f"fetch('http://2130706433:{p4}/')",
        "fetch short": f"fetch('http://127.1:{p4}/')",
        "fetch localhost": f"fetch('http://localhost:{p4}/')",
        "fetch name to loopback": f"fetch('http://loop.test:{p4}/')",
        "fetch name to ::1": f"fetch('http://loop6.test:{p6}/')",
        "fetch Request": f"fetch(new Request('http://127.0.0.1:{p4}/r', {{ method: 'POST', body: 'x' }}))",
        "fetch dispatcher": f"fetch('http://127.0.0.1:{p4}/', {{ dispatcher: {{ dispatch() {{ return true; }} }} }})",
        "node:net": f"import('node:net').then((m) => m.connect({p4}, '127.0.0.1'))",
        "net unix": f"import('net').then((m) => m.connect({unix}))",
        "node:http": f"import('node:http').then((m) => m.get('http://127.0.0.1:{p4}/'))",
        "node:http2": f"import('node:http2').then((m) => m.connect('http://127.0.0.1:{p4}'))",
        "node:tls": f"import('node:tls').then((m) => m.connect({p4}, '127.0.0.1'))",
        "node:dgram": "import('node:dgram').then((m) => m.createSocket('udp4'))",
        "_http_agent": "import('_http_agent')",
        "getBuiltinModule": f"(async () => process.getBuiltinModule('net').connect({p4}, '127.0.0.1'))()",
        "binding tcp_wrap": "(async () => process.binding('tcp_wrap'))()",
        "binding pipe_wrap": "(async () => process.binding('pipe_wrap'))()",
        "WebSocket": f"(async () => new WebSocket('ws://127.0.0.1:{p4}/'))()",
        "EventSource": f"(async () => new EventSource('http://127.0.0.1:{p4}/'))()",
        "undici dispatcher": (
            "(async () => globalThis[Symbol.for('undici.globalDispatcher.1')].dispatch("
            f"{{ origin: 'http://127.0.0.1:{p4}', path: '/', method: 'GET' }}, {{}}))()"
        ),
        "forged frame": (
            "import('node:fs').then((fs) => fs.writeSync(Number(process.argv[3]), "
            f"{json.dumps(forged + chr(10))}))"
        ),
    }


RAW_ROUTES = {
    "raw tcp4": "import('node:net').then((m) => new Promise((ok, fail) => m.connect({p4}, '127.0.0.1').on('connect', ok).on('error', fail)))",
    "raw tcp6": "import('node:net').then((m) => new Promise((ok, fail) => m.connect({p6}, '::1').on('connect', ok).on('error', fail)))",
    "raw unix": "import('node:net').then((m) => new Promise((ok, fail) => m.connect({unix}).on('connect', ok).on('error', fail)))",
}


def _tool(routes: dict[str, str]) -> str:
    tries = ",".join(f"[{json.dumps(name)}, () => {expr}]" for name, expr in routes.items())
    return (
        "export default async () => { const out = {};"
        f" for (const [name, run] of [{tries}]) {{"
        "  try { const v = await Promise.race([run(), new Promise((r) => setTimeout(() => r('pending'), 1500))]);"
        "    out[name] = v && typeof v === 'object' && 'status' in v ? 'status ' + v.status : 'no error';"
        "  } catch (e) { out[name] = e.code ?? e.cause?.code ?? e.name; } }"
        " await new Promise((r) => setTimeout(r, 300)); return out; };"
    )


RESOLVER = {"loop.test": [["127.0.0.1"]], "loop6.test": [["::1"]]}
GRANTS = [[], ["*"], ["api.example.com"]]


@pytest.mark.parametrize("grant", GRANTS, ids=["no-grant", "any-host", "one-host"])
@pytest.mark.parametrize("isolation", ["auto", "in-process"])
def test_no_route_reaches_a_local_listener(
    tmp_path: Path, grant: list[str], isolation: str
) -> None:
    with listeners(tmp_path) as where:
        body = _tool(_routes(where))
        pkg = write_package(
            tmp_path / "pkgs", body, permissions={"network": grant}, timeout_ms=60000
        )
        project = tmp_path / "project"
        project.mkdir()
        runtime = SpliceRuntime(
            project_root=project, env={}, isolation=isolation, _unsafe_test_resolver=RESOLVER
        )
        result = runtime.execute(runtime.load(pkg), "t", {})
    assert where.seen == [], where.seen
    assert result.ok, result.to_json()
    outcomes = result.output
    # every route failed at once: none is left pending, none got a response
    assert not [v for v in outcomes.values() if v == "pending" or v.startswith("status")], outcomes
    for name, outcome in outcomes.items():
        if name.startswith("fetch") and name != "fetch dispatcher":
            assert outcome == "ERR_ACCESS_DENIED", (name, outcome)


@pytest.mark.skipif(
    not support.detect().namespaces and not seccomp.detect().available,
    reason="neither the network namespace nor seccomp is available here",
)
@pytest.mark.parametrize("grant", GRANTS, ids=["no-grant", "any-host", "one-host"])
def test_with_the_guards_off_the_kernel_refuses_every_socket(
    tmp_path: Path, grant: list[str]
) -> None:
    """No permission model, no module guard: only the OS layer stands between the tool and
    the listeners (seccomp refuses the socket; without it, the namespace has no route)."""
    with listeners(tmp_path) as where:
        routes = {
            name: expr.format(p4=where.tcp4, p6=where.tcp6, unix=json.dumps(where.unix))
            for name, expr in RAW_ROUTES.items()
        }
        pkg = write_package(tmp_path / "pkgs", _tool(routes), permissions={"network": grant})
        project = tmp_path / "project"
        project.mkdir()
        runtime = SpliceRuntime(project_root=project, env={}, _unsafe_in_process_guards_off=True)
        result = runtime.execute(runtime.load(pkg), "t", {})
    assert where.seen == [], where.seen
    assert result.ok, result.to_json()
    expected = "EPERM" if seccomp.detect().available else None
    for name, outcome in result.output.items():
        assert outcome in {expected, "ENETUNREACH", "ECONNREFUSED", "EADDRNOTAVAIL"} - {None}, (
            name,
            outcome,
        )
