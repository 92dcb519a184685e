"""The seccomp filter against sockets, tested by doing the forbidden thing for real inside
the sandbox and checking the errno (isolation/seccomp.py; bubblewrap's test-seccomp.py does
the same): every address family and socket type, socketpair, io_uring, the x32 ABI and the
i386 entry point; Node still starts and runs. Also the report (plan, doctor) and the
fallback when the filter cannot be installed."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from splice_build.runtime import SpliceRuntime
from splice_build.runtime.isolation import doctor, plan, seccomp, support
from splice_build.runtime.isolation.child import make_preexec
from testing.hostile_packages import write_package
from testing.isolation import require_seccomp


@pytest.fixture(autouse=True)
def _seccomp_here() -> None:
    require_seccomp()


# Runs inside the filtered process: every family × type through socket(), socketpair(),
# io_uring_setup and the x32 number of socket() through syscall(); one JSON line out.
PROBE = r"""
import ctypes, errno, json, os, socket
out = {"socket": {}, "other": {}}
for family in range(0, 46):
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW, socket.SOCK_SEQPACKET):
        try:
            socket.socket(family, kind).close()
            out["socket"][f"{family}/{kind}"] = "created"
        except OSError as exc:
            out["socket"][f"{family}/{kind}"] = exc.errno
try:
    socket.socketpair()
    out["other"]["socketpair"] = "created"
except OSError as exc:
    out["other"]["socketpair"] = exc.errno
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def raw(number, *args):
    result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
    return "ok" if result >= 0 else ctypes.get_errno()
arch = os.uname().machine
SOCKET = {"x86_64": 41, "aarch64": 198}[arch]
out["other"]["io_uring_setup"] = raw(425, 1, 0)
out["other"]["io_uring_enter"] = raw(426, 0, 0, 0, 0, 0)
out["other"]["io_uring_register"] = raw(427, 0, 0, 0, 0)
out["other"]["raw socket"] = raw(SOCKET, socket.AF_INET, socket.SOCK_STREAM, 0)
if arch == "x86_64":
    out["other"]["x32 socket"] = raw(SOCKET | 0x40000000, socket.AF_INET, socket.SOCK_STREAM, 0)
r, w = os.pipe()
out["other"]["pipe, write, read"] = os.write(w, b"ok") == 2 and os.read(r, 2) == b"ok"
out["other"]["getpid"] = os.getpid() > 0
print(json.dumps(out))
"""

# x86_64 machine code: socket(AF_INET, SOCK_STREAM, 0) through the i386 entry (int 0x80,
# eax = 359), then return eax. A filter without the architecture check would let it through.
I386_SOCKET = bytes.fromhex("b867010000bb02000000b90100000031d2cd80c3")
I386_PROBE = r"""
import ctypes, mmap, sys
code = bytes.fromhex(sys.argv[1])
page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(code)
address = ctypes.addressof(ctypes.c_char.from_buffer(page))
result = ctypes.CFUNCTYPE(ctypes.c_int)(address)()
print(result)
"""


def _plans() -> list[tuple[str, plan.IsolationPlan]]:
    found = support.detect()
    auto = plan.plan_for("auto", found)
    only_filter = plan.IsolationPlan(
        os_layer=False, pid_max=None, no_new_privs=True, last_cap=found.last_cap, seccomp=True
    )
    return [("auto", auto), ("filter alone", only_filter)]


def _run_filtered(
    isolation: plan.IsolationPlan, code: str, *args: str
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=make_preexec(isolation, os.getpid()),
        env={"PATH": os.environ.get("PATH", "")},
        check=False,
    )


@pytest.mark.parametrize(
    ("label", "isolation"), _plans(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_socket_family_and_type_is_refused(label: str, isolation: plan.IsolationPlan) -> None:
    assert isolation.seccomp, label
    done = _run_filtered(isolation, PROBE)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert set(out["socket"].values()) == {errno.EPERM}, out["socket"]
    assert out["other"].pop("socketpair") == errno.EPERM
    assert out["other"].pop("raw socket") == errno.EPERM
    if "x32 socket" in out["other"]:
        assert out["other"].pop("x32 socket") == errno.EPERM
    for name in ("io_uring_setup", "io_uring_enter", "io_uring_register"):
        assert out["other"].pop(name) == errno.ENOSYS, name
    assert out["other"] == {"pipe, write, read": True, "getpid": True}


def test_without_the_filter_the_same_probe_creates_sockets() -> None:
    """The probe can fail: unfiltered, the same code creates sockets (and io_uring exists
    or is refused by the kernel for its own reasons, never by us)."""
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    out = json.loads(done.stdout.splitlines()[-1])
    assert "created" in out["socket"].values()
    assert out["other"]["socketpair"] == "created"


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the i386 entry point is x86_64's")
def test_a_system_call_of_another_architecture_kills_the_process() -> None:
    unfiltered = subprocess.run(
        [sys.executable, "-c", I386_PROBE, I386_SOCKET.hex()], capture_output=True, text=True
    )
    if unfiltered.returncode != 0:
        pytest.skip(reason=f"no i386 emulation in this kernel (exit {unfiltered.returncode})")
    assert int(unfiltered.stdout) >= 0  # a real socket descriptor
    _label, isolation = _plans()[1]
    filtered = _run_filtered(isolation, I386_PROBE, I386_SOCKET.hex())
    assert filtered.returncode == -signal.SIGSYS, (filtered.returncode, filtered.stderr)


@pytest.mark.node
def test_node_runs_and_every_socket_api_gets_eperm(tmp_path: Path) -> None:
    """With the in-process guards off (no permission model, no module guard), a tool that
    opens sockets through every API Node has is refused by the kernel, and still runs."""
    body = r"""
