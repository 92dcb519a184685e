"""A seccomp filter that denies sockets and the kernel's riskier interfaces, installed
between fork and exec.

The tool's process needs no socket of its own: its requests are performed by the parent
(docs/network-security.md). The filter is a classic BPF program given to
``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)`` through ``ctypes`` (no compiler at install
time), after ``no_new_privs``; it is inherited by everything the tool could start. It:

1. kills the process for a system call of any other architecture than the one it was
   written for (``seccomp_data.arch``: an x86_64 process could otherwise enter the i386
   table with ``int 0x80``, where the numbers differ);
2. on x86_64, refuses every x32 system call (numbers with bit 30 set) with ``EPERM``;
3. refuses ``socket`` and ``socketpair`` (every address family: INET, INET6, UNIX, NETLINK,
   PACKET, …) with ``EPERM``;
4. refuses ``io_uring_setup``/``io_uring_enter``/``io_uring_register`` with ``ENOSYS``
   (io_uring can create sockets itself; libuv falls back to its thread pool);
5. refuses with ``EPERM`` the system calls a tool never needs whose only use inside the
   sandbox is to reach past it or to attack the kernel (``DENIED``): the key rings
   (``keyctl``, ``add_key``, ``request_key``: the session key ring is inherited from the
   user who ran Splice, with whatever secrets other programs keep there), new or other
   namespaces (``unshare``, ``setns``, and ``clone`` with any ``CLONE_NEW*`` flag: a nested
   user namespace gives every capability back, and with them ``mount``), every mount call,
   ``bpf``, ``perf_event_open``, ``userfaultfd``, ``ptrace`` and ``process_vm_*``, file
   handles, kernel modules and ``kexec``, and the administrative calls; ``clone3``, whose
   flags sit in a structure the filter cannot read, gets ``ENOSYS`` (the C library falls
   back to ``clone``);
6. refuses with ``ENOSYS`` every system call numbered above ``NEWEST`` (the newest one this
   table knows): a kernel newer than the table gets no new interface through the sandbox,
   as if it were older (its callers fall back, as they must on older kernels);
7. refuses with ``EPERM`` every system call that sets a file's mode (``chmod``, ``fchmod``,
   ``fchmodat``, ``fchmodat2``, ``creat``, ``open``, ``openat``, ``mknod``, ``mknodat``) when
   the mode holds the set-user-ID or set-group-ID bit: a file the tool leaves in a write
   grant would otherwise run as the user who ran Splice, for anyone who can execute it; and
   ``openat2``, whose mode sits in a structure the filter cannot read, with ``ENOSYS`` (its
   callers fall back to ``openat``);
8. allows everything else, so Node starts and runs as usual.

``accept`` and ``recvmsg`` need a socket to begin with, and the process inherits none (its
descriptors are pipes). ``detect()`` tries the filter once in a throw-away child (it must
refuse a real ``socket()`` with ``EPERM``) and says why when it cannot be installed;
``splice doctor`` and every result's ``isolation`` report it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
from collections.abc import Callable
from functools import lru_cache

from splice_build.records import dataclass

# <linux/audit.h>
AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
X32_SYSCALL_BIT = 0x40000000
# <linux/seccomp.h>
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
# <linux/filter.h> classic BPF
_BPF_LD_W_ABS = 0x00 | 0x00 | 0x20
_BPF_ALU_AND_K = 0x04 | 0x50 | 0x00
_BPF_JEQ_K = 0x05 | 0x10 | 0x00
_BPF_JGT_K = 0x05 | 0x20 | 0x00
_BPF_JGE_K = 0x05 | 0x30 | 0x00
_BPF_RET_K = 0x06 | 0x00
_OFFSET_NR = 0  # struct seccomp_data: int nr; __u32 arch; __u64 ip; __u64 args[6]
_OFFSET_ARCH = 4
_OFFSET_ARGS = 16
# S_ISUID | S_ISGID
SET_ID_BITS = 0o6000
# CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
# CLONE_NEWNET (<linux/sched.h>; CLONE_NEWTIME cannot be given to clone, only to unshare)
NAMESPACE_FLAGS = 0x7E020000
# fchmodat2, the newest system call of this table (the same number on both architectures):
# anything above it is ENOSYS.
NEWEST = 452
# socket(2) arguments of the probe (the same on every Linux architecture).
_AF_UNIX = 1
_SOCK_STREAM = 1


@dataclass(frozen=True)
class Arch:
    """System call numbers of one architecture (arch/*/include/uapi/asm/unistd*.h)."""

    name: str
    audit: int
    socket: int
    socketpair: int
    io_uring: tuple[int, int, int]  # setup, enter, register (the generic numbers)
    x32: bool  # x86_64: refuse the x32 ABI too
    # (system call, index of its mode argument) of every call that sets a file's mode
    mode_setters: tuple[tuple[int, int], ...]
    openat2: int
    clone: int  # its flags are argument 0 on both architectures
    clone3: int
    denied: tuple[tuple[str, int], ...]  # refused with EPERM (``DENIED`` on this architecture)


# What a tool never needs, by what it would reach (the names of <asm/unistd*.h>).
DENIED = {
    "key rings": ("add_key", "request_key", "keyctl"),
    "namespaces": ("unshare", "setns"),
    "mounts": (
        "mount",
        "umount2",
        "pivot_root",
        "chroot",
        "open_tree",
        "move_mount",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        "mount_setattr",
    ),
    "kernel interfaces": ("bpf", "perf_event_open", "userfaultfd", "lookup_dcookie"),
    "other processes": ("ptrace", "process_vm_readv", "process_vm_writev"),
    "file handles": ("name_to_handle_at", "open_by_handle_at"),
    "kernel code": (
        "kexec_load",
        "kexec_file_load",
        "init_module",
        "finit_module",
        "delete_module",
    ),
    "administration": (
        "acct",
        "swapon",
        "swapoff",
        "reboot",
        "quotactl",
        "quotactl_fd",
        "syslog",
        "vhangup",
    ),
    "x86 only": ("iopl", "ioperm", "modify_ldt"),
}
_NUMBERS = {
    "x86_64": {
        "add_key": 248,
        "request_key": 249,
        "keyctl": 250,
        "unshare": 272,
        "setns": 308,
        "mount": 165,
        "umount2": 166,
        "pivot_root": 155,
        "chroot": 161,
        "open_tree": 428,
        "move_mount": 429,
        "fsopen": 430,
        "fsconfig": 431,
        "fsmount": 432,
        "fspick": 433,
        "mount_setattr": 442,
        "bpf": 321,
        "perf_event_open": 298,
        "userfaultfd": 323,
        "lookup_dcookie": 212,
        "ptrace": 101,
        "process_vm_readv": 310,
        "process_vm_writev": 311,
        "name_to_handle_at": 303,
        "open_by_handle_at": 304,
        "kexec_load": 246,
        "kexec_file_load": 320,
        "init_module": 175,
        "finit_module": 313,
        "delete_module": 176,
        "acct": 163,
        "swapon": 167,
        "swapoff": 168,
        "reboot": 169,
        "quotactl": 179,
        "quotactl_fd": 443,
        "syslog": 103,
        "vhangup": 153,
        "iopl": 172,
        "ioperm": 173,
        "modify_ldt": 154,
    },
    # The generic table (asm-generic/unistd.h); no iopl, ioperm or modify_ldt.
    "aarch64": {
        "add_key": 217,
        "request_key": 218,
        "keyctl": 219,
        "unshare": 97,
        "setns": 268,
        "mount": 40,
        "umount2": 39,
        "pivot_root": 41,
        "chroot": 51,
        "open_tree": 428,
        "move_mount": 429,
        "fsopen": 430,
        "fsconfig": 431,
        "fsmount": 432,
        "fspick": 433,
        "mount_setattr": 442,
        "bpf": 280,
        "perf_event_open": 241,
        "userfaultfd": 282,
        "lookup_dcookie": 18,
        "ptrace": 117,
        "process_vm_readv": 270,
        "process_vm_writev": 271,
        "name_to_handle_at": 264,
        "open_by_handle_at": 265,
        "kexec_load": 104,
        "kexec_file_load": 294,
        "init_module": 105,
        "finit_module": 273,
        "delete_module": 106,
        "acct": 89,
        "swapon": 224,
        "swapoff": 225,
        "reboot": 142,
        "quotactl": 60,
        "quotactl_fd": 443,
        "syslog": 116,
        "vhangup": 58,
    },
}


def _denied(machine: str) -> tuple[tuple[str, int], ...]:
    numbers = _NUMBERS[machine]
    names = [name for group in DENIED.values() for name in group]
    return tuple((name, numbers[name]) for name in names if name in numbers)


# fchmodat2 (452) and openat2 (437) have the generic numbers on both.
ARCHES = {
    "x86_64": Arch(
        "x86_64",
        AUDIT_ARCH_X86_64,
        41,
        53,
        (425, 426, 427),
        x32=True,
        # chmod, fchmod, creat, mknod, open, fchmodat, fchmodat2, mknodat, openat
        mode_setters=(
            (90, 1),
            (91, 1),
            (85, 1),
            (133, 1),
            (2, 2),
            (268, 2),
            (452, 2),
            (259, 2),
            (257, 3),
        ),
        openat2=437,
        clone=56,
        clone3=435,
        denied=_denied("x86_64"),
    ),
    "aarch64": Arch(
        "aarch64",
        AUDIT_ARCH_AARCH64,
        198,
        199,
        (425, 426, 427),
        x32=False,
        # fchmod, fchmodat, fchmodat2, mknodat, openat (no chmod, creat, mknod, open)
        mode_setters=((52, 1), (53, 2), (452, 2), (33, 2), (56, 3)),
        openat2=437,
        clone=220,
        clone3=435,
        denied=_denied("aarch64"),
    ),
}
_MACHINE_NAMES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


@dataclass(frozen=True)
class SeccompStatus:
    available: bool
    detail: str  # what the filter denies, or why it cannot be installed


def machine() -> str:
    """The kernel's name of this machine (``uname -m``; what ``platform.machine()`` returns
    on Linux, without importing ``platform`` on the run path)."""
    return os.uname().machine


def current_arch() -> Arch | None:
    """The architecture of this (64-bit) Python on Linux, when a filter exists for it."""
    if not sys.platform.startswith("linux") or sys.maxsize < 2**32:
        return None
    name = _MACHINE_NAMES.get(machine().lower())
    return ARCHES.get(name) if name else None


Insn = tuple[int, "int | str", "int | str", int]  # code, jump if true, if false, k


def program(arch: Arch) -> list[Insn | str]:
    """The filter with symbolic jump targets; a ``str`` item is the label of the next one."""
    x32: list[Insn | str] = [(_BPF_JGE_K, "eperm", 0, X32_SYSCALL_BIT)] if arch.x32 else []
    indexes = sorted({index for _number, index in arch.mode_setters})
    # One block per mode argument position: load the argument's low 32 bits (the mode is an
    # unsigned int; little-endian on both architectures), keep the set-ID bits, refuse if any.
    mode_checks: list[Insn | str] = []
    for index in indexes:
        mode_checks += [
            f"mode{index}",
            (_BPF_LD_W_ABS, 0, 0, _OFFSET_ARGS + 8 * index),
            (_BPF_ALU_AND_K, 0, 0, SET_ID_BITS),
            (_BPF_JEQ_K, "allow", "eperm", 0),
        ]
    return [
        (_BPF_LD_W_ABS, 0, 0, _OFFSET_ARCH),
        (_BPF_JEQ_K, "nr", "kill", arch.audit),
        "kill",
        (_BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        "nr",
        (_BPF_LD_W_ABS, 0, 0, _OFFSET_NR),
        *x32,
        (_BPF_JGT_K, "enosys", 0, NEWEST),
        (_BPF_JEQ_K, "eperm", 0, arch.socket),
        (_BPF_JEQ_K, "eperm", 0, arch.socketpair),
        *[(_BPF_JEQ_K, "eperm", 0, number) for _name, number in arch.denied],
        *[(_BPF_JEQ_K, "enosys", 0, number) for number in arch.io_uring],
        (_BPF_JEQ_K, "enosys", 0, arch.openat2),
        (_BPF_JEQ_K, "enosys", 0, arch.clone3),
        (_BPF_JEQ_K, "clone", 0, arch.clone),
        *[(_BPF_JEQ_K, f"mode{index}", 0, number) for number, index in arch.mode_setters],
        (_BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        # clone's flags (an unsigned long: its low 32 bits hold every CLONE_NEW* flag)
        "clone",
        (_BPF_LD_W_ABS, 0, 0, _OFFSET_ARGS),
        (_BPF_ALU_AND_K, 0, 0, NAMESPACE_FLAGS),
        (_BPF_JEQ_K, "allow", "eperm", 0),
        *mode_checks,
        "eperm",
        (_BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM),
        "enosys",
        (_BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS),
        "allow",  # jumps go forward only
        (_BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]


def assemble(arch: Arch) -> bytes:
    """The filter as ``struct sock_filter[]`` bytes (u16 code, u8 jt, u8 jf, u32 k)."""
    labels: dict[str, int] = {}
    insns: list[Insn] = []
    for item in program(arch):
        if isinstance(item, str):
            labels[item] = len(insns)
        else:
            insns.append(item)

    def offset(target: int | str, index: int) -> int:
        if isinstance(target, int):
            return target
        distance = labels[target] - index - 1
        assert 0 <= distance < 256, "BUG: seccomp jump out of range"
        return distance

    out = bytearray()
    for index, (code, jt, jf, k) in enumerate(insns):
        out += struct.pack("=HBBI", code, offset(jt, index), offset(jf, index), k)
    return bytes(out)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


@dataclass(frozen=True)
class Filter:
    """A program ready to install: built in the parent, installed in the child (where no
    allocation should happen)."""

    _buffer: ctypes.Array[ctypes.c_char]
    _prog: _SockFprog
    _prctl: object

    @staticmethod
    def build(arch: Arch) -> Filter:
        code = assemble(arch)
        buffer = ctypes.create_string_buffer(code, len(code))
        prog = _SockFprog(len(code) // 8, ctypes.addressof(buffer))
        return Filter(buffer, prog, _libc_prctl())

    def install(self) -> None:
        """In the child, after ``no_new_privs``: raises OSError naming the step."""
        prctl = self._prctl
        result = prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(self._prog), 0, 0)  # type: ignore[operator]
        if result != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"prctl(PR_SET_SECCOMP): {os.strerror(err)}")


@lru_cache(maxsize=1)
def _libc_prctl() -> object:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    libc.prctl.restype = ctypes.c_int
    return libc.prctl


def _probe(report_fd: int) -> None:
    """In a throw-away child: install the filter and make sure a real socket() fails.

    socket() is called through libc, not the ``socket`` module, whose import (its enums)
    would cost the probe, which a cold ``splice run`` waits for, ~3 ms."""

    def report(text: str) -> None:
        os.write(report_fd, text.encode("utf-8", "replace"))

    arch = current_arch()
    assert arch is not None, "BUG: probing seccomp without a known architecture"
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        Filter.build(arch).install()
    except OSError as exc:
        report(f"fail {exc.strerror or exc}")
        return
    fd = libc.socket(_AF_UNIX, _SOCK_STREAM, 0)
    if fd >= 0:
        os.close(fd)
        report("fail the filter did not refuse socket()")
        return
    err = ctypes.get_errno()
    report("ok" if err == errno.EPERM else f"fail socket() gave {os.strerror(err)}")


@lru_cache(maxsize=1)
def detect() -> SeccompStatus:
    """Whether the filter can be installed here (tried once per process, in a child)."""
    return start_detect()()


def start_detect() -> Callable[[], SeccompStatus]:
    """Fork the probe child now and return what collects its answer, so that a caller can
    run its other probes while this one works (``support.detect`` does: they are
    independent children, and on two cores side by side they cost one)."""
    arch = current_arch()
    if arch is None:
        why = (
            "not Linux"
            if not sys.platform.startswith("linux")
            else (f"no filter is written for the {machine()} architecture")
        )
        status = SeccompStatus(False, why)
        return lambda: status
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.close(read_fd)
            _probe(write_fd)
        finally:
            os._exit(0)
    os.close(write_fd)

    def collect() -> SeccompStatus:
        with os.fdopen(read_fd, "rb") as reader:
            answer = reader.read(4096).decode("utf-8", "replace").strip()
        os.waitpid(pid, 0)
        if answer == "ok":
            return SeccompStatus(
                True,
                f"{arch.name}: socket and socketpair refused (EPERM, every address family), "
                "set-user-ID and set-group-ID modes refused (EPERM), key rings, namespaces, "
                "mounts, bpf, perf, userfaultfd, ptrace and kernel modules refused (EPERM), "
                f"io_uring, openat2, clone3 and system calls above {NEWEST} refused (ENOSYS), "
                "other architectures' system calls kill the process",
            )
        reason = answer.removeprefix("fail ").strip() or "the probe died"
        return SeccompStatus(False, f"the kernel refused the filter ({reason})")

    return collect
