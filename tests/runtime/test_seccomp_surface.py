"""The seccomp allow-list (isolation/seccomp.py ``ALLOWED``) walked over every system call
number, what it refuses besides sockets, and the read-only ``/proc/sys`` of the OS layer,
attacked for real from inside the sandbox.

A process started with the sandbox's own ``preexec_fn`` (the real plan: namespaces, file
limits, the filter) tries every system call number; the same code without the filter shows
what the kernel itself answers (so each test can fail). The key ring attack is the one that
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

from splice_build import records
from splice_build.runtime import SpliceRuntime
from splice_build.runtime.isolation import kernel, plan, rlimits, seccomp, support
from splice_build.runtime.isolation.child import make_preexec
from testing.hostile_packages import write_package
from testing.isolation import needs_os_layer, require_seccomp


@pytest.fixture(autouse=True)
def _seccomp_here() -> None:
    require_seccomp()


# Inside the process under test: every system call number from 0 to past NEWEST with
# harmless arguments (-1 everywhere, an invalid descriptor, pointer, size or flag for each
# allowed call; 0 where the filter checks a mode or flags, an allowed number where it checks
# an ioctl request or a prctl option), answered "ok" or with its errno; one JSON object out. The calls that cannot return (exit, exit_group, rt_sigreturn, and
# uretprobe outside a uprobe's trampoline) and vfork (whose child would run on the caller's
# stack) are left out.
WALK = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
numbers, fixed, skipped = json.loads(sys.argv[1])
me = os.getpid()
def raw(number):
    args = [fixed.get(str(number), {}).get(str(index), -1) for index in range(6)]
    result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
    if os.getpid() != me:
        os._exit(0)  # the child of a fork or clone that went through
    return "ok" if result >= 0 else ctypes.get_errno()
print(json.dumps({n: raw(n) for n in numbers if n not in skipped}))
"""
# The walk's end: a few numbers past the newest the filter knows.
PAST_NEWEST = 32


def _walk_args(arch: seccomp.Arch, numbers: list[int]) -> str:
    fixed: dict[int, dict[int, int]] = {number: {index: 0} for number, index in arch.mode_setters}
    fixed[arch.clone] = {0: 0}
    for call, listed in seccomp.argument_lists().items():  # the first number of its list
        fixed[arch.numbers[call]] = {listed.argument: next(iter(listed.allowed.values()))}
    calls = ("exit", "exit_group", "rt_sigreturn", "vfork")
    skipped = [arch.numbers[call] for call in calls if call in arch.numbers]
    skipped += [n for call, n in seccomp.UNFILTERED[arch.name].items() if call == "uretprobe"]
    return json.dumps([numbers, fixed, skipped])


def _auto_plan() -> plan.IsolationPlan:
    return plan.plan_for("auto", support.detect())


def _run(
    code: str,
    *args: str,
    filtered: bool = True,
    env: dict[str, str] | None = None,
    sandbox: plan.IsolationPlan | None = None,
):
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=make_preexec(sandbox or _auto_plan(), os.getpid()) if filtered else None,
        env={"PATH": os.environ.get("PATH", ""), **(env or {})},
        check=False,
    )


def _walk(arch: seccomp.Arch, numbers: list[int], sandbox: plan.IsolationPlan) -> dict[int, object]:
    done = _run(WALK, _walk_args(arch, numbers), sandbox=sandbox)
    assert done.returncode == 0, done.stderr
    return {int(n): answer for n, answer in json.loads(done.stdout.splitlines()[-1]).items()}


