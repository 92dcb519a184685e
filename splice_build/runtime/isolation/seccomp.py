"""A seccomp filter that allows only the system calls a tool needs, installed between fork
and exec.

The tool's process needs no socket of its own: its requests are performed by the parent
(docs/network-security.md), and its files are those of its file view. The filter is a
classic BPF program given to ``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)`` through
``ctypes`` (no compiler at install time), after ``no_new_privs``; it is inherited by
everything the tool could start. It is an allow-list, and fails closed:

1. a system call of any other architecture than the one it was written for
   (``seccomp_data.arch``: an x86_64 process could otherwise enter the i386 table with
   ``int 0x80``, where the numbers differ) kills the process;
2. on x86_64, every x32 system call (numbers with bit 30 set) gets ``EPERM``;
3. every number above ``NEWEST`` (the newest system call this table knows) gets
   ``ENOSYS``: a kernel newer than the table offers no new interface through the sandbox,
   as if it were older, and its callers fall back as they must there;
4. the calls of ``FALLBACK`` get ``ENOSYS``: the C library and libuv try them first and
   fall back to an allowed one (``io_uring`` to libuv's thread pool, ``clone3``, whose flags
   sit in a structure the filter cannot read, to ``clone``, ``openat2``, whose mode sits in
   such a structure too, to ``openat``);
5. the calls of ``ALLOWED`` (Node.js 24 with glibc, libuv and V8, and the ordinary programs a
   tool may start, grouped by purpose) are allowed, with these checks on their arguments:
   ``clone`` with any ``CLONE_NEW*`` flag gets ``EPERM`` (a nested user namespace gives every
   capability back, and with them ``mount``), and so does every call that sets a file's mode
   (``chmod``, ``fchmod``, ``fchmodat``, ``fchmodat2``, ``creat``, ``open``, ``openat``,
   ``mknod``, ``mknodat``) when the mode holds the set-user-ID or set-group-ID bit: a file
   the tool leaves in a write grant would otherwise run as the user who ran Splice;
   ``ioctl`` and ``prctl`` are allowed only with the request and option numbers of
   ``splice_build/schemas/seccomp_args.json`` (``ArgumentList``; terminal queries,
   non-blocking and close-on-exec modes, thread names, ...), every other number gets that
   file's refusal (``ENOTTY``, ``EPERM``): each is a door to a whole family of kernel
   interfaces (a file system's flags and verity, clones and dedupes across files, terminal
   input injection and line disciplines, the namespaces' ioctls; a process's memory map,
   ptracer, speculation and seccomp settings) that no tool needs;
6. every other call gets ``EPERM``: sockets (``socket``, ``socketpair``: every address
   family) and the socket calls, the key rings (inherited from the user who ran Splice, with
   whatever secrets other programs keep there), namespaces, mounts, ``bpf``, ``ptrace``, file
   handles, kernel modules, the administrative calls, and whatever a kernel adds below
   ``NEWEST`` on an architecture whose table has gaps. (x86_64's ``uretprobe`` and
   ``uprobe`` are the exception the kernel makes for every filter: ``UNFILTERED``.)

The table was taken from ``strace -f`` of sandboxed tools (every official skill's tests, file
access, fetch, timers, crypto, zlib, TypeScript, allocations up to the memory limit, stack
overflow, the exit paths, the deadline's signals), plus the calls a libc may use in their
place (``stat`` or ``newfstatat``, ``poll`` or ``ppoll``, ...), the ordinary file calls, and
those of the programs a tool may start (``fork``, ``execve``, ``wait4``). The filter finds a
number by a binary search over runs of numbers that get the same answer, so an allowed call
costs about eight comparisons, whatever its number. tests/runtime/test_seccomp_surface.py
calls every number from 0 to past ``NEWEST`` inside the sandbox and checks each answer.

``accept`` and ``recvmsg`` need a socket to begin with, and are refused besides.
``detect()`` tries the filter once in a throw-away child (it must refuse a real ``socket()``
with ``EPERM``) and says why when it cannot be installed; ``splice doctor`` and every
result's ``isolation`` report it.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import struct
import sys
from collections.abc import Callable, Mapping
from functools import lru_cache
from importlib import resources

from splice_build.records import dataclass
from splice_build.runtime.forks import fork_probe, reap

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
_BPF_JA = 0x05 | 0x00
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

# What a sandboxed tool may call, by purpose (the names of <asm/unistd*.h>; a name missing
# from an architecture's table, like ``open`` on aarch64, is simply not there). Extended
# attributes are read only: writing ``security.capability`` gives a file capabilities, as a
# set-ID mode would (so ``cp -a`` cannot copy an ACL; Node never writes one).
ALLOWED = {
    "memory: V8's heap and code space, the C library's allocator": (
        "brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "msync", "mincore",
        "pkey_alloc", "pkey_free", "pkey_mprotect",
    ),
    "threads: libuv's pool, V8's platform workers and their locks": (
        "clone", "futex", "set_robust_list", "set_tid_address", "rseq", "gettid",
        "sched_yield", "sched_getaffinity", "sched_getparam", "sched_getscheduler",
        "sched_get_priority_max", "sched_get_priority_min", "getpriority", "setpriority",
        "membarrier",
    ),
    "event loop: libuv's epoll, its wake-up eventfd and pipes, fs.watch": (
        "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait",
        "epoll_pwait2", "eventfd", "eventfd2", "poll", "ppoll", "select", "pselect6", "pipe",
        "pipe2", "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
    ),
    "time: clocks (when not answered by the vDSO) and sleeping": (
        "clock_gettime", "clock_getres", "gettimeofday", "time", "nanosleep", "clock_nanosleep",
    ),
    "signals: Node's handlers, the deadline's SIGTERM and SIGKILL, a tool's own children": (
        "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigsuspend", "rt_sigpending",
        "rt_sigtimedwait", "sigaltstack", "kill", "tgkill", "tkill",
    ),
    "descriptors: stdio, the host's channel, open files": (
        "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev",
        "preadv2", "pwritev2", "lseek", "close", "close_range", "dup", "dup2", "dup3", "fcntl",
        "ioctl", "flock", "fsync", "fdatasync", "fadvise64", "fallocate", "ftruncate",
        "sendfile", "copy_file_range",
    ),
    "files: what the file view holds (it, not the filter, decides what exists)": (
        "open", "openat", "creat", "stat", "fstat", "lstat", "newfstatat", "statx", "statfs",
        "fstatfs", "access", "faccessat", "faccessat2", "readlink", "readlinkat", "getdents",
        "getdents64", "getcwd", "chdir", "fchdir", "mkdir", "mkdirat", "rmdir", "unlink",
        "unlinkat", "rename", "renameat", "renameat2", "link", "linkat", "symlink",
        "symlinkat", "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown",
        "fchownat", "lchown", "utime", "utimes", "utimensat", "futimesat", "truncate", "umask",
        "mknod", "mknodat", "getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr",
        "flistxattr",
    ),
    "processes: the tool's own programs, its identity and limits (read), exiting": (
        "fork", "vfork", "execve", "execveat", "wait4", "waitid", "exit", "exit_group",
        "getpid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getgroups",
        "getresuid", "getresgid", "getpgid", "getpgrp", "getsid", "setsid", "setpgid",
        "capget", "prctl", "arch_prctl", "prlimit64", "getrlimit", "setrlimit", "getrusage",
        "times", "sysinfo", "uname", "getcpu", "getrandom",
    ),
}  # fmt: skip
# Tried first by the C library or libuv, which fall back to an allowed call on ENOSYS.
FALLBACK = ("io_uring_setup", "io_uring_enter", "io_uring_register", "clone3", "openat2")
# x86_64's uretprobe and uprobe return from a uprobe's trampoline: the kernel runs them without
# asking any seccomp filter (Linux 6.11 and 6.16), so this one never sees them; outside a
# trampoline uretprobe kills its caller (SIGILL) and uprobe fails (ENXIO).
UNFILTERED = {"x86_64": {"uretprobe": 335, "uprobe": 336}, "aarch64": {}}
# Every number the filter names, with socket and socketpair (refused, and tried by detect()).
# fchmodat2 (452), openat2 (437), clone3 (435) and io_uring (425-427) have the generic
# numbers on both.
_NUMBERS: dict[str, dict[str, int]] = {
    "x86_64": {
        "read": 0, "write": 1, "open": 2, "close": 3, "stat": 4, "fstat": 5, "lstat": 6,
        "poll": 7, "lseek": 8, "mmap": 9, "mprotect": 10, "munmap": 11, "brk": 12,
        "rt_sigaction": 13, "rt_sigprocmask": 14, "rt_sigreturn": 15, "ioctl": 16, "pread64": 17,
        "pwrite64": 18, "readv": 19, "writev": 20, "access": 21, "pipe": 22, "select": 23,
        "sched_yield": 24, "mremap": 25, "msync": 26, "mincore": 27, "madvise": 28, "dup": 32,
        "dup2": 33, "nanosleep": 35, "getpid": 39, "sendfile": 40, "socket": 41, "socketpair": 53,
        "clone": 56, "fork": 57, "vfork": 58, "execve": 59, "exit": 60, "wait4": 61, "kill": 62,
        "uname": 63, "fcntl": 72, "flock": 73, "fsync": 74, "fdatasync": 75, "truncate": 76,
        "ftruncate": 77, "getdents": 78, "getcwd": 79, "chdir": 80, "fchdir": 81, "rename": 82,
        "mkdir": 83, "rmdir": 84, "creat": 85, "link": 86, "unlink": 87, "symlink": 88,
        "readlink": 89, "chmod": 90, "fchmod": 91, "chown": 92, "fchown": 93, "lchown": 94,
        "umask": 95, "gettimeofday": 96, "getrlimit": 97, "getrusage": 98, "sysinfo": 99,
        "times": 100, "getuid": 102, "getgid": 104, "geteuid": 107, "getegid": 108,
        "setpgid": 109, "getppid": 110, "getpgrp": 111, "setsid": 112, "getgroups": 115,
        "getresuid": 118, "getresgid": 120, "getpgid": 121, "getsid": 124, "capget": 125,
        "rt_sigpending": 127, "rt_sigtimedwait": 128, "rt_sigsuspend": 130, "sigaltstack": 131,
        "utime": 132, "mknod": 133, "statfs": 137, "fstatfs": 138, "getpriority": 140,
        "setpriority": 141, "sched_getparam": 143, "sched_getscheduler": 145,
        "sched_get_priority_max": 146, "sched_get_priority_min": 147, "prctl": 157,
        "arch_prctl": 158, "setrlimit": 160, "gettid": 186, "getxattr": 191, "lgetxattr": 192,
        "fgetxattr": 193, "listxattr": 194, "llistxattr": 195, "flistxattr": 196, "tkill": 200,
        "time": 201, "futex": 202, "sched_getaffinity": 204, "epoll_create": 213,
        "getdents64": 217, "set_tid_address": 218, "fadvise64": 221, "clock_gettime": 228,
        "clock_getres": 229, "clock_nanosleep": 230, "exit_group": 231, "epoll_wait": 232,
        "epoll_ctl": 233, "tgkill": 234, "utimes": 235, "waitid": 247, "inotify_init": 253,
        "inotify_add_watch": 254, "inotify_rm_watch": 255, "openat": 257, "mkdirat": 258,
        "mknodat": 259, "fchownat": 260, "futimesat": 261, "newfstatat": 262, "unlinkat": 263,
        "renameat": 264, "linkat": 265, "symlinkat": 266, "readlinkat": 267, "fchmodat": 268,
        "faccessat": 269, "pselect6": 270, "ppoll": 271, "set_robust_list": 273, "utimensat": 280,
        "epoll_pwait": 281, "eventfd": 284, "fallocate": 285, "eventfd2": 290,
        "epoll_create1": 291, "dup3": 292, "pipe2": 293, "inotify_init1": 294, "preadv": 295,
        "pwritev": 296, "prlimit64": 302, "getcpu": 309, "renameat2": 316, "getrandom": 318,
        "execveat": 322, "membarrier": 324, "copy_file_range": 326, "preadv2": 327,
        "pwritev2": 328, "pkey_mprotect": 329, "pkey_alloc": 330, "pkey_free": 331, "statx": 332,
        "rseq": 334, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "clone3": 435, "close_range": 436, "openat2": 437, "faccessat2": 439, "epoll_pwait2": 441,
        "fchmodat2": 452,
    },
    "aarch64": {
        "getxattr": 8, "lgetxattr": 9, "fgetxattr": 10, "listxattr": 11, "llistxattr": 12,
        "flistxattr": 13, "getcwd": 17, "eventfd2": 19, "epoll_create1": 20, "epoll_ctl": 21,
        "epoll_pwait": 22, "dup": 23, "dup3": 24, "fcntl": 25, "inotify_init1": 26,
        "inotify_add_watch": 27, "inotify_rm_watch": 28, "ioctl": 29, "flock": 32, "mknodat": 33,
        "mkdirat": 34, "unlinkat": 35, "symlinkat": 36, "linkat": 37, "renameat": 38,
        "statfs": 43, "fstatfs": 44, "truncate": 45, "ftruncate": 46, "fallocate": 47,
        "faccessat": 48, "chdir": 49, "fchdir": 50, "fchmod": 52, "fchmodat": 53, "fchownat": 54,
        "fchown": 55, "openat": 56, "close": 57, "pipe2": 59, "getdents64": 61, "lseek": 62,
        "read": 63, "write": 64, "readv": 65, "writev": 66, "pread64": 67, "pwrite64": 68,
        "preadv": 69, "pwritev": 70, "sendfile": 71, "pselect6": 72, "ppoll": 73,
        "readlinkat": 78, "newfstatat": 79, "fstat": 80, "fsync": 82, "fdatasync": 83,
        "utimensat": 88, "capget": 90, "exit": 93, "exit_group": 94, "waitid": 95,
        "set_tid_address": 96, "futex": 98, "set_robust_list": 99, "nanosleep": 101,
        "clock_gettime": 113, "clock_getres": 114, "clock_nanosleep": 115,
        "sched_getscheduler": 120, "sched_getparam": 121, "sched_getaffinity": 123,
        "sched_yield": 124, "sched_get_priority_max": 125, "sched_get_priority_min": 126,
        "kill": 129, "tkill": 130, "tgkill": 131, "sigaltstack": 132, "rt_sigsuspend": 133,
        "rt_sigaction": 134, "rt_sigprocmask": 135, "rt_sigpending": 136, "rt_sigtimedwait": 137,
        "rt_sigreturn": 139, "setpriority": 140, "getpriority": 141, "getresuid": 148,
        "getresgid": 150, "times": 153, "setpgid": 154, "getpgid": 155, "getsid": 156,
        "setsid": 157, "getgroups": 158, "uname": 160, "getrlimit": 163, "setrlimit": 164,
        "getrusage": 165, "umask": 166, "prctl": 167, "getcpu": 168, "gettimeofday": 169,
        "getpid": 172, "getppid": 173, "getuid": 174, "geteuid": 175, "getgid": 176,
        "getegid": 177, "gettid": 178, "sysinfo": 179, "socket": 198, "socketpair": 199,
        "brk": 214, "munmap": 215, "mremap": 216, "clone": 220, "execve": 221, "mmap": 222,
        "fadvise64": 223, "mprotect": 226, "msync": 227, "mincore": 232, "madvise": 233,
        "wait4": 260, "prlimit64": 261, "renameat2": 276, "getrandom": 278, "execveat": 281,
        "membarrier": 283, "copy_file_range": 285, "preadv2": 286, "pwritev2": 287,
        "pkey_mprotect": 288, "pkey_alloc": 289, "pkey_free": 290, "statx": 291, "rseq": 293,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "clone3": 435,
        "close_range": 436, "openat2": 437, "faccessat2": 439, "epoll_pwait2": 441,
        "fchmodat2": 452,
    },
}  # fmt: skip


@dataclass(frozen=True)
class ArgumentList:
    """The numbers one call (``ioctl``, ``prctl``) is allowed with: its argument
    ``argument``'s low 32 bits (the kernel takes the request and the option as a 32-bit
    int and ignores the rest) must be one of ``allowed``; anything else gets ``refusal``."""

    call: str
    argument: int
    refusal: int  # an errno
    allowed: Mapping[str, int]  # name (<asm-generic/ioctls.h>, <linux/prctl.h>) -> number


@lru_cache(maxsize=1)
def argument_lists() -> dict[str, ArgumentList]:
    """``splice_build/schemas/seccomp_args.json``, the one place these numbers are kept
    (the same on every architecture the filter knows)."""
    data = resources.files("splice_build.schemas") / "seccomp_args.json"
    calls = json.loads(data.read_text("utf-8"))["calls"]
    return {
        call: ArgumentList(
            call,
            int(entry["argument"]),
            int(getattr(errno, entry["refusal"])),
            {name: int(str(each["number"]), 0) for name, each in entry["allowed"].items()},
        )
        for call, entry in calls.items()
    }


@dataclass(frozen=True)
class Arch:
    """One architecture's filter: its numbers (arch/*/include/uapi/asm/unistd*.h)."""

    name: str
    audit: int
    x32: bool  # x86_64: refuse the x32 ABI too
    numbers: Mapping[str, int]  # ``_NUMBERS[name]``
    # (system call, index of its mode argument) of every call that sets a file's mode
    mode_setters: tuple[tuple[int, int], ...]

    @property
    def socket(self) -> int:
        return self.numbers["socket"]

    @property
    def clone(self) -> int:  # its flags are argument 0 on both architectures
        return self.numbers["clone"]

    def allowed(self) -> frozenset[int]:
        """The numbers of ``ALLOWED`` that exist on this architecture."""
        names = (call for group in ALLOWED.values() for call in group)
        return frozenset(self.numbers[call] for call in names if call in self.numbers)

    def answer(self, number: int) -> str:
        """What the filter does with ``number`` (0 to ``NEWEST``): ``allow``, ``eperm``,
        ``enosys``, or the label of the check of its arguments (``clone``, ``mode<i>``, or
        the name of a call of ``argument_lists``)."""
        return _answers(self.name).get(number, "eperm")


