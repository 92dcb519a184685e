"""The Linux system calls of the OS layer, through libc with ``ctypes`` (Python 3.11 has no
``os.unshare``): namespaces, ID maps, a raw ``fork``, mounts (the classic ``mount`` and the
file-descriptor mount API: ``open_tree``, ``mount_setattr``, ``move_mount``), ``pivot_root``,
``prctl`` and ``signal``.

``Kernel.load()`` looks libc up in the parent; the methods are then called between fork and
exec (and in the detection probe), where no library may be loaded. Every failure raises
``OSError(errno, "<step>: <strerror>")`` naming the step, so detection can say which one the
kernel refused.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys
from functools import lru_cache
from typing import Any

from splice_build.records import dataclass

# <linux/sched.h>
CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
# <sys/mount.h>
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_RDONLY = 0x1
_MS_REMOUNT = 0x20
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 0x40000
# What a /proc of the sandbox masks (``/dev/null`` bound over it: reads as empty, as container
# runtimes mask it): the key rings of every user namespace above, with each key's id, type
# and name (what another program keeps there; the seccomp filter refuses ``keyctl`` itself),
# and the key counts of each user; then the kernel's own state that only root may read
# (mode 0400: a tool of a Splice run as root is root there) or that names kernel symbols:
# the kernel's log, timers and their callbacks, the slab and vmalloc allocators, the physical pages, the
# scheduler's and the latency debug files. Nothing a tool needs reads them.
MASKED_PROC = (
    "keys",
    "key-users",
    "kallsyms",
    "kcore",
    "kmsg",
    "kpagecgroup",
    "kpagecount",
    "kpageflags",
    "latency_stats",
    "pagetypeinfo",
    "sched_debug",
    "slabinfo",
    "timer_list",
    "timer_stats",
    "vmallocinfo",
)
_DEV_NULL = os.makedev(1, 3) if hasattr(os, "makedev") else 0
_MNT_DETACH = 0x2
# <linux/mount.h>: the file-descriptor mount API (Linux 5.2; mount_setattr 5.12)
_OPEN_TREE_CLONE = 0x1
_OPEN_TREE_CLOEXEC = os.O_CLOEXEC
_AT_EMPTY_PATH = 0x1000
_AT_RECURSIVE = 0x8000
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_MOVE_MOUNT_T_EMPTY_PATH = 0x40
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
MOUNT_ATTR_NODEV = 0x4
MOUNT_ATTR_NOEXEC = 0x8
# System calls glibc has no wrapper for (asm/unistd_64.h; aarch64 uses the generic table).
_SYSCALLS = {
    "x86_64": {
        "pivot_root": 155,
        "open_tree": 428,
        "move_mount": 429,
        "openat2": 437,
        "mount_setattr": 442,
    },
    "aarch64": {
        "pivot_root": 41,
        "open_tree": 428,
        "move_mount": 429,
        "openat2": 437,
        "mount_setattr": 442,
    },
}
# <linux/openat2.h>
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
_AT_FDCWD = -100
_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
# <linux/prctl.h>
_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
_PR_CAPBSET_READ = 23
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
# <linux/capability.h>
_CAP_FSETID = 4
_SIG_DFL = 0
_SIG_IGN = 1


def _write(path: str, text: str, step: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as exc:
        raise OSError(exc.errno, f"{step}: {exc.strerror}") from None
    try:
        os.write(fd, text.encode("ascii"))
    except OSError as exc:
        raise OSError(exc.errno, f"{step}: {exc.strerror}") from None
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Kernel:
    """libc's entry points, looked up once (``load``) and used in children."""

    _libc: Any
    _numbers: dict[str, int]
    # libc's ``fork`` called with the GIL held (``PyDLL``): in a child where the program's
    # fork hooks started threads, one of them could otherwise take the GIL while ``fork``
    # runs, and the new process would wait for it for ever.
    _fork: Any

    @staticmethod
    @lru_cache(maxsize=1)
    def load() -> Kernel | None:
        """libc, or None off Linux (or when libc cannot be opened)."""
        if not sys.platform.startswith("linux"):
            return None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.mount.argtypes = [
                ctypes.c_char_p,
                ctypes.c_char_p,
                ctypes.c_char_p,
                ctypes.c_ulong,
                ctypes.c_void_p,
            ]
            libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
            libc.unshare.argtypes = [ctypes.c_int]
            libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
            libc.signal.restype = ctypes.c_void_p
            libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
            libc.syscall.restype = ctypes.c_long
            _ = libc.fork
        except (OSError, AttributeError):
            return None
        numbers = _SYSCALLS.get(_MACHINES.get(os.uname().machine.lower(), ""), {})
        return Kernel(libc, numbers, ctypes.PyDLL(None, use_errno=True).fork)

    def _check(self, result: int, step: str) -> int:
        if result == -1:
            code = ctypes.get_errno() or errno.EPERM
            raise OSError(code, f"{step}: {os.strerror(code)}")
        return result

    def _prctl(self, option: int, arg: int, step: str) -> None:
        self._check(self._libc.prctl(option, arg, 0, 0, 0), step)

    def parent_death_signal(self, signum: int) -> None:
        """``signum`` is delivered when the thread that forked this process ends."""
        self._prctl(_PR_SET_PDEATHSIG, signum, "prctl(PR_SET_PDEATHSIG)")

    def set_name(self, name: bytes) -> None:
        buffer = ctypes.create_string_buffer(name[:15])
        self._prctl(_PR_SET_NAME, ctypes.addressof(buffer), "prctl(PR_SET_NAME)")

    def unshare(self, flags: int) -> None:
        self._check(self._libc.unshare(flags), "unshare")

    def map_ids(self, uid: int, gid: int) -> None:
        """Map this process's own uid and gid into its new user namespace (one line each;
        setgroups is denied first, as the kernel requires for an unprivileged gid map)."""
        _write("/proc/self/setgroups", "deny", "setgroups deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1", "uid_map")
        _write("/proc/self/gid_map", f"{gid} {gid} 1", "gid_map")

    def fork(self) -> int:
        """libc ``fork`` without Python's fork hooks, the GIL held: the new process holds
        only the calling thread (the caller is a child of ``fork``)."""
        return self._check(self._fork(), "fork")

    def mount_private_proc(self) -> None:
        """Make every mount private to this mount namespace, then a /proc of this PID
        namespace over /proc (it lists only the namespace's processes)."""
        self.make_mounts_private()
        self.mount_proc("/proc")

    def _syscall(self, name: str, *args: Any) -> int:
        number = self._numbers.get(name)
        if number is None:
            raise OSError(errno.ENOSYS, f"{name}: no system call number for this architecture")
        return self._check(self._libc.syscall(ctypes.c_long(number), *args), name)

    def open_resolved(self, path: str, flags: int, resolve: int, dir_fd: int = _AT_FDCWD) -> int:
        """``openat2(dir_fd, path, {flags, 0, resolve})``: one lookup under ``RESOLVE_*`` rules
        (e.g. no symbolic link anywhere in the path); raises OSError with the errno."""
        how = (ctypes.c_uint64 * 3)(flags, 0, resolve)  # struct open_how
        result = self._libc.syscall(
            ctypes.c_long(self._numbers.get("openat2", -1)),
            ctypes.c_int(dir_fd),
            ctypes.c_char_p(os.fsencode(path)),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
        if result == -1:
            code = ctypes.get_errno() or errno.EPERM
            raise OSError(code, f"{path}: {os.strerror(code)}")
        return result

    def make_mounts_private(self) -> None:
        """No mount event propagates between this mount namespace and the host's."""
        self._check(
            self._libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "private mounts"
        )

    def mount_proc(self, target: str) -> None:
        """A /proc of this PID namespace at ``target`` (a host /proc must still be visible),
        its ``MASKED_PROC`` files masked."""
        flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
        self._check(
            self._libc.mount(b"proc", os.fsencode(target), b"proc", flags, None), "mount /proc"
        )
        for name in MASKED_PROC:
            self._mask(f"{target}/{name}")

    def _mask(self, path: str) -> None:
        """``/dev/null`` bound read-only over the file ``path`` (left alone when the kernel
        has no such file); OSError when the mask cannot be made: the start fails then."""
        if not os.path.lexists(path):
            return
        where = os.fsencode(path)
        self._check(self._libc.mount(b"/dev/null", where, None, _MS_BIND, None), f"mask {path}")
        flags = _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NOEXEC
        self._check(self._libc.mount(None, where, None, flags, None), f"mask {path}")
        if os.stat(path).st_rdev != _DEV_NULL:
            raise OSError(errno.EIO, f"mask {path}: /dev/null is not the null device")

    def forbid_user_namespaces(self) -> None:
        """No user namespace can be made inside this one (its ``max_user_namespaces`` is 0,
        a limit the kernel checks at every level above a new namespace). A nested user
        namespace would give the tool every capability back inside it, and with them the
        mount calls; the seccomp filter refuses ``unshare`` and ``clone`` with namespace
        flags too, but not on an architecture it has no table for. Needs this namespace's
        ``CAP_SYS_RESOURCE``: called before the capabilities are dropped."""
        _write("/proc/sys/user/max_user_namespaces", "0", "max_user_namespaces")

    def read_only_proc(self) -> None:
        """Make the sandbox's ``/proc`` read-only (its mount, remounted read-only; the
        kernel refuses every open for writing there with ``EROFS``). Nothing in ``/proc``
        is a tool's to write: the kernel lets the root of a user namespace write some of its
        namespaces' settings in ``/proc/sys`` without any capability (``kernel/pid_max`` of
        its PID namespace among them: a tool run by root could lift its own process limit),
        and ``/proc/self/mem`` written is native code run past the in-process guards (Node's
        permission model checks only the path it is given, so a link planted in a write
        grant reached it). Called once ``pid_max`` and ``max_user_namespaces`` are set."""
        target = b"/proc"
        flags = _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
        self._check(self._libc.mount(None, target, None, flags, None), "read-only /proc")

    def mount_tmpfs(self, target: str, options: str) -> None:
        self._check(
            self._libc.mount(
                b"tmpfs", os.fsencode(target), b"tmpfs", _MS_NOSUID | _MS_NODEV, options.encode()
            ),
            f"mount tmpfs on {target}",
        )

    def clone_tree(self, fd: int) -> int:
        """A detached copy of the mount tree at ``fd`` (an ``O_PATH`` descriptor), submounts
        included (``open_tree(OPEN_TREE_CLONE | AT_RECURSIVE)``): a bind mount not yet attached
        anywhere, so later mounts over its source's path do not affect it."""
        flags = _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC | _AT_EMPTY_PATH | _AT_RECURSIVE
        return self._syscall(
            "open_tree", ctypes.c_int(fd), ctypes.c_char_p(b""), ctypes.c_uint(flags)
        )

    def restrict(self, fd: int, attrs: int, *, recursive: bool) -> None:
        """Add mount attributes (``MOUNT_ATTR_*``) to the mount open as ``fd`` (and, when
        ``recursive``, to every mount under it); attributes are only ever added."""
        attr = (ctypes.c_uint64 * 4)(attrs, 0, 0, 0)  # struct mount_attr (version 0)
        flags = _AT_EMPTY_PATH | (_AT_RECURSIVE if recursive else 0)
        self._syscall(
            "mount_setattr",
            ctypes.c_int(fd),
            ctypes.c_char_p(b""),
            ctypes.c_uint(flags),
            ctypes.byref(attr),
            ctypes.c_size_t(ctypes.sizeof(attr)),
        )

    def attach_tree(self, tree: int, target: int) -> None:
        """Attach the detached tree ``tree`` on the mount point open as ``target``."""
        self._syscall(
            "move_mount",
            ctypes.c_int(tree),
            ctypes.c_char_p(b""),
            ctypes.c_int(target),
            ctypes.c_char_p(b""),
            ctypes.c_uint(_MOVE_MOUNT_F_EMPTY_PATH | _MOVE_MOUNT_T_EMPTY_PATH),
        )

    def pivot_to_cwd(self) -> None:
        """Make the current directory (a mount point) the root and detach the old root from
        it (``pivot_root(".", ".")`` then ``umount2(".", MNT_DETACH)``, as pivot_root(2)
        describes): nothing outside the new root stays reachable by path."""
        self._syscall("pivot_root", ctypes.c_char_p(b"."), ctypes.c_char_p(b"."))
        self._check(self._libc.umount2(b".", _MNT_DETACH), "umount2 old root")
        os.chdir("/")

    def set_pid_max(self, value: int) -> None:
        """The PID namespace's own ``pid_max`` (Linux ≥ 6.14): at most ``value - 1`` tasks."""
        _write("/proc/sys/kernel/pid_max", str(value), "pid_max")

    def drop_capabilities(self, last_cap: int) -> None:
        """Empty the bounding and ambient sets: the exec'd program gets no capability."""
        for cap in range(last_cap + 1):
            self._prctl(_PR_CAPBSET_DROP, cap, "drop capabilities")
        self._check(
            self._libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0),
            "clear ambient capabilities",
        )

    def drop_fsetid(self) -> None:
        """Take ``CAP_FSETID`` from the bounding set where it is: a program root execs then
        has none, and the kernel clears a file's set-ID bits when it writes the file, as it
        does for every other user."""
        if self._libc.prctl(_PR_CAPBSET_READ, _CAP_FSETID, 0, 0, 0) == 1:
            self._prctl(_PR_CAPBSET_DROP, _CAP_FSETID, "drop CAP_FSETID")

    def no_new_privs(self) -> None:
        """No exec can gain privileges again (set-uid bits and file capabilities ignored)."""
        self._prctl(_PR_SET_NO_NEW_PRIVS, 1, "prctl(PR_SET_NO_NEW_PRIVS)")

    def ignore_signal(self, signum: int) -> None:
        """SIG_IGN, which survives exec (``signal.signal`` works only in the main thread)."""
        self._libc.signal(signum, _SIG_IGN)

    def die_like(self, signum: int) -> None:
        """End this process by ``signum`` with its default action (exit 128 + n otherwise),
        blocked or not (``child.become_waiter`` blocks every signal)."""
        self._libc.signal(signum, _SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)


def last_capability() -> int:
    """The highest capability number this kernel knows (``/proc/sys/kernel/cap_last_cap``)."""
    try:  # bytes: a text file would look up (import) the ASCII codec for this one number
        with open("/proc/sys/kernel/cap_last_cap", "rb") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 40  # CAP_CHECKPOINT_RESTORE, the last one of Linux 5.9–6.x