def test_every_system_call_number_gets_the_allow_lists_answer() -> None:
    """The whole number space, in a real sandbox: a number outside ``ALLOWED`` is refused
    (EPERM, or ENOSYS for ``FALLBACK`` and past ``NEWEST``) and one inside it reaches the
    kernel: it answers exactly as in the same sandbox without the filter."""
    arch = seccomp.current_arch()
    assert arch is not None
    sandbox = _auto_plan()
    assert sandbox.seccomp
    everything = list(range(seccomp.NEWEST + PAST_NEWEST))
    refusals = {"eperm": errno.EPERM, "enosys": errno.ENOSYS}
    filtered = _walk(arch, everything, sandbox)
    unseen = set(seccomp.UNFILTERED[arch.name].values())  # the kernel's exception
    passed = [n for n in range(seccomp.NEWEST + 1) if arch.answer(n) not in refusals or n in unseen]
    unfiltered = _walk(arch, passed, records.replace(sandbox, seccomp=False))
    wrong = {}
    for number, answer in filtered.items():
        rule = arch.answer(number) if number <= seccomp.NEWEST else "enosys"
        rule = "kernel" if number in unseen else rule
        expected = refusals.get(rule, unfiltered.get(number))
        if answer != expected:
            wrong[number] = (rule, answer, expected)
    assert wrong == {}, wrong  # number: (the filter's rule, the answer, the expected one)
    # The walk did reach the kernel (what it refuses unfiltered is not all EPERM/ENOSYS)
    # and the allow-list holds Node's everyday calls.
    reached = {errno.EBADF, errno.EFAULT, errno.EINVAL} & set(unfiltered.values())
    assert reached == {errno.EBADF, errno.EFAULT, errno.EINVAL}
    for call in ("read", "mmap", "futex", "epoll_ctl", "openat", "statx", "getrandom"):
        assert arch.answer(arch.numbers[call]) in ("allow", "mode3"), call


# By name: what reaches past the sandbox, and what the former list of refused calls let
# through (a file without a name to execute, the splice family of the "Dirty Pipe" attack,
# another process's descriptors, pages or layout, System V queues, turning ASLR off, and
# file capabilities through security.capability).
REFUSED = {
    "keyctl": (250, 219),
    "unshare": (272, 97),
    "mount": (165, 40),
    "bpf": (321, 280),
    "ptrace": (101, 117),
    "memfd_create": (319, 279),
    "splice": (275, 76),
    "vmsplice": (278, 75),
    "tee": (276, 77),
    "pidfd_getfd": (438, 438),
    "kcmp": (312, 272),
    "move_pages": (279, 239),
    "process_madvise": (440, 440),
    "msgget": (68, 186),
    "personality": (135, 92),
    "setxattr": (188, 5),
    "fsetxattr": (190, 7),
}


def test_calls_outside_the_allow_list_are_refused_by_name() -> None:
    arch = seccomp.current_arch()
    assert arch is not None
    numbers = {call: pair[arch.name == "aarch64"] for call, pair in REFUSED.items()}
    out = _walk(arch, sorted(numbers.values()), _auto_plan())
    assert {call: out[number] for call, number in numbers.items()} == dict.fromkeys(
        numbers, errno.EPERM
    )


CLONES = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CLONE, SIGCHLD = json.loads(sys.argv[1]), 17
def clone(flags):
    args = [ctypes.c_long(flags | SIGCHLD)] + [ctypes.c_long(0)] * 4
    result = libc.syscall(ctypes.c_long(CLONE), *args)
    if result == 0:
        os._exit(7)
    return os.waitstatus_to_exitcode(os.waitpid(result, 0)[1]) if result > 0 else ctypes.get_errno()
print(json.dumps({"plain": clone(0), "new user": clone(0x10000000), "new net": clone(0x40000000)}))
"""


def test_clone_is_allowed_without_namespace_flags_only() -> None:
    arch = seccomp.current_arch()
    assert arch is not None
    done = _run(CLONES, str(arch.clone))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out == {"plain": 7, "new user": errno.EPERM, "new net": errno.EPERM}


CONTRAST = r"""
import ctypes, json, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def raw(number, *args):
    result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
    return "ok" if result >= 0 else ctypes.get_errno()
