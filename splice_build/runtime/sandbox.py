"""The sandbox process: its Node command line, its start, its memory cap and its end.

One process per call, started before the job is known (the job travels over the IPC pipe, so
a warm pool can start processes early). The process runs in a new session (its own process
group, killed as a whole), with an empty OS environment (declared variables travel in the
job, so Node, libc and OpenSSL never read tool-controlled variables at start-up), cwd = the
package directory, and an address-space limit applied before the job is sent.

The process never outlives its parent: on Linux the child asks for SIGKILL when the thread
that started it ends (``PR_SET_PDEATHSIG``, set between fork and exec, then a check that the
parent did not die before it was set), and the host exits by itself when its job pipe hangs
up before the job arrives (host.mjs). A warm pool therefore starts processes from one
long-lived thread (runtime/pool.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from splice_build.runtime.host_files import host_dir, host_entry
from splice_build.runtime.limits import ADDRESS_SPACE_LIMIT_BYTES, HEAP_LIMIT_MB
from splice_build.runtime.node import NodeBinary


@dataclass(frozen=True)
class SandboxSpec:
    """Everything that decides the command line (not the call)."""

    node: NodeBinary
    package_dir: Path
    read_paths: tuple[Path, ...] = ()
    write_paths: tuple[Path, ...] = ()
    heap_limit_mb: int = HEAP_LIMIT_MB
    address_space_limit: int = ADDRESS_SPACE_LIMIT_BYTES

    def argv(self, in_fd: int, out_fd: int) -> list[str]:
        """interfaces.md 4.4, plus the heap cap and the IPC fds for host.mjs."""
        args = [
            str(self.node.path),
            "--permission",
            "--disallow-code-generation-from-strings",
            "--disable-warning=ExperimentalWarning",
            "--no-addons",
            f"--max-old-space-size={self.heap_limit_mb}",
            f"--allow-fs-read={host_dir()}",
            f"--allow-fs-read={self.package_dir}",
        ]
        readable = dict.fromkeys([*self.read_paths, *self.write_paths])
        args += [f"--allow-fs-read={p}" for p in readable]
        args += [f"--allow-fs-write={p}" for p in dict.fromkeys(self.write_paths)]
        args += [str(host_entry()), str(in_fd), str(out_fd)]
        return args


@dataclass
class SandboxProcess:
    """A started host process and the parent's ends of its pipes."""

    popen: subprocess.Popen[bytes]
    job_fd: int  # parent writes job and capability results
    message_fd: int  # parent reads frames from the host
    _closed: bool = field(default=False, init=False, repr=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def kill_group(self) -> None:
        """SIGKILL the whole process group (the host and anything it could have started)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)

    def close(self) -> None:
        """Kill, reap and release the pipes; safe to call again (fds are closed only once)."""
        if self._closed:
            return
        self._closed = True
        self.kill_group()
        self.popen.wait()
        for stream in (self.popen.stdout, self.popen.stderr):
            if stream is not None:
                stream.close()
        for fd in (self.job_fd, self.message_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def _limit_address_space(pid: int, limit: int) -> None:
    """RLIMIT_AS on the child, from the parent (Linux prlimit), before the job is sent."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))


def _preexec_limit(limit: int) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_EXIT_PARENT_GONE = 71


@lru_cache(maxsize=1)
def _prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, looked up in the parent (the child must not load libraries)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


def _child_setup(parent_pid: int, limit: int | None) -> Callable[[], None]:
    """The function run in the child between fork and exec (async-signal-safe work only)."""
    prctl = _prctl()

    def setup() -> None:
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if os.getppid() != parent_pid:  # the parent died before the signal was armed
                os._exit(_EXIT_PARENT_GONE)
        if limit is not None:
            _preexec_limit(limit)

    return setup


def start(spec: SandboxSpec) -> SandboxProcess:
    """Start the host; raises OSError when the process cannot be created."""
    job_r, job_w = os.pipe()
    msg_r, msg_w = os.pipe()
    use_prlimit = hasattr(resource, "prlimit") and sys.platform.startswith("linux")
    try:
        popen = subprocess.Popen(
            spec.argv(job_r, msg_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(job_r, msg_w),
            env={},
            cwd=spec.package_dir,
            start_new_session=True,
            preexec_fn=_child_setup(os.getpid(), None if use_prlimit else spec.address_space_limit),
        )
    except BaseException:
        for fd in (job_r, job_w, msg_r, msg_w):
            os.close(fd)
        raise
    os.close(job_r)
    os.close(msg_w)
    process = SandboxProcess(popen, job_w, msg_r)
    if use_prlimit:
        try:
            _limit_address_space(popen.pid, spec.address_space_limit)
        except OSError:
            process.close()
            raise
    return process
