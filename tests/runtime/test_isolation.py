"""The OS layer (issue #14): with the in-process guards switched off by the test hook, the
kernel still stops the tool — no network at all, with or without a grant (an empty
namespace, and seccomp refusing sockets where it can be installed), no view of host
processes — and the resource limits stop fork, file-size and address-space bombs with a
clear code."""

from __future__ import annotations

import ast
import errno
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import splice_build
from splice_build.errors import ErrorCode
from splice_build.records import replace
from splice_build.runtime import SpliceRuntime, ToolResult
from splice_build.runtime.isolation import plan, rlimits, seccomp, support
from splice_build.runtime.isolation.child import make_preexec
from splice_build.sdk import Splice
from testing.cli import run_splice
from testing.hostile_packages import write_package
from testing.isolation import needs_os_layer, wait_for_namespace_gone
from testing.projects import run_python

pytestmark = [pytest.mark.node, needs_os_layer()]

NO_GUARDS_NETWORK = """
import net from 'node:net'; import dgram from 'node:dgram'; import dns from 'node:dns/promises';
import fs from 'node:fs'; import os from 'node:os';
const attempt = (host, port) => new Promise((resolve) => {
  const s = net.connect({ host, port });
  s.on('connect', () => { s.destroy(); resolve('connected'); });
  s.on('error', (e) => resolve(e.code));
});
export default async (i) => {
  const udp = await new Promise((resolve) => {
    const s = dgram.createSocket('udp4');
    s.on('error', (e) => resolve(e.code));
    s.send('x', i.port, '127.0.0.1', (e) => { s.close(); resolve(e ? e.code : 'sent'); });
  });
  // Only where nothing can answer (the empty namespace): fetch, a public address and DNS.
  let fetched = null; let resolved = null; let outside = null;
  if (i.outside) {
    try { await fetch(`http://127.0.0.1:${i.port}/`); fetched = 'fetched'; } catch (e) { fetched = String(e.cause?.code); }
    try { await dns.lookup('example.com'); resolved = 'resolved'; } catch (e) { resolved = e.code; }
    outside = await attempt('93.184.215.14', 80);
  }
  const interfaces = fs.readFileSync('/proc/net/dev', 'utf8').split('\\n').slice(2)
    .map((l) => l.split(':')[0].trim()).filter(Boolean);
  return {
    local: await attempt('127.0.0.1', i.port), outside, udp, fetched, resolved, interfaces,
    addresses: (() => { try { return Object.keys(os.networkInterfaces()); } catch (e) { return e.code; } })(),
    netns: fs.readlinkSync('/proc/self/ns/net'),
  };
};
"""


@pytest.fixture
def server() -> Iterator[socket.socket]:
    """A TCP server on the host's 127.0.0.1 that must never see a connection."""
    with socket.create_server(("127.0.0.1", 0)) as srv:
        srv.setblocking(False)
        yield srv


@pytest.fixture
def unguarded(project: Path, tmp_path: Path) -> Callable[..., ToolResult]:
    """``unguarded(body, input, executable=(), **package_options)``: a tool run with every
    in-process guard off (test hook) and the OS layer on; ``executable`` names package files
    to mark executable."""
    counter = iter(range(1000))

    def run(
        body: str, input: Any = None, *, executable: tuple[str, ...] = (), **options: Any
    ) -> ToolResult:
        runtime = SpliceRuntime(
            project_root=project, env={}, isolation="require-os", _unsafe_in_process_guards_off=True
        )
        pkg_dir = write_package(tmp_path / "pkgs", body, name=f"u{next(counter)}", **options)
        for rel in executable:
            (pkg_dir / rel).chmod(0o755)
        pkg = runtime.load(pkg_dir)
        return runtime.execute(pkg, "t", input or {})

    return run


def _accepted(srv: socket.socket) -> bool:
    try:
        conn, _ = srv.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


# With seccomp the socket is never created (EPERM); without it, the empty namespace has no
# route even for 127.0.0.1: lo exists but is down (up, it would be ECONNREFUSED).
REFUSED = "EPERM" if seccomp.detect().available else "ENETUNREACH"