keyctl, unshare, clone3 = json.loads(sys.argv[1])
out = {"keyctl": raw(keyctl, -1, 0), "unshare": raw(unshare, -1), "clone3": raw(clone3, 0, 0)}
print(json.dumps(out))
"""


def test_without_the_filter_the_same_probe_reaches_the_kernel() -> None:
    """The probe can fail: unfiltered, the kernel answers (only calls that change nothing
    here are tried: this process is not sandboxed)."""
    arch = seccomp.current_arch()
    assert arch is not None
    keyctl, unshare = {"x86_64": (250, 272), "aarch64": (219, 97)}[arch.name]
    args = json.dumps([keyctl, unshare, arch.numbers["clone3"]])
    done = _run(CONTRAST, args, filtered=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert errno.EPERM not in (out["keyctl"], out["unshare"]), out
    assert out["clone3"] != errno.ENOSYS, out  # Linux 5.3 and newer
    filtered = json.loads(_run(CONTRAST, args).stdout.splitlines()[-1])
    assert filtered == {"keyctl": errno.EPERM, "unshare": errno.EPERM, "clone3": errno.ENOSYS}


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


MEM_WRITER = """import fs from 'node:fs';
export default (input, ctx) => {
  const path = input.direct ? '/proc/self/mem' : `${ctx.paths.project}/out/mem`;
  try { fs.closeSync(fs.openSync(path, 'r+')); return { write: 'ok' }; }
  catch (e) { return { write: e.code }; }
};
"""


@pytest.mark.node
@needs_os_layer()
@pytest.mark.parametrize("route", ["planted link", "direct, guards off"])
def test_a_tool_cannot_open_its_own_memory_for_writing(tmp_path: Path, route: str) -> None:
    """``/proc/self/mem`` opened for writing is native code run past the in-process guards.
    A link a checkout planted in a write grant (``out/mem -> /proc/self/mem``) passes Node's
    permission model, which checks only the path it is given, and the private /proc is in
    the file view: the whole /proc is read-only, EROFS."""
    project = tmp_path / "project"
    (project / "out").mkdir(parents=True)
    (project / "out" / "mem").symlink_to("/proc/self/mem")
    direct = route.startswith("direct")
    runtime = SpliceRuntime(
        project_root=project, env={}, isolation="require-os", _unsafe_in_process_guards_off=direct
    )
    pkg = write_package(tmp_path / "pkgs", MEM_WRITER, permissions={"fs": {"write": ["out"]}})
    result = runtime.execute(runtime.load(pkg), "t", {"direct": direct})
    assert result.ok, result.to_json()
    assert result.output == {"write": "EROFS"}


HEADERS = {
    "x86_64": ("/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "/usr/include/asm/unistd_64.h"),
    "aarch64": ("/usr/include/asm-generic/unistd.h",),
}


@pytest.mark.parametrize("name", sorted(seccomp.ARCHES))
def test_the_tables_numbers_are_the_kernel_headers(name: str) -> None:
    """Each number the filter knows is the one the kernel's own table gives its name (where
    the headers are installed; the generic table is aarch64's, where ``newfstatat`` is
    ``fstatat``), and every name of ``ALLOWED`` is a system call of some architecture."""
    header = next((Path(p) for p in HEADERS[name] if Path(p).is_file()), None)
    if header is None:
        pytest.skip(reason=f"no system call header for {name} here")
    defined = re.findall(r"#define __NR(?:3264)?_(\w+)\s+(\d+)", header.read_text("utf-8"))
    numbers = {call: int(number) for call, number in defined}
    if "fstatat" in numbers:
        numbers["newfstatat"] = numbers["fstatat"]
    arch = seccomp.ARCHES[name]
    known = {call: number for call, number in arch.numbers.items() if call in numbers}
    assert {call: numbers[call] for call in known} == known
    assert set(arch.numbers) - set(known) <= {"fchmodat2"}  # newer than some headers
    named = {call for group in seccomp.ALLOWED.values() for call in group}
    everywhere = {call for each in seccomp.ARCHES.values() for call in each.numbers}
    assert named <= everywhere, named - everywhere
    # A newer header names calls above NEWEST: they are ENOSYS until someone reviews them,
    # adds the needed ones to ALLOWED and raises NEWEST.
    newer = sorted(call for call, number in numbers.items() if number > seccomp.NEWEST)
    assert newer == [], f"review {newer} for seccomp.ALLOWED, then raise seccomp.NEWEST"


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


# A tool (in-process guards off: the kernel alone must hold) reads the key lists of /proc.
PROC_KEYS_TOOL = """import fs from 'node:fs';
const read = (p) => { try { return fs.readFileSync(p, 'utf8'); } catch (e) { return e.code; } };
export default () => ({ keys: read('/proc/keys'), users: read('/proc/key-users') });
"""
# The user's side: a key named like a secret in a fresh session key ring; what the user sees
# in /proc/keys, then what the tool sees (with the file view, and with a private /proc only).
RUN_PROC_KEYS = (
    KEYS
    + r"""
