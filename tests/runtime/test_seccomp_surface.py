"""What the seccomp filter refuses besides sockets (isolation/seccomp.py ``DENIED``), and the
read-only ``/proc/sys`` of the OS layer, attacked for real from inside the sandbox.

A process started with the sandbox's own ``preexec_fn`` (the real plan: namespaces, file
limits, the filter) tries each refused system call; the same code without the filter shows
that the attack works there (so each test can fail). The key ring attack is the one that
crossed the boundary: the session key ring is inherited from the user who ran Splice, and a
tool read a secret another program had stored in it. The ``pid_max`` attack lifted the
process limit of a tool run by root: the root of a user namespace may write its own PID
namespace's ``pid_max`` without any capability.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from splice_build.runtime import SpliceRuntime
from splice_build.runtime.isolation import plan, rlimits, seccomp, support
from splice_build.runtime.isolation.child import make_preexec
from testing.hostile_packages import write_package
from testing.isolation import needs_os_layer

pytestmark = pytest.mark.skipif(
    seccomp.current_arch() is None or not seccomp.detect().available,
    reason=f"no seccomp filter here: {seccomp.detect().detail}",
)

# Inside the process under test: each system call by number with harmless arguments (-1
# first: an invalid descriptor, pointer, request or magic number for every one of them),
# answered "ok" or with its errno; one JSON object out.
SURFACE_PROBE = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def raw(number, *args):
    result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
    if result == 0 and number == CLONE:
        os._exit(0)  # the child of a clone that went through
    return "ok" if result >= 0 else ctypes.get_errno()
calls, CLONE, CLONE3, NEWEST = json.loads(sys.argv[1])
out = {name: raw(number, -1, 0, 0, 0, 0) for name, number in calls}
SIGCHLD = 17
out["clone new user"] = raw(CLONE, 0x10000000 | SIGCHLD, 0, 0, 0, 0)
out["clone new net"] = raw(CLONE, 0x40000000 | SIGCHLD, 0, 0, 0, 0)
out["clone3"] = raw(CLONE3, 0, 0)
out["above the table"] = raw(NEWEST + 10, 0, 0)
pid = os.fork()
if pid == 0:
    os._exit(7)
out["fork"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
print(json.dumps(out))
"""


def _args(names: tuple[str, ...] | None = None) -> str:
    """The probe's argument: the denied calls (``names`` only, when given), clone, clone3 and
    the newest number. ``vhangup`` takes no argument to make harmless (with a capability it
    hangs up the terminal): it is refused by the same rule, untried."""
    arch = seccomp.current_arch()
    assert arch is not None
    calls = [(name, number) for name, number in arch.denied if name != "vhangup"]
    if names is not None:
        calls = [(name, number) for name, number in calls if name in names]
    return json.dumps([calls, arch.clone, arch.clone3, seccomp.NEWEST])


def _auto_plan() -> plan.IsolationPlan:
    return plan.plan_for("auto", support.detect())


def _run(code: str, *args: str, filtered: bool = True, env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=make_preexec(_auto_plan(), os.getpid()) if filtered else None,
        env={"PATH": os.environ.get("PATH", ""), **(env or {})},
        check=False,
    )


def test_every_denied_system_call_is_refused_inside_the_sandbox() -> None:
    done = _run(SURFACE_PROBE, _args())
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out.pop("fork") == 7  # a plain fork (no namespace flag) still works
    assert out.pop("clone3") == errno.ENOSYS  # its flags cannot be read: the C library falls back
    assert out.pop("above the table") == errno.ENOSYS
    refused = {name: answer for name, answer in out.items() if answer == errno.EPERM}
    assert refused == out, {name: v for name, v in out.items() if v != errno.EPERM}
    assert {"keyctl", "unshare", "mount", "bpf", "ptrace", "clone new user"} <= set(refused)