@pytest.mark.parametrize("grant", [[], ["127.0.0.1"], ["*"]], ids=["none", "literal", "any"])
def test_no_network_even_without_guards_whatever_the_grant(unguarded, server, grant) -> None:
    port = server.getsockname()[1]
    result = unguarded(
        NO_GUARDS_NETWORK, {"port": port, "outside": True}, permissions={"network": grant}
    )
    assert result.ok, result.to_json()
    out = result.output
    assert out["local"] == REFUSED and out["outside"] == REFUSED, out
    assert out["udp"] == REFUSED and out["fetched"] == REFUSED, out
    assert out["resolved"] not in ("resolved", None), out
    assert out["interfaces"] == ["lo"], out
    assert out["addresses"] in ([], "ERR_SYSTEM_ERROR"), out  # netlink is a socket too
    assert out["netns"] != os.readlink("/proc/self/ns/net")
    assert not _accepted(server)
    report = result.to_json()["isolation"]
    assert report["network"] == "none" and "net" in report["namespaces"]
    assert report["layer"] == "os" and "pid" in report["namespaces"]


def test_host_processes_are_invisible_and_cannot_be_signalled(unguarded) -> None:
    result = unguarded(
        "import fs from 'node:fs';\n"
        "const code = (f) => { try { f(); return 'ok'; } catch (e) { return e.code; } };\n"
        "export default (i) => ({\n"
        "  proc: fs.readdirSync('/proc').filter((n) => /^\\d+$/.test(n)),\n"
        "  pid: process.pid, ppid: process.ppid,\n"
        "  probe: code(() => process.kill(i.host, 0)),\n"
        "  term: code(() => process.kill(i.host, 'SIGTERM')),\n"
        "  group: code(() => process.kill(-i.host, 'SIGTERM')),\n"
        "  ns: ['pid', 'ipc', 'user', 'mnt'].map((n) => fs.readlinkSync('/proc/self/ns/' + n)),\n"
        "  caps: fs.readFileSync('/proc/self/status', 'utf8').split('\\n')\n"
        "    .filter((l) => /^(CapEff|CapPrm|CapBnd|NoNewPrivs)/.test(l)),\n"
        "});\n",
        {"host": os.getpid()},
    )
    assert result.ok, result.to_json()
    out = result.output
    assert out["proc"] == ["1"] and out["pid"] == 1 and out["ppid"] == 0, out
    assert out["probe"] == out["term"] == out["group"] == "ESRCH", out
    host = [os.readlink(f"/proc/self/ns/{n}") for n in ("pid", "ipc", "user", "mnt")]
    assert all(a != b for a, b in zip(out["ns"], host, strict=True)), out
    assert out["caps"] == [
        "CapPrm:\t0000000000000000",
        "CapEff:\t0000000000000000",
        "CapBnd:\t0000000000000000",
        "NoNewPrivs:\t1",
    ]


@pytest.mark.skipif(shutil.which("sleep") is None, reason="no sleep binary to fork")
def test_a_fork_bomb_hits_the_process_limit_and_dies_with_the_call(unguarded) -> None:
    # The file view holds no /usr/bin: the package brings its own copy (it needs only the
    # C library, which Node needs too).
    sleep = Path(str(shutil.which("sleep"))).read_bytes()
    result = unguarded(
        "import { spawn } from 'node:child_process'; import fs from 'node:fs';\n"
        "const sleep = new URL('../bin/sleep', import.meta.url).pathname;\n"
        "export default async () => {\n"
        "  let spawned = 0; const errors = new Set(); const waits = [];\n"
        "  for (let i = 0; i < 1000; i++) {\n"
        "    const c = spawn(sleep, ['60'], { stdio: 'ignore' });\n"
        "    waits.push(new Promise((r) => { c.on('spawn', () => { spawned++; r(); });\n"
        "      c.on('error', (e) => { errors.add(e.code); r(); }); }));\n"
        "  }\n"
        "  await Promise.all(waits);\n"
        "  return { spawned, errors: [...errors], ns: fs.readlinkSync('/proc/self/ns/pid') };\n"
        "};\n",
        timeout_ms=30000,
        extra_files={"bin/sleep": sleep},
        executable=("bin/sleep",),
    )
    assert result.ok, result.to_json()
    out = result.output
    assert out["errors"] == ["EAGAIN"], out
    assert 0 < out["spawned"] < min(rlimits.PID_MAX, 1000), out
    assert wait_for_namespace_gone(out["ns"]) == []  # everything died with PID 1