@lru_cache(maxsize=2)
def _answers(name: str) -> dict[int, str]:
    """Every number the architecture ``name`` does not refuse with EPERM, with its answer."""
    arch = ARCHES[name]
    answers = dict.fromkeys(arch.allowed(), "allow")
    answers.update((arch.numbers[call], "enosys") for call in FALLBACK)
    answers[arch.clone] = "clone"
    answers.update((arch.numbers[call], call) for call in argument_lists())
    answers.update((number, f"mode{index}") for number, index in arch.mode_setters)
    return answers


ARCHES = {
    "x86_64": Arch(
        "x86_64",
        AUDIT_ARCH_X86_64,
        x32=True,
        numbers=_NUMBERS["x86_64"],
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
    ),
    "aarch64": Arch(
        "aarch64",
        AUDIT_ARCH_AARCH64,
        x32=False,
        numbers=_NUMBERS["aarch64"],
        # fchmod, fchmodat, fchmodat2, mknodat, openat (no chmod, creat, mknod, open)
        mode_setters=((52, 1), (53, 2), (452, 2), (33, 2), (56, 3)),
    ),
}
_MACHINE_NAMES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


@dataclass(frozen=True)
class SeccompStatus:
    available: bool
    detail: str  # what the filter denies, or why it cannot be installed
    # The probe child sets ``no_new_privs`` before the filter (the kernel requires one or the
    # other): True when it could, False when the kernel refused, None when no child said
    # (no filter for this machine, or it died first). support.detect reads it rather than
    # fork a child of its own for the same ``prctl``.
    no_new_privs: bool | None = None


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