import net from 'node:net'; import dgram from 'node:dgram'; import os from 'node:os';
const attempt = (make) => new Promise((resolve) => {
  try { make(resolve); } catch (e) { resolve(e.code ?? String(e)); } });
export default async () => ({
  tcp4: await attempt((r) => net.connect(9, '127.0.0.1').on('error', (e) => r(e.code)).on('connect', () => r('connected'))),
  tcp6: await attempt((r) => net.connect(9, '::1').on('error', (e) => r(e.code)).on('connect', () => r('connected'))),
  listen: await attempt((r) => net.createServer().on('error', (e) => r(e.code)).listen(0, () => r('listening'))),
  unix: await attempt((r) => net.connect('/tmp/splice-seccomp.sock').on('error', (e) => r(e.code)).on('connect', () => r('connected'))),
  udp4: await attempt((r) => dgram.createSocket('udp4').on('error', (e) => r(e.code)).bind(0, () => r('bound'))),
  udp6: await attempt((r) => dgram.createSocket('udp6').on('error', (e) => r(e.code)).bind(0, () => r('bound'))),
  interfaces: await attempt((r) => { os.networkInterfaces(); r('listed'); }),
  node: process.version,
});
"""
    project = tmp_path / "project"
    project.mkdir()
    pkg = write_package(tmp_path / "pkgs", body)
    runtime = SpliceRuntime(project_root=project, env={}, _unsafe_in_process_guards_off=True)
    result = runtime.execute(runtime.load(pkg), "t", {})
    assert result.ok, result.to_json()
    assert result.isolation is not None and result.isolation.seccomp
    output = result.output
    assert output.pop("node").startswith("v24.")
    assert output.pop("interfaces") == "ERR_SYSTEM_ERROR"  # getifaddrs needs a netlink socket
    assert output == dict.fromkeys(["tcp4", "tcp6", "listen", "unix", "udp4", "udp6"], "EPERM")


def test_the_plan_and_doctor_report_the_filter() -> None:
    found = support.detect()
    auto = plan.plan_for("auto", found)
    assert auto.to_json()["seccomp"] == "sockets denied"
    assert plan.plan_for("in-process", found).to_json()["seccomp"] == "off"
    layers = {layer["name"]: layer for layer in doctor.machine_report({}, "auto")["layers"]}
    assert layers["seccomp"]["active"] is True
    assert "socket and socketpair refused" in layers["seccomp"]["detail"]
    assert "an allow-list of" in layers["seccomp"]["detail"]


def test_where_it_cannot_be_installed_the_reason_is_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seccomp, "machine", lambda: "riscv64")
    status = seccomp.detect.__wrapped__()
    assert status == seccomp.SeccompStatus(
        False, "no filter is written for the riscv64 architecture"
    )
    found = support.detect()
    missing = plan.plan_for("auto", type(found)(**{**found.__dict__, "seccomp": status}))
    assert missing.seccomp is False
    assert missing.to_json()["seccomp"] == "off"
    assert (
        "seccomp: no filter is written for the riscv64 architecture"
        in missing.to_json()["unavailable"]
    )


# Runs inside the filtered process: every mode 0..0o7777 through every system call that sets
# a file's mode, on a fresh file each time; which modes each call refused, and with what.
MODE_PROBE = r"""
import ctypes, json, os, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def raw(number, *args):
    result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    if result >= 0:
        return "ok", result
    return ctypes.get_errno(), None