@pytest.mark.parametrize("isolation", ["auto", "in-process"])
def test_a_file_size_bomb_stops_at_the_limit(project: Path, tmp_path: Path, isolation: str) -> None:
    runtime = SpliceRuntime(project_root=project, env={}, isolation=isolation)
    pkg = runtime.load(
        write_package(
            tmp_path / "pkgs",
            "import fs from 'node:fs'; export default (i, ctx) => {\n"
            "  const fd = fs.openSync(ctx.paths.project + '/out/bomb', 'w');\n"
            "  const chunk = Buffer.alloc(1024 * 1024, 120);\n"
            "  for (let i = 0; i < 1024; i++) fs.writeSync(fd, chunk);\n"
            "};\n",
            permissions={"fs": {"read": [], "write": ["out"]}},
            timeout_ms=30000,
        )
    )
    result = runtime.execute(pkg, "t", {})
    assert result.error is not None and result.error.code == ErrorCode.TOOL_ERROR, result.to_json()
    assert result.error.message.startswith("EFBIG: file too large"), result.error.message
    assert (project / "out" / "bomb").stat().st_size == rlimits.FILE_SIZE_BYTES


@pytest.mark.parametrize("isolation", ["auto", "in-process"])
def test_an_address_space_bomb_fails_cleanly(project: Path, tmp_path: Path, isolation: str) -> None:
    runtime = SpliceRuntime(project_root=project, env={}, isolation=isolation)
    pkg = runtime.load(
        write_package(
            tmp_path / "pkgs",
            "export default () => { const keep = [];\n"
            "  for (let i = 0; i < 64; i++) keep.push(new ArrayBuffer(256 * 1024 * 1024));\n"
            "  return keep.length; };\n",
        )
    )
    result = runtime.execute(pkg, "t", {})
    assert result.error is not None and result.error.code == ErrorCode.TOOL_ERROR, result.to_json()
    assert "allocation failed" in result.error.message


# Inside the process under test: a nested user namespace (which would hold every capability,
# and with them the mount calls), through unshare and through a forked child.
NESTED_USER_NAMESPACE = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER = 0x10000000
print("made" if libc.unshare(CLONE_NEWUSER) == 0 else os.strerror(ctypes.get_errno()))
"""


def test_no_nested_user_namespace_even_without_the_seccomp_filter() -> None:
    """The OS layer alone (as on an architecture the filter has no table for): the tool's
    user namespace allows no user namespace inside it (``max_user_namespaces`` 0)."""
    found = support.detect()
    alone = replace(plan.plan_for("require-os", found), seccomp=False)
    done = subprocess.run(
        [sys.executable, "-c", NESTED_USER_NAMESPACE],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=make_preexec(alone, os.getpid()),
        env={},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == os.strerror(errno.ENOSPC), done.stdout
    unsandboxed = subprocess.run(
        [sys.executable, "-c", NESTED_USER_NAMESPACE], capture_output=True, text=True, check=False
    )
    assert unsandboxed.stdout.strip() == "made"  # the probe can fail


LOWER_HARD_LIMIT = """
import os, resource, subprocess, sys
from splice_build.runtime.isolation import plan, support
from splice_build.runtime.isolation.child import make_preexec
from splice_build.sdk import Splice
from testing.cli import run_splice
from testing.projects import run_python

resource.setrlimit(resource.RLIMIT_NOFILE, (64, 100))
planned = plan.plan_for("auto", support.detect())
print(planned.to_json()["limits"]["openFiles"])
got = "import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE))"
done = subprocess.run([sys.executable, "-c", got], capture_output=True, text=True, env={},
                      preexec_fn=make_preexec(planned, os.getpid()), check=True)