from pathlib import Path
from splice_build.runtime import SpliceRuntime
from testing.hostile_packages import write_package
if keyctl(ctypes.c_long(1), b"splice-test") < 0:
    print(json.dumps({"skip": os.strerror(ctypes.get_errno())}))
    sys.exit(0)
add_key(b"splice-secret-name", b"hunter2")
tmp = Path(sys.argv[1])
project = tmp / "project"
project.mkdir()
runtime = SpliceRuntime(project_root=project, env={}, _unsafe_in_process_guards_off=True)
result = runtime.execute(runtime.load(write_package(tmp / "pkgs", sys.argv[2])), "t", {})
with open("/proc/keys") as f:
    outside = f.read()
print(json.dumps({"outside": outside, "tool": result.output if result.ok else result.to_json(),
                  "isolation": result.to_json()["isolation"]}))
"""
)


@pytest.mark.node
@needs_os_layer()
def test_proc_keys_and_key_users_are_masked(tmp_path: Path) -> None:
    """``/proc/keys`` listed every key of the user's key rings (id, type and name: the
    session key ring's ``splice-secret-name``) and ``/proc/key-users`` the key counts of each
    user, though the filter refuses ``keyctl``: both read as empty (``/dev/null`` bound over
    them)."""
    done = subprocess.run(
        [sys.executable, "-c", RUN_PROC_KEYS, str(tmp_path), PROC_KEYS_TOOL],
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
    assert "splice-secret-name" in out["outside"]  # the attack reads this much unmasked
    assert out["isolation"]["layer"] == "os", out["isolation"]
    assert out["tool"] == {"keys": "", "users": ""}, out["tool"]


# Each named /proc file this kernel has: the number of bytes read from it, or minus the
# error's number.
READ_PROC = r"""
import json, os, sys
def size(name):
    try:
        with open(os.open('/proc/' + name, os.O_RDONLY | os.O_NONBLOCK), 'rb') as f:
            return len(f.read(1 << 20))
    except OSError as e:
        return -e.errno
print(json.dumps({n: size(n) for n in json.loads(sys.argv[1]) if os.path.lexists('/proc/' + n)}))
"""


def _root_only_proc_files() -> set[str]:
    """The files at the top of this kernel's /proc that only their owner (root) may read."""
    found = set()
    for entry in os.scandir("/proc"):
        if entry.is_file(follow_symlinks=False) and not entry.stat().st_mode & 0o044:
            found.add(entry.name)
    return found


@pytest.mark.parametrize("file_view", [True, False], ids=["file-view", "private-proc-only"])
def test_key_lists_and_root_only_proc_files_read_as_empty(file_view: bool) -> None:
    """Inside the sandbox, with the file view and where the kernel refuses it (the private
    /proc is mounted over the host's), every ``MASKED_PROC`` file and every file at the top
    of /proc that only root may read (walked from this kernel's /proc, so a file a newer
    kernel adds is checked too) reads as empty or not at all. Outside, ``/proc/key-users``
    lists the current user, and, run as root, the root-only files have something to read."""
    names = sorted(set(kernel.MASKED_PROC) | _root_only_proc_files())
    sandbox = records.replace(_auto_plan(), file_view=file_view)
    done = _run(READ_PROC, json.dumps(names), sandbox=sandbox)
    assert done.returncode == 0, done.stderr
    inside = json.loads(done.stdout.splitlines()[-1])
    assert "key-users" in inside
    assert {n: v for n, v in inside.items() if v > 0} == {}, inside
    # Not /proc/kmsg outside: root reading it takes messages away from the system's logger.
    unmasked = [n for n in names if n != "kmsg"]
    bare = _run(READ_PROC, json.dumps(unmasked), sandbox=records.replace(sandbox, os_layer=False))
    assert bare.returncode == 0, bare.stderr
    outside = json.loads(bare.stdout.splitlines()[-1])
    assert outside["key-users"] > 0, outside
    if os.geteuid() == 0:
        readable = {n for n, v in outside.items() if v > 0}
        assert readable & _root_only_proc_files(), outside