Insn = tuple[int, "int | str", "int | str", "int | str"]  # code, jump if true, if false, k


def _runs(arch: Arch) -> list[tuple[int, str]]:
    """Numbers 0 to ``NEWEST`` as runs of one answer: (first number, answer)."""
    runs: list[tuple[int, str]] = []
    for number in range(NEWEST + 1):
        answer = arch.answer(number)
        if not runs or runs[-1][1] != answer:
            runs.append((number, answer))
    return runs


_RETURNS = {
    "allow": SECCOMP_RET_ALLOW,
    "eperm": SECCOMP_RET_ERRNO | errno.EPERM,
    "enosys": SECCOMP_RET_ERRNO | errno.ENOSYS,
}


def _search(runs: list[tuple[int, str]]) -> list[Insn | str]:
    """A binary search over ``runs`` (the number is loaded): each leaf returns its answer, or
    jumps to the check of the arguments (``ja``: its 32-bit offset reaches any distance)."""
    if len(runs) == 1:
        answer = runs[0][1]
        if answer in _RETURNS:
            return [(_BPF_RET_K, 0, 0, _RETURNS[answer])]
        return [(_BPF_JA, 0, 0, answer)]
    middle = len(runs) // 2
    upper = f"from{runs[middle][0]}"
    return [
        (_BPF_JGE_K, upper, 0, runs[middle][0]),
        *_search(runs[:middle]),
        upper,
        *_search(runs[middle:]),
    ]


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
    # One block per call with an argument allow-list, after the last return (reached by the
    # search's ``ja`` only, so the short jumps over the search stay short): load the
    # argument's low 32 bits, allow each listed number, refuse the rest with the list's errno.
    argument_checks: list[Insn | str] = []
    for listed in argument_lists().values():
        argument_checks += [
            listed.call,
            (_BPF_LD_W_ABS, 0, 0, _OFFSET_ARGS + 8 * listed.argument),
            *[
                (_BPF_JEQ_K, f"{listed.call} allowed", 0, value)
                for value in sorted(set(listed.allowed.values()))
            ],
            (_BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | listed.refusal),
            f"{listed.call} allowed",
            (_BPF_RET_K, 0, 0, _RETURNS["allow"]),
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
        *_search(_runs(arch)),
        # clone's flags (an unsigned long: its low 32 bits hold every CLONE_NEW* flag)
        "clone",
        (_BPF_LD_W_ABS, 0, 0, _OFFSET_ARGS),
        (_BPF_ALU_AND_K, 0, 0, NAMESPACE_FLAGS),
        (_BPF_JEQ_K, "allow", "eperm", 0),
        *mode_checks,
        "eperm",
        (_BPF_RET_K, 0, 0, _RETURNS["eperm"]),
        "enosys",
        (_BPF_RET_K, 0, 0, _RETURNS["enosys"]),
        "allow",  # jumps go forward only
        (_BPF_RET_K, 0, 0, _RETURNS["allow"]),
        *argument_checks,
    ]


