"""OS resource limits and CPU priority of every tool process (between fork and exec).

Each value with its reason. The address-space cap is the runtime's (limits.py). The process
count is limited twice where the kernel allows: ``RLIMIT_NPROC`` counts the tasks of the
tool's uid *inside its user namespace* (set after the namespace exists, so the user's other
processes on the host do not count), but the kernel exempts uid 0 (root) from it; the PID
namespace's own ``pid_max`` (Linux ≥ 6.14) limits every tool, root or not.
"""

from __future__ import annotations

import os
import resource
import signal

from splice_build.records import dataclass, replace
from splice_build.runtime.isolation.kernel import Kernel
from splice_build.runtime.limits import ADDRESS_SPACE_LIMIT_BYTES, MAX_TIMEOUT_MS

# Twice the longest timeout: Node's threads (GC, compiler, libuv) add CPU time to a call, so
# only a runaway that outlives its wall-clock deadline reaches it (then SIGKILL).
CPU_SECONDS = 2 * MAX_TIMEOUT_MS // 1000
# Node itself holds about 20 descriptors; a tool with a few hundred sockets is not a tool.
OPEN_FILES = 256
# A tool writing more than this into a declared directory is a file bomb: the write fails
# with EFBIG (SIGXFSZ is ignored, so the tool sees the error instead of dying).
FILE_SIZE_BYTES = 128 * 1024 * 1024
# Tasks (threads count: Node starts about 10) of the tool's uid in its user namespace.
PROCESSES = 128
# No core dump, whatever the user's own limit: a tool's memory (its input, whatever it
# read) never lands in a file (with core_pattern "core" it would go to the working directory).
CORE_BYTES = 0
# CPU priority below the splice process that supervises the tool (nice increment): a busy
# tool, or many of them, cannot starve the server that answers, queues and refuses other
# calls (splice mcp --http under load); on an idle machine it changes nothing.
NICENESS = 10
# The smallest pid_max the kernel accepts (RESERVED_PIDS + 1): at most 300 tasks.
PID_MAX = 301


@dataclass(frozen=True)
class Limits:
    """The limits one process gets; ``processes`` is None when RLIMIT_NPROC is not applied."""

    address_space: int = ADDRESS_SPACE_LIMIT_BYTES
    cpu_seconds: int = CPU_SECONDS
    open_files: int = OPEN_FILES
    file_size: int = FILE_SIZE_BYTES
    core: int = CORE_BYTES
    processes: int | None = None
    niceness: int = NICENESS

    def to_json(self) -> dict[str, int]:
        out = {
            "addressSpaceBytes": self.address_space,
            "cpuSeconds": self.cpu_seconds,
            "openFiles": self.open_files,
            "fileSizeBytes": self.file_size,
            "coreBytes": self.core,
            "niceness": self.niceness,
        }
        if self.processes is not None:
            out["processes"] = self.processes
        return out

    def within_hard_limits(self) -> Limits:
        """These limits, none above the program's hard one: the tool inherits that hard limit
        and ``apply_limits`` cannot raise it, so a program whose hard ``RLIMIT_NOFILE`` was 100
        ran its tools with 100 open files while each call's ``isolation.limits`` said 256."""
        lowered = {
            name: min(value, hard)
            for name, kind in _RESOURCES.items()
            if (value := getattr(self, name)) is not None
            and (hard := resource.getrlimit(kind)[1]) != resource.RLIM_INFINITY
            and hard < value
        }
        return replace(self, **lowered) if lowered else self


# Each limit's field and its resource.
_RESOURCES = {
    "address_space": resource.RLIMIT_AS,
    "cpu_seconds": resource.RLIMIT_CPU,
    "open_files": resource.RLIMIT_NOFILE,
    "file_size": resource.RLIMIT_FSIZE,
    "core": resource.RLIMIT_CORE,
    "processes": resource.RLIMIT_NPROC,
}


def _set(kind: int, value: int) -> None:
    """Soft and hard to ``value``, never above an existing hard limit."""
    _soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def apply_limits(limits: Limits, kernel: Kernel | None) -> None:
    """Apply in the child right before exec (the address-space cap last but one: nothing
    allocates after it)."""
    _set(resource.RLIMIT_CPU, limits.cpu_seconds)
    _set(resource.RLIMIT_NOFILE, limits.open_files)
    _set(resource.RLIMIT_FSIZE, limits.file_size)
    _set(resource.RLIMIT_CORE, limits.core)
    if limits.processes is not None:
        _set(resource.RLIMIT_NPROC, limits.processes)
    if kernel is not None:
        kernel.ignore_signal(int(signal.SIGXFSZ))
    os.nice(limits.niceness)
    _set(resource.RLIMIT_AS, limits.address_space)