# Inside the process under test: ioctl on descriptor -1 (the kernel answers EBADF to every
# request it is asked, so any other answer is the filter's) and prctl with -1 arguments, for
# every number given (ioctl: each class's 65536 types and numbers, then the extra ones); one
# JSON object out, {call: ["ok" | errno, ...]} in the order of the numbers.
ARGUMENT_WALK = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ioctl, prctl, classes, extra, options = json.loads(sys.argv[1])
requests = [high << 16 | low for high in classes for low in range(0x10000)] + extra
def raw(number, *args):
    result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
    return "ok" if result >= 0 else ctypes.get_errno()
out = {
    "ioctl": [raw(ioctl, -1, n, 0) for n in requests],
    "prctl": [raw(prctl, n, -1, -1, -1, -1) for n in options],
}
print(json.dumps(out))
"""
# <asm-generic/ioctl.h>: dir (2 bits) << 30 | size (14 bits) << 16 | type << 8 | nr.
_NONE, _WRITE, _READ = 0, 1, 2
# Requests the filter must refuse, by name: input injected into a terminal, a virtual
# console's and a line discipline's controls, clones and dedupes across files, a file
# system's flags (chattr, set by a file's owner without any capability) and verity, the
# namespaces' ioctls, the virtual terminal's keyboard, a terminal's settings.
DANGEROUS_IOCTLS = {
    "TIOCSTI": 0x5412,
    "TIOCLINUX": 0x541C,
    "TIOCSETD": 0x5423,
    "TIOCSCTTY": 0x540E,
    "TIOCSPGRP": 0x5410,
    "TIOCSWINSZ": 0x5414,
    "TCSETS": 0x5402,
    "FICLONE": 0x40049409,
    "FICLONERANGE": 0x4020940D,
    "FIDEDUPERANGE": 0xC0189436,
    "FS_IOC_SETFLAGS": 0x40086602,
    "FS_IOC_FSSETXATTR": 0x401C5820,
    "FS_IOC_ENABLE_VERITY": 0x40806685,
    "NS_GET_USERNS": 0xB701,
    "NS_GET_PARENT": 0xB702,
    "KDSETMODE": 0x4B3A,
    "FIOASYNC": 0x5452,
}
# Options the filter must refuse, by name (<linux/prctl.h>).
DANGEROUS_PRCTLS = {
    "PR_SET_DUMPABLE": 4,
    "PR_SET_KEEPCAPS": 8,
    "PR_SET_SECCOMP": 22,
    "PR_CAPBSET_DROP": 24,
    "PR_SET_SECUREBITS": 28,
    "PR_SET_MM": 35,
    "PR_CAP_AMBIENT": 47,
    "PR_SET_SPECULATION_CTRL": 53,
    "PR_SCHED_CORE": 62,
    "PR_SET_PTRACER": 0x59616D61,
    "PR_SET_VMA": 0x53564D41,
}
# The walk's end past the newest prctl option of <linux/prctl.h> (PR_FUTEX_HASH, 78).
PRCTL_WALK_END = 78 + 32


def _requests() -> tuple[list[int], list[int]]:
    """(classes, extra): every direction and size class (the request's high 16 bits) the
    allow-list uses or a request of DANGEROUS_IOCTLS has, each walked over all its types and
    numbers (0 to 255 each); and the listed numbers with bits above 32 set (the kernel takes
    the request as a 32-bit int: the filter must too), the all-ones requests and the
    dangerous ones."""
    listed = seccomp.argument_lists()["ioctl"].allowed.values()
    classes = {number >> 16 for number in (*listed, *DANGEROUS_IOCTLS.values())}
    classes |= {_NONE, _WRITE << 14 | 4, _READ << 14 | 4, (_READ | _WRITE) << 14 | 8}
    wide = [1 << 32 | number for number in listed] + [0xFFFFFFFF, (1 << 63) - 1]
    return sorted(classes), wide + list(DANGEROUS_IOCTLS.values())


def test_every_ioctl_request_and_prctl_option_gets_the_allow_lists_answer() -> None:
    """The whole space of both calls' numbers, in a real sandbox: a number whose low 32 bits
    are on ``schemas/seccomp_args.json``'s list reaches the kernel (it answers as in the
    same sandbox without the filter), every other one gets the list's refusal."""
    arch = seccomp.current_arch()
    assert arch is not None
    lists = seccomp.argument_lists()
    classes, extra = _requests()
    options = list(range(PRCTL_WALK_END)) + list(DANGEROUS_PRCTLS.values())
    options += [1 << 32 | number for number in lists["prctl"].allowed.values()]
    walked = {
        "ioctl": [high << 16 | low for high in classes for low in range(0x10000)] + extra,
        "prctl": options,
    }
    allowed = {call: set(lists[call].allowed.values()) for call in lists}
    passed = {
        call: [n for n in numbers if n & 0xFFFFFFFF in allowed[call]]
        for call, numbers in walked.items()
    }

    def walk(sandbox: plan.IsolationPlan, classes: list[int], extra: list[int], options: list[int]):
        numbers = [arch.numbers["ioctl"], arch.numbers["prctl"], classes, extra, options]
        done = _run(ARGUMENT_WALK, json.dumps(numbers), sandbox=sandbox)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    sandbox = _auto_plan()
    assert sandbox.seccomp
    filtered = walk(sandbox, classes, extra, options)
    bare = walk(records.replace(sandbox, seccomp=False), [], passed["ioctl"], passed["prctl"])
    unfiltered = {call: dict(zip(passed[call], bare[call], strict=True)) for call in passed}
    wrong = {}
    answers = {}
    for call, numbers in walked.items():
        answers[call] = dict(zip(numbers, filtered[call], strict=True))
        for number, answer in answers[call].items():
            if number & 0xFFFFFFFF in allowed[call]:
                expected = unfiltered[call][number]
            else:
                expected = lists[call].refusal
            if answer != expected:
                wrong[f"{call} {number:#x}"] = (answer, expected)
    assert wrong == {}, wrong
    # The allowed requests did reach the kernel (descriptor -1: EBADF), the refusals are the
    # list's, and every dangerous number is refused.
    assert set(unfiltered["ioctl"].values()) == {errno.EBADF}
    assert (lists["ioctl"].refusal, lists["prctl"].refusal) == (errno.ENOTTY, errno.EPERM)
    for name, number in DANGEROUS_IOCTLS.items():
        assert answers["ioctl"][number] == errno.ENOTTY, name
    for name, number in DANGEROUS_PRCTLS.items():
        assert answers["prctl"][number] == errno.EPERM, name
    assert len(classes) >= 8  # the walk covered every class: 65536 requests each