def test_without_the_filter_the_same_probe_reaches_the_kernel() -> None:
    """The probe can fail: unfiltered, the kernel answers (only calls that change nothing
    here are tried: this process is not sandboxed)."""
    done = _run(SURFACE_PROBE, _args(("keyctl", "unshare")), filtered=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert errno.EPERM not in (out["keyctl"], out["unshare"]), out
    assert out["clone3"] != errno.ENOSYS, out  # Linux 5.3 and newer


KEYS = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ADD_KEY, KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
SESSION = ctypes.c_long(-3)  # KEY_SPEC_SESSION_KEYRING
def keyctl(*args):
    return libc.syscall(ctypes.c_long(KEYCTL), *args)
def add_key(name, value):
    return libc.syscall(ctypes.c_long(ADD_KEY), b"user", name, value, ctypes.c_long(len(value)), SESSION)
"""
# The attacker, run by the launcher with the sandbox's preexec: reads the key by its id (the
# worst case: guessed right) and plants one of its own.
ATTACKER = (
    KEYS
    + r"""
buffer = ctypes.create_string_buffer(64)
got = keyctl(ctypes.c_long(11), ctypes.c_long(int(sys.argv[1])), buffer, ctypes.c_long(64))  # READ
planted = add_key(b"planted", b"x")
print(json.dumps({
    "read": buffer.raw[:got].decode() if got >= 0 else ctypes.get_errno(),
    "planted": "ok" if planted >= 0 else ctypes.get_errno(),
}))
"""
)
# The user's side: a fresh session key ring holding a secret (as a login, ``keyctl session``
# or a Kerberos library makes), then the attacker started as the sandbox starts a tool.
LAUNCHER = (
    KEYS
    + r"""
import subprocess
from splice_build.runtime.isolation import plan, support
from splice_build.runtime.isolation.child import make_preexec
if keyctl(ctypes.c_long(1), b"splice-test") < 0:  # KEYCTL_JOIN_SESSION_KEYRING
    print(json.dumps({"skip": os.strerror(ctypes.get_errno())}))
    sys.exit(0)
key = add_key(b"secret", b"hunter2")
preexec = make_preexec(plan.plan_for("auto", support.detect()), os.getpid())
done = subprocess.run(
    [sys.executable, "-c", sys.argv[1], str(key)], capture_output=True, text=True,
    preexec_fn=preexec if sys.argv[2] == "sandboxed" else None, env={},
)
sys.stdout.write(done.stdout + done.stderr)
"""
)


def test_a_tool_cannot_read_or_fill_the_users_session_key_ring() -> None:
    root = str(Path(__file__).resolve().parents[2])

    def attack(mode: str) -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-c", LAUNCHER, ATTACKER, mode],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": root},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout.strip().splitlines()[-1])
        if "skip" in out:
            pytest.skip(reason=f"no session key ring can be made here: {out['skip']}")
        return out

    assert attack("bare") == {"read": "hunter2", "planted": "ok"}  # the attack works bare
    assert attack("sandboxed") == {"read": errno.EPERM, "planted": errno.EPERM}


@pytest.mark.node
@needs_os_layer()
def test_a_tool_cannot_write_its_namespaces_settings(tmp_path: Path) -> None:
    """With the in-process guards off, a tool writes /proc/sys: its PID namespace's pid_max
    (the process limit) and a setting of its own network namespace. Read-only: EROFS. (Run
    by root, the tool is its namespaces' root, whom the kernel lets write both; anyone
    else is refused by their modes first, EACCES.)"""
    found = support.detect()
    refused = "EROFS" if os.geteuid() == 0 else "EACCES"
    body = (
        "import fs from 'node:fs';\n"
        "const put = (p, v) => { try { fs.writeFileSync(p, v); return 'ok'; }"
        " catch (e) { return e.code; } };\n"
        "export default () => ({\n"
        "  pidMax: put('/proc/sys/kernel/pid_max', '4194304'),\n"
        "  net: put('/proc/sys/net/ipv4/ping_group_range', '0 0'),\n"
        "  now: fs.readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim(),\n"
        "});\n"
    )
    project = tmp_path / "project"
    project.mkdir()
    runtime = SpliceRuntime(
        project_root=project, env={}, isolation="require-os", _unsafe_in_process_guards_off=True
    )
    result = runtime.execute(runtime.load(write_package(tmp_path / "pkgs", body)), "t", {})
    assert result.ok, result.to_json()
    out = result.output
    assert out["pidMax"] == refused and out["net"] == refused, out
    if found.pid_max:
        assert out["now"] == str(rlimits.PID_MAX), out


HEADERS = {
    "x86_64": ("/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "/usr/include/asm/unistd_64.h"),
    "aarch64": ("/usr/include/asm-generic/unistd.h",),
}


@pytest.mark.parametrize("name", sorted(seccomp.ARCHES))
def test_the_tables_numbers_are_the_kernel_headers(name: str) -> None:
    """Each number the filter refuses by is the one the kernel's own table gives its name
    (where the headers are installed; the generic table is aarch64's)."""
    header = next((Path(p) for p in HEADERS[name] if Path(p).is_file()), None)
    if header is None:
        pytest.skip(reason=f"no system call header for {name} here")
    defined = re.findall(r"#define __NR(?:3264)?_(\w+)\s+(\d+)", header.read_text("utf-8"))
    numbers = {call: int(number) for call, number in defined}
    arch = seccomp.ARCHES[name]
    known = [(call, number) for call, number in arch.denied if call in numbers]
    assert [(call, numbers[call]) for call, _ in known] == known
    assert len(known) >= len(arch.denied) - 1  # quotactl_fd is newer than some headers
    fixed = {"socket": arch.socket, "socketpair": arch.socketpair, "clone": arch.clone}
    assert {call: numbers[call] for call in fixed} == fixed
    # A newer header names calls above NEWEST: they are ENOSYS until someone reviews them,
    # adds the dangerous ones to DENIED and raises NEWEST.
    newer = sorted(call for call, number in numbers.items() if number > seccomp.NEWEST)
    assert newer == [], f"review {newer} for seccomp.DENIED, then raise seccomp.NEWEST"


# A real malicious tool: its package ships a native program that reads the user's secret
# from the session key ring by its id, plants a key, and makes a user namespace.
ATTACK_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
  char buf[64];
  long got = syscall(SYS_keyctl, 11 /* KEYCTL_READ */, atol(argv[1]), buf, sizeof buf);
  if (got >= 0) printf("{\"read\": \"%.*s\"", (int)got, buf); else printf("{\"read\": %d", errno);
  long planted = syscall(SYS_add_key, "user", "planted", "x", 1, -3 /* session */);
  printf(", \"planted\": %d", planted >= 0 ? 0 : errno);
  printf(", \"userns\": %d}\n", unshare(CLONE_NEWUSER) == 0 ? 0 : errno);
  return 0;
}
"""
ATTACK_TOOL = """
import { spawnSync } from 'node:child_process'; import fs from 'node:fs';
const attack = new URL('../bin/attack', import.meta.url).pathname;
export default (i, ctx) => {
  const report = ctx.paths.project + '/out/report';
  const fd = fs.openSync(report, 'w');
  spawnSync(attack, [String(i.key)], { stdio: ['ignore', fd, 'ignore'] });
  fs.closeSync(fd);
  return JSON.parse(fs.readFileSync(report, 'utf8'));
};
"""
# The user's side: a secret in a fresh session key ring, then the tool run by the runtime
# (in-process guards off: the kernel alone must hold), its output printed.
RUN_ATTACK_TOOL = (
    KEYS
    + r"""
from pathlib import Path
from splice_build.runtime import SpliceRuntime
from testing.hostile_packages import write_package
if keyctl(ctypes.c_long(1), b"splice-test") < 0:
    print(json.dumps({"skip": os.strerror(ctypes.get_errno())}))
    sys.exit(0)
key = add_key(b"secret", b"hunter2")
tmp = Path(sys.argv[1])
project = tmp / "project"
(project / "out").mkdir(parents=True)
package = write_package(
    tmp / "pkgs", sys.argv[2], permissions={"fs": {"read": [], "write": ["out"]}},
    extra_files={"bin/attack": Path(sys.argv[3]).read_bytes()},
)
(package / "bin" / "attack").chmod(0o755)
runtime = SpliceRuntime(project_root=project, env={}, _unsafe_in_process_guards_off=True)
result = runtime.execute(runtime.load(package), "t", {"key": key})
print(json.dumps(result.output if result.ok else result.to_json()))
"""
)


@pytest.mark.node
def test_a_native_tool_gets_nothing_from_the_key_ring_or_namespaces(tmp_path: Path) -> None:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip(reason="no C compiler to build the malicious tool's program")
    source = tmp_path / "attack.c"
    source.write_text(ATTACK_C, encoding="utf-8")
    subprocess.run([compiler, "-o", str(tmp_path / "attack"), str(source)], check=True)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            RUN_ATTACK_TOOL,
            str(tmp_path),
            ATTACK_TOOL,
            str(tmp_path / "attack"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(Path(__file__).parents[2])},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if "skip" in out:
        pytest.skip(reason=f"no session key ring can be made here: {out['skip']}")
    assert out == {"read": errno.EPERM, "planted": errno.EPERM, "userns": errno.EPERM}, out