arch = os.uname().machine
AT_FDCWD = -100
O_WRONLY_CREAT = os.O_WRONLY | os.O_CREAT
here = sys.argv[1]
os.chdir(here)
calls = {
    "x86_64": {"chmod": 90, "fchmod": 91, "creat": 85, "mknod": 133, "open": 2, "fchmodat": 268,
               "fchmodat2": 452, "mknodat": 259, "openat": 257},
    "aarch64": {"fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "mknodat": 33, "openat": 56},
}[arch]
def attempt(name, number, mode):
    path = b"f"
    if name in ("chmod", "fchmod", "fchmodat", "fchmodat2"):
        os.close(os.open(path, O_WRONLY_CREAT, 0o600))
    if name == "chmod":
        answer = raw(number, path, mode)
    elif name == "fchmod":
        fd = os.open(path, os.O_RDONLY)
        answer = raw(number, fd, mode)
        os.close(fd)
    elif name in ("fchmodat", "fchmodat2"):
        answer = raw(number, AT_FDCWD, path, mode, 0)
    elif name == "creat":
        answer = raw(number, path, mode)
    elif name == "open":
        answer = raw(number, path, O_WRONLY_CREAT, mode)
    elif name == "openat":
        answer = raw(number, AT_FDCWD, path, O_WRONLY_CREAT, mode)
    elif name == "mknod":
        answer = raw(number, path, stat.S_IFREG | mode, 0)
    else:
        answer = raw(number, AT_FDCWD, path, stat.S_IFREG | mode, 0)
    outcome, fd = answer
    if name in ("creat", "open", "openat") and fd is not None:
        os.close(fd)
    left = os.lstat(path).st_mode & 0o6000 if os.path.lexists(path) else 0
    if os.path.lexists(path):
        os.unlink(path)
    return outcome, left
out = {}
for name, number in calls.items():
    refused, other, set_id_left = [], set(), 0
    for mode in range(0o10000):
        outcome, left = attempt(name, number, mode)
        set_id_left += bool(left)
        if outcome == 1:  # EPERM
            refused.append(mode)
        else:
            other.add(outcome)
    out[name] = {"refused": refused, "other": sorted(map(str, other)), "set_id_left": set_id_left}
open_how = (ctypes.c_uint64 * 3)(O_WRONLY_CREAT, 0o4755, 0)
out["openat2"] = raw(437, AT_FDCWD, b"g", ctypes.byref(open_how), 24)[0]
print(json.dumps(out))
"""


@pytest.mark.parametrize(
    ("label", "isolation"), _plans(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_no_mode_with_a_set_id_bit_can_be_set(
    label: str, isolation: plan.IsolationPlan, tmp_path: Path
) -> None:
    """Every mode through every call that sets one: refused (EPERM) exactly when it holds
    S_ISUID or S_ISGID, and no file is left with either bit; openat2 is ENOSYS."""
    done = _run_filtered(isolation, MODE_PROBE, str(tmp_path))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out.pop("openat2") == errno.ENOSYS
    set_id_modes = [mode for mode in range(0o10000) if mode & seccomp.SET_ID_BITS]
    for name, seen in out.items():
        assert seen["refused"] == set_id_modes, (label, name)
        # fchmodat2 is new (Linux 6.6): an older kernel has none to give.
        assert seen["other"] in (["ok"], [str(errno.ENOSYS)]), (label, name, seen["other"])
        assert seen["set_id_left"] == 0, (label, name)


def test_without_the_filter_the_same_probe_sets_set_id_bits(tmp_path: Path) -> None:
    """The mode probe can fail: unfiltered, the same calls leave set-ID files behind."""
    done = subprocess.run(
        [sys.executable, "-c", MODE_PROBE, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["fchmod"]["refused"] == []
    assert out["fchmod"]["set_id_left"] > 0


@pytest.mark.node
def test_a_tool_cannot_leave_a_set_id_file_in_its_write_grant(tmp_path: Path) -> None:
    """Through Node's own file APIs, with the OS layer and the host's own guards off (its
    file_modes.mjs refuses these first, ERR_ACCESS_DENIED): every way of giving a file in the
    write grant a set-ID mode is refused by the filter, plain modes still work, and nothing
    set-ID is left."""
    body = r"""
import fs from 'node:fs';
const attempt = (name, act) => { try { act(); return 'ok'; } catch (e) { return e.code ?? String(e); } };
export default async () => {
  const at = (name) => new URL(`../../../project/w/${name}`, import.meta.url);
  fs.writeFileSync(at('a'), '#!/bin/sh\n');
  const fd = fs.openSync(at('a'), 'r');
  const out = {
    chmod: attempt('chmod', () => fs.chmodSync(at('a'), 0o4755)),
    chmodGid: attempt('chmodGid', () => fs.chmodSync(at('a'), 0o2755)),
    fchmod: attempt('fchmod', () => fs.fchmodSync(fd, 0o6755)),
    writeWithMode: attempt('writeWithMode', () => fs.writeFileSync(at('b'), 'x', { mode: 0o4755 })),
    openWithMode: attempt('openWithMode', () => fs.closeSync(fs.openSync(at('c'), 'w', 0o2755))),
    promises: await fs.promises.chmod(at('a'), 0o4755).then(() => 'ok', (e) => e.code),
    plain: attempt('plain', () => fs.chmodSync(at('a'), 0o755)),
  };
  fs.closeSync(fd);
  return out;
};
"""
    project = tmp_path / "project"
    (project / "w").mkdir(parents=True)
    pkg = write_package(tmp_path / "pkgs", body, permissions={"fs": {"write": ["w"]}})
    runtime = SpliceRuntime(project_root=project, env={}, _unsafe_in_process_guards_off=True)
    result = runtime.execute(runtime.load(pkg), "t", {})
    assert result.ok, result.to_json()
    assert result.isolation is not None and result.isolation.seccomp
    output = result.output
    assert output.pop("plain") == "ok"
    # Node's permission model refuses fchmod itself (a descriptor names no path to check).
    assert output.pop("fchmod") in ("EPERM", "ERR_ACCESS_DENIED")
    assert output == dict.fromkeys(
        ["chmod", "chmodGid", "writeWithMode", "openWithMode", "promises"], "EPERM"
    )
    left = [p for p in (project / "w").iterdir() if p.stat().st_mode & seccomp.SET_ID_BITS]
    assert left == []


def test_no_new_privs_is_read_off_the_seccomp_probe() -> None:
    """The seccomp probe child sets ``no_new_privs`` before its filter and says so: the
    machine's support takes it from there, with the answer a child of its own gives."""
    from splice_build.runtime.isolation.kernel import Kernel

    found = seccomp.detect.__wrapped__()
    kernel = Kernel.load()
    assert kernel is not None
    own = support._probe_no_new_privs(kernel)
    assert found.no_new_privs is (own is None)
    assert support.detect.__wrapped__().no_new_privs_reason == own


def test_without_a_filter_no_new_privs_is_probed_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no filter is written for the machine, no seccomp child says whether
    ``no_new_privs`` can be set: a child of its own still finds out (it is not taken as
    refused, nor as granted)."""
    from splice_build.runtime.isolation.kernel import Kernel

    monkeypatch.setattr(seccomp, "machine", lambda: "riscv64")
    seccomp.detect.cache_clear()  # else the machine's support reuses this process's answer
    kernel = Kernel.load()
    assert kernel is not None
    found = support.detect.__wrapped__()
    assert found.seccomp.no_new_privs is None
    assert found.no_new_privs is (support._probe_no_new_privs(kernel) is None)
    assert found.no_new_privs_reason is None or "PR_SET_NO_NEW_PRIVS" in found.no_new_privs_reason


def test_the_probe_child_inherits_the_assembled_filter() -> None:
    """The filter is assembled in the parent before the probe child is forked: the child
    installs it as it is, and the sandbox's preexec finds it made (it was assembled twice
    per cold run, ~1 ms of Python each)."""
    seccomp._assembled.cache_clear()
    collect = seccomp.start_detect()
    assert seccomp._assembled.cache_info().currsize == 1
    assert collect().available


def test_a_filter_that_cannot_be_built_is_reported_not_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The filter is built in the parent before the probe child is forked: where libc cannot
    be opened there, the seccomp layer is reported missing, as the child reported it, and
    nothing is said of ``no_new_privs`` (the machine's support then asks a child of its own:
    test_without_a_filter_no_new_privs_is_probed_alone)."""

    def no_libc(*args: object, **kwargs: object) -> object:
        raise OSError(2, "no libc (test)")

    seccomp._libc_prctl.cache_clear()
    seccomp._assembled.cache_clear()
    monkeypatch.setattr(seccomp.ctypes, "CDLL", no_libc)
    try:
        status = seccomp.start_detect()()
    finally:
        seccomp._libc_prctl.cache_clear()
    assert status == seccomp.SeccompStatus(False, "the kernel refused the filter (no libc (test))")