def test_the_argument_lists_are_read_from_the_schema_file() -> None:
    """One place for the numbers: the filter's blocks hold exactly the file's numbers."""
    from importlib import resources

    data = resources.files("splice_build.schemas") / "seccomp_args.json"
    calls = json.loads(data.read_text("utf-8"))["calls"]
    lists = seccomp.argument_lists()
    assert set(calls) == set(lists) == {"ioctl", "prctl"}
    for call, entry in calls.items():
        numbers = {name: int(str(e["number"]), 0) for name, e in entry["allowed"].items()}
        assert lists[call].allowed == numbers
        assert all(e["why"] for e in entry["allowed"].values())
    arch = seccomp.current_arch()
    assert arch is not None
    assert arch.answer(arch.numbers["ioctl"]) == "ioctl"
    assert arch.answer(arch.numbers["prctl"]) == "prctl"


# A malicious tool's native program: marks a file of its write grant ``nodump`` (backups skip
# it) and ``sync`` through FS_IOC_SETFLAGS (a file's owner needs no capability for either;
# Node has no API for it, the kernel's file system does), and loosens its own process.
SETFLAGS_C = r"""
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <linux/fs.h>
int main(int argc, char **argv) {
  int fd = open(argv[1], O_RDONLY);
  long flags = FS_NODUMP_FL | FS_SYNC_FL;
  int set = ioctl(fd, FS_IOC_SETFLAGS, &flags);
  printf("{\"setflags\": %d", set == 0 ? 0 : errno);
  int ptracer = prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  printf(", \"ptracer\": %d", ptracer == 0 ? 0 : errno);
  int slack = prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
  printf(", \"timerslack\": %d}\n", slack == 0 ? 0 : errno);
  return 0;
}
"""
SETFLAGS_TOOL = """
import { spawnSync } from 'node:child_process'; import fs from 'node:fs';
const attack = new URL('../bin/attack', import.meta.url).pathname;
export default (i, ctx) => {
  const report = ctx.paths.project + '/out/report';
  const fd = fs.openSync(report, 'w');
  spawnSync(attack, [ctx.paths.project + '/out/victim'], { stdio: ['ignore', fd, 'ignore'] });
  fs.closeSync(fd);
  return JSON.parse(fs.readFileSync(report, 'utf8'));
};
"""
_FS_IOC_GETFLAGS, _FS_IOC_SETFLAGS, _FS_NODUMP_FL = 0x80086601, 0x40086602, 0x40


