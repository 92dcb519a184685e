"""A seccomp filter that denies creating sockets, installed between fork and exec.

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
5. refuses with ``EPERM`` every system call that sets a file's mode (``chmod``, ``fchmod``,
   ``fchmodat``, ``fchmodat2``, ``creat``, ``open``, ``openat``, ``mknod``, ``mknodat``) when
   the mode holds the set-user-ID or set-group-ID bit: a file the tool leaves in a write
   grant would otherwise run as the user who ran Splice, for anyone who can execute it; and
   ``openat2``, whose mode sits in a structure the filter cannot read, with ``ENOSYS`` (its
   callers fall back to ``openat``);
6. allows everything else, so Node starts and runs as usual.

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
_BPF_JGE_K = 0x05 | 0x30 | 0x00
_BPF_RET_K = 0x06 | 0x00
_OFFSET_NR = 0  # struct seccomp_data: int nr; __u32 arch; __u64 ip; __u64 args[6]
_OFFSET_ARCH = 4
_OFFSET_ARGS = 16
# S_ISUID | S_ISGID
SET_ID_BITS = 0o6000
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
            (_BPF_JEQ_K, "mode allowed", "eperm", 0),
        ]
    return [
        (_BPF_LD_W_ABS, 0, 0, _OFFSET_ARCH),
        (_BPF_JEQ_K, "nr", "kill", arch.audit),
        "kill",
        (_BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        "nr",
        (_BPF_LD_W_ABS, 0, 0, _OFFSET_NR),
        *x32,
        (_BPF_JEQ_K, "eperm", 0, arch.socket),
        (_BPF_JEQ_K, "eperm", 0, arch.socketpair),
        *[(_BPF_JEQ_K, "enosys", 0, number) for number in arch.io_uring],
        (_BPF_JEQ_K, "enosys", 0, arch.openat2),
        *[(_BPF_JEQ_K, f"mode{index}", 0, number) for number, index in arch.mode_setters],
        (_BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        *mode_checks,
        "eperm",
        (_BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM),
        "enosys",
        (_BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS),
        "mode allowed",  # jumps go forward only
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
                "set-user-ID and set-group-ID modes refused (EPERM), io_uring and openat2 "
                "refused (ENOSYS), other architectures' system calls kill the process",
            )
        reason = answer.removeprefix("fail ").strip() or "the probe died"
        return SeccompStatus(False, f"the kernel refused the filter ({reason})")

    return collect