print(done.stdout.strip())
"""


def test_the_limits_a_call_reports_are_those_its_process_got() -> None:
    """A program whose hard ``RLIMIT_NOFILE`` is below the tool's 256 (a service's
    ``LimitNOFILE=100``): the tool inherits that hard limit and cannot be given more, and each
    call's ``isolation.limits`` said 256 all the same (rlimits.Limits.within_hard_limits)."""
    done = run_python(LOWER_HARD_LIMIT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["100", "(100, 100)"]


LISTENING_IN_THE_CHILD = """
import os, subprocess, sys
from splice_build.listen import listening_socket
from splice_build.runtime.isolation import plan, support
from splice_build.runtime.isolation.child import make_preexec

sock = listening_socket("127.0.0.1", 0)
setup = make_preexec(plan.plan_for("auto", support.detect()), os.getpid())
read, write = os.pipe()

def probe():
    setup()
    try:
        os.fstat(sock.fileno())
        os.write(write, b"open")
    except OSError:
        os.write(write, b"closed")

subprocess.run([sys.executable, "-c", "pass"], preexec_fn=probe, env={}, check=True)
print(os.read(read, 16).decode(), os.fstat(sock.fileno()).st_mode != 0)
"""


def test_a_sandbox_child_holds_no_listening_socket_of_its_server() -> None:
    """A sandbox's child held every descriptor of the server until its exec, milliseconds
    while it built its namespaces and file view: a `splice mcp --http` killed outright still
    had its port accepting then (3 of 8 kills under load), and nginx's next POST, connected
    to a socket nobody would answer, came back 502 instead of going to the other instance
    (tests/deploy). The child closes the server's listening sockets first; the server keeps
    them."""
    done = run_python(LISTENING_IN_THE_CHILD)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["closed", "True"]


LISTENING_IN_A_PROBE = """
import os
import re
from splice_build.listen import listening_socket
from splice_build.runtime.forks import fork_probe

sock = listening_socket("127.0.0.1", 0)
read, write = os.pipe()
pid = fork_probe()
if pid == 0:
    try:
        os.fstat(sock.fileno())
        os.write(write, b"open")
    except OSError:
        os.write(write, b"closed")
    os._exit(0)
os.waitpid(pid, 0)
print(os.read(read, 16).decode(), os.fstat(sock.fileno()).st_mode != 0)
"""


def test_a_probe_child_holds_no_listening_socket_of_its_server() -> None:
    """The isolation, seccomp and no_new_privs probes are forked children too, alive some
    milliseconds at a server's first call: they close its listening sockets as a sandbox's
    child does (the server keeps them)."""
    done = run_python(LISTENING_IN_A_PROBE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["closed", "True"]


# The one fork that keeps a server's listening socket: a registry worker serves on it.
KEEPS_THE_LISTENING_SOCKET = {("registry/http/workers.py", "_start")}


def test_every_fork_of_a_child_that_does_not_exec_is_a_probe_fork() -> None:
    """Walks every call of ``os.fork`` in the package: each is ``forks.fork_probe``'s, or the
    registry worker's (which serves on the socket). A probe forked with ``os.fork`` directly
    held the server's port open for its life."""
    package = Path(splice_build.__file__).parent
    found = set()
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "fork"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "os"
                ):
                    found.add((path.relative_to(package).as_posix(), function.name))
    assert found == {("runtime/forks.py", "fork_probe"), *KEEPS_THE_LISTENING_SOCKET}


def test_a_hard_open_file_limit_too_low_for_the_view_is_named(tmp_path: Path) -> None:
    """A program whose hard ``RLIMIT_NOFILE`` is 32 (a service's ``LimitNOFILE=32``): the file
    view holds a descriptor per bind and per directory on the way to a mount point at once
    and ran out before Node existed, and every call was TOOL_CRASHED, "Exception occurred in
    preexec_fn". It is ISOLATION_UNAVAILABLE now, naming the limit and the one the hint asks
    for, which is enough (the hint said 1,024 whatever the view took: a package granted
    deep paths ran out under 1,024 too)."""
    project = tmp_path / "project"
    Splice.init(project).add(["@splice/example"])
    low = run_splice("--json", "run", "example.hello", "name=x", cwd=project, open_files=(32, 32))
    assert low.code == 1, low.stderr
    error = low.json()["error"]
    assert error["code"] == ErrorCode.ISOLATION_UNAVAILABLE, error
    assert "hard open-file limit (32)" in error["message"]
    asked = int(re.search(r"limit to (\d+) or more", error["hint"]).group(1))
    hinted = run_splice("run", "example.hello", "name=x", cwd=project, open_files=(asked, asked))
    assert hinted.code == 0, hinted.stderr
    assert json.loads(hinted.stdout) == {"message": "Hello, x."}


def test_the_namespace_depth_of_a_process_with_any_name_is_read() -> None:
    """``/proc/<pid>/status`` begins with the process's own name, any bytes it set itself:
    read as ASCII text, a name such as ``splicé`` raised UnicodeDecodeError out of the
    sandbox's start-up (only OSError was caught). It is read as bytes, which also keeps the
    ASCII codec's import off the run path (tests/runtime/test_lean_path.py)."""
    from splice_build.runtime.sandbox import _namespace_depth

    named = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; open('/proc/self/comm', 'wb').write('splicé'.encode()); "
            "print(flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert named.stdout is not None
        named.stdout.readline()
        with open(f"/proc/{named.pid}/comm", "rb") as f:
            assert f.read() == "splicé\n".encode()
        assert _namespace_depth(named.pid) == _namespace_depth(os.getpid()) >= 1
    finally:
        named.communicate(b"")