@lru_cache(maxsize=2)
def _assembled(name: str) -> bytes:
    """``assemble`` once per architecture: every sandbox start builds a ``Filter``."""
    return assemble(ARCHES[name])


def assemble(arch: Arch) -> bytes:
    """The filter as ``struct sock_filter[]`` bytes (u16 code, u8 jt, u8 jf, u32 k)."""
    labels: dict[str, int] = {}
    insns: list[Insn] = []
    for item in program(arch):
        if isinstance(item, str):
            labels[item] = len(insns)
        else:
            insns.append(item)

    def distance(target: str, index: int) -> int:
        forward = labels[target] - index - 1
        assert forward >= 0, "BUG: seccomp jumps go forward only"
        return forward

    def offset(target: int | str, index: int) -> int:
        if isinstance(target, int):
            return target
        short = distance(target, index)
        assert short < 256, "BUG: seccomp jump out of range"
        return short

    out = bytearray()
    for index, (code, jt, jf, k) in enumerate(insns):
        far = distance(k, index) if isinstance(k, str) else k  # ``ja``'s 32-bit offset
        out += struct.pack("=HBBI", code, offset(jt, index), offset(jf, index), far)
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
        code = _assembled(arch.name)
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


_NNP = "no_new_privs"


def _probe(report_fd: int, socket_filter: Filter) -> None:
    """In a throw-away child: install the filter and make sure a real socket() fails. The
    first line says whether ``no_new_privs`` could be set (``no_new_privs 1`` or ``0``).

    socket() is called through libc, not the ``socket`` module, whose import (its enums)
    would cost the probe, which a cold ``splice run`` waits for, ~3 ms."""

    def report(text: str) -> None:
        os.write(report_fd, text.encode("utf-8", "replace"))

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            report(f"{_NNP} 0\n")
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        report(f"{_NNP} 1\n")
        socket_filter.install()
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
    # Assembled here, not in the child: the sandbox's preexec (child.make_preexec) builds the
    # same program in this process later and then finds it made (~1 ms of Python each time).
    try:
        socket_filter = Filter.build(arch)
    except OSError as exc:  # libc's prctl not found: as the child reported it before
        status = SeccompStatus(False, f"the kernel refused the filter ({exc.strerror or exc})")
        return lambda: status
    read_fd, write_fd = os.pipe()
    pid = fork_probe()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.close(read_fd)
            _probe(write_fd, socket_filter)
        finally:
            os._exit(0)
    os.close(write_fd)

    def collect() -> SeccompStatus:
        with os.fdopen(read_fd, "rb") as reader:
            answer = reader.read(4096).decode("utf-8", "replace")
        reap(pid)
        no_new_privs, answer = _no_new_privs_line(answer)
        if answer == "ok":
            return SeccompStatus(
                True,
                f"{arch.name}: an allow-list of {len(arch.allowed())} system calls; socket and "
                "socketpair refused (EPERM, every address family), as is every call off the "
                "list (key rings, namespaces, mounts, bpf, ptrace, ...), set-user-ID and "
                "set-group-ID modes and clone's namespace flags; ioctl and prctl only with "
                f"{_listed_counts()}; io_uring, openat2, clone3 and "
                f"system calls above {NEWEST} refused (ENOSYS), other architectures' system "
                "calls kill the process",
                no_new_privs,
            )
        reason = answer.removeprefix("fail ").strip() or "the probe died"
        return SeccompStatus(False, f"the kernel refused the filter ({reason})", no_new_privs)

    return collect


def _no_new_privs_line(answer: str) -> tuple[bool | None, str]:
    """The probe's ``no_new_privs`` line read off its answer (None: it has none), and the
    rest, stripped."""
    first, newline, rest = answer.partition("\n")
    if newline and first in (f"{_NNP} 0", f"{_NNP} 1"):
        return first.endswith("1"), rest.strip()
    return None, answer.strip()


def _listed_counts() -> str:
    """``9 ioctl requests and 11 prctl options`` (for the report)."""
    lists = argument_lists()
    kinds = {"ioctl": "requests", "prctl": "options"}
    return " and ".join(
        f"{len(each.allowed)} {call} {kinds.get(call, 'numbers')}" for call, each in lists.items()
    )