def _file_flags(path: Path, value: int | None = None) -> int:
    import fcntl
    import struct

    with open(path, "rb") as f:
        if value is not None:
            fcntl.ioctl(f.fileno(), _FS_IOC_SETFLAGS, struct.pack("l", value))
        return struct.unpack("l", fcntl.ioctl(f.fileno(), _FS_IOC_GETFLAGS, bytes(8)))[0]


@pytest.mark.node
@needs_os_layer()
def test_a_native_tool_cannot_set_file_flags_or_loosen_its_process(tmp_path: Path) -> None:
    """Before the argument lists, ``ioctl`` and ``prctl`` reached the kernel with any
    number: the program above set ``nodump`` and ``sync`` on a file of the user's (in its
    write grant: seen outside, ``lsattr``) and its own ptracer and timer slack."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip(reason="no C compiler to build the malicious tool's program")
    project = tmp_path / "project"
    (project / "out").mkdir(parents=True)
    victim = project / "out" / "victim"
    victim.write_text("the user's file\n", encoding="utf-8")
    try:
        before = _file_flags(victim)
        if not _file_flags(victim, before | _FS_NODUMP_FL) & _FS_NODUMP_FL:
            raise OSError(errno.ENOTTY, "the flag did not stick")
        _file_flags(victim, before)
    except OSError as exc:
        pytest.skip(reason=f"this file system keeps no file flags: {exc}")
    source = tmp_path / "attack.c"
    source.write_text(SETFLAGS_C, encoding="utf-8")
    subprocess.run([compiler, "-o", str(tmp_path / "attack"), str(source)], check=True)
    package = write_package(
        tmp_path / "pkgs",
        SETFLAGS_TOOL,
        permissions={"fs": {"read": [], "write": ["out"]}},
        extra_files={"bin/attack": (tmp_path / "attack").read_bytes()},
    )
    (package / "bin" / "attack").chmod(0o755)
    runtime = SpliceRuntime(project_root=project, env={}, _unsafe_in_process_guards_off=True)
    result = runtime.execute(runtime.load(package), "t", {})
    assert result.ok, result.to_json()
    assert result.to_json()["isolation"]["seccomp"] != "off"
    assert result.output == {
        "setflags": errno.ENOTTY,
        "ptracer": errno.EPERM,
        "timerslack": errno.EPERM,
    }
    assert _file_flags(victim) == before
