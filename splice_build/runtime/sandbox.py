"""The sandbox process: its Node command line, its start, its memory cap and its end.

One process per call, started before the job is known (the job travels over the IPC pipe, so
a warm pool can start processes early). The process runs in a new session (its own process
group, killed as a whole), with an empty OS environment (declared variables travel in the
job, so Node, libc and OpenSSL never read tool-controlled variables at start-up), a working
directory that holds nothing (``/`` of its file view with the OS layer, else an empty
read-only directory of this parent: never the package directory, where a core file or a
relative write would land), no core dumps and an address-space limit applied before the
job is sent.

The process never outlives its parent: on Linux the child asks for SIGKILL when the thread
that started it ends (``PR_SET_PDEATHSIG``, set between fork and exec, then a check that the
parent did not die before it was set), and the host exits by itself when its job pipe hangs
up before the job arrives (host.mjs). A warm pool therefore starts processes from one
long-lived thread (runtime/pool.py). With the OS layer the started process waits for Node,
which runs as PID 1 of its own namespace (isolation/child.py); killing the group ends both,
but the started process dies first, so ``close`` also waits (bounded) on a pidfd of that
PID 1, taken at start: when it has exited, the kernel has already reaped every other
process of its namespace, so nothing the sandbox started is left when ``close`` returns.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import resource
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from splice_build.records import dataclass, field, replace
from splice_build.runtime.forks import settle_fork_hooks
from splice_build.runtime.host_files import host_dir, host_entry
from splice_build.runtime.isolation import fileview
from splice_build.runtime.isolation.child import make_preexec
from splice_build.runtime.isolation.plan import IsolationPlan
from splice_build.runtime.limits import HEAP_LIMIT_MB
from splice_build.runtime.node import NodeBinary

# Without a plan (direct users of SandboxSpec): limits and no_new_privs, no namespaces.
IN_PROCESS = IsolationPlan(os_layer=False, pid_max=None, no_new_privs=True, last_cap=0)
# How long ``close`` waits for the namespace's PID 1 after the kill (the kernel tears down
# its address space and reaps the namespace: milliseconds, unless the machine is overloaded).
NAMESPACE_EXIT_SECONDS = 10.0


@dataclass(frozen=True)
class SandboxSpec:
    """Everything that decides the command line (not the call)."""

    node: NodeBinary
    package_dir: Path
    read_paths: tuple[Path, ...] = ()
    write_paths: tuple[Path, ...] = ()
    heap_limit_mb: int = HEAP_LIMIT_MB
    isolation: IsolationPlan = IN_PROCESS
    # The package may use the network: the host prepares its fetch while it waits for the job.
    fetch: bool = False
    # Tests only (SpliceRuntime(_unsafe_in_process_guards_off=True)): Node without its
    # permission model, to show what the OS layer alone still stops.
    unsafe_in_process_guards_off: bool = False
    # Opt-in reuse (runtime/reuse.py): the host serves further jobs after a success.
    reuse: bool = False
    # The file view as planned by ``planned`` (None: planned when the process starts). With
    # it the spec, hence the warm pool's key, names the very directories the process binds.
    view: fileview.FileView | None = None
    # Write grants of the project's other packages (runtime.py ``_shared_writes``): a link
    # their tools may have left on the way to a grant of this one is never followed.
    shared_writes: tuple[Path, ...] = ()

    def argv(self, in_fd: int, out_fd: int) -> list[str]:
        """docs/compatibility.md#sandbox-process, plus the heap cap and the IPC fds for host.mjs."""
        if self.unsafe_in_process_guards_off:
            return [
                str(self.node.path),
                "--disable-warning=ExperimentalWarning",
                "--unhandled-rejections=strict",
                f"--max-old-space-size={self.heap_limit_mb}",
                str(host_entry()),
                str(in_fd),
                str(out_fd),
                *(["reuse"] if self.reuse else []),
            ]
        args = [
            str(self.node.path),
            "--permission",
            "--disallow-code-generation-from-strings",
            "--disable-warning=ExperimentalWarning",
            # Every unhandled rejection goes to the host's failure handler first (harden.mjs).
            "--unhandled-rejections=strict",
            "--no-addons",
            f"--max-old-space-size={self.heap_limit_mb}",
            f"--allow-fs-read={host_dir()}",
            f"--allow-fs-read={self.package_dir}",
        ]
        readable = dict.fromkeys([*self.read_paths, *self.write_paths])
        args += [f"--allow-fs-read={p}" for p in readable]
        args += [f"--allow-fs-write={p}" for p in dict.fromkeys(self.write_paths)]
        return [*args, str(host_entry()), str(in_fd), str(out_fd), *self._host_flags()]

    def command_line_bytes(self) -> int:
        """What starting this spec's Node takes of the room ``command_line_room`` tells, at
        most: each string of its command line with its NUL and its pointer, the program's
        path once more (the kernel keeps it too), and the environment's end (Node gets an
        empty one), its descriptors as long as any can be."""
        argv = replace(self, fetch=True, reuse=True).argv(_LONGEST_FD, _LONGEST_FD)
        strings = [*argv, argv[0]]
        return sum(len(os.fsencode(text)) + 1 + _POINTER for text in strings) + 2 * _POINTER

    def _host_flags(self) -> list[str]:
        return [flag for flag, on in (("fetch", self.fetch), ("reuse", self.reuse)) if on]

    def file_view(self) -> fileview.FileView | None:
        """The tool's file view, when its plan has one (raises OSError when Node's files
        cannot be listed)."""
        if not self.isolation.file_view:
            return None
        if self.view is not None:
            return self.view
        return fileview.plan_view(
            self.node.path,
            host_dir(),
            self.package_dir,
            self.read_paths,
            self.write_paths,
            self.shared_writes,
        )

    def planned(self) -> SandboxSpec:
        """This spec with its file view planned now (raises OSError as ``file_view``).

        A warm or reused process waits under its spec: with the view in it, a grant renamed
        away and replaced by another directory since the process started is another key, so
        that process never serves a call under the old directory."""
        view = self.file_view()
        return self if view is None or view is self.view else replace(self, view=view)


_LONGEST_FD = 2**31 - 1
_POINTER = 8
# Linux keeps a new program's strings in at most a quarter of its stack limit, and never
# more than three quarters of 8 MiB however high that limit is (fs/exec.c).
_MOST_ROOM = 6 * 1024 * 1024


def command_line_room() -> int:
    """The bytes a new program's command line and environment may take here (``execve``
    fails with ``E2BIG`` beyond them)."""
    return min(os.sysconf("SC_ARG_MAX"), _MOST_ROOM)


# empty_directory's, by the process id that made it.
_EMPTY_DIRECTORIES: dict[int, str] = {}


def empty_directory() -> str:
    """The working directory of a tool without a file view: empty and read-only, made once
    per process and removed by that process when it exits.

    Per process, not once: a child of ``fork`` that exited normally (a pre-fork server's
    worker, a daemon's first fork) ran the parent's ``atexit`` removal, so every later call
    of the parent failed to start in the removed directory (``TOOL_CRASHED``), and so did a
    child's calls once its parent had exited. A child makes its own; only the process that
    made a directory removes it."""
    pid = os.getpid()
    path = _EMPTY_DIRECTORIES.get(pid)
    if path is None:
        import tempfile

        made = tempfile.mkdtemp(prefix="splice-cwd-")
        os.chmod(made, 0o500)
        atexit.register(_remove_directory, made, pid)
        path = _EMPTY_DIRECTORIES.setdefault(pid, made)  # another thread's, if it came first
    return path


def _remove_directory(path: str, owner: int) -> None:
    if os.getpid() == owner:
        with contextlib.suppress(OSError):
            os.rmdir(path)


@dataclass
class SandboxProcess:
    """A started host process and the parent's ends of its pipes."""

    popen: subprocess.Popen[bytes]
    job_fd: int  # parent writes job and capability results
    message_fd: int  # parent reads frames from the host
    isolation: IsolationPlan = IN_PROCESS  # what was applied to it
    namespace_pidfd: int | None = None  # PID 1 of its PID namespace (the OS layer), if any
    leader_pidfd: int | None = None  # the started process itself (``end_now``), if any
    _closed: bool = field(default=False, init=False, repr=False)
    # Held while a pidfd is signalled or closed: a closed fd's number may be reused at once.
    _pidfd_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def await_exit(self, seconds: float) -> None:
        """Wait up to ``seconds`` for the process to end by itself, without reaping it: its
        pid stays its group's (no other group can be given it) until ``kill_group`` and the
        wait that reads its exit code."""
        try:
            fd = os.pidfd_open(self.popen.pid)
        except (AttributeError, OSError):  # no pidfd (an old kernel, not Linux), or reaped
            return
        try:
            wait_readable([fd], seconds)
        finally:
            os.close(fd)

    def kill_group(self) -> None:
        """SIGKILL the whole process group (the host and anything it could have started)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)

    def end_now(self) -> None:
        """SIGKILL the started process and its namespace's PID 1, from any thread (a
        cancelled call, splice_build/cancel.py).

        Through pidfds, which name these very processes: the call's own thread may reap
        the process meanwhile, and a pid (or group id) freed that way could already name
        another process. The rest of the group follows on the call's thread, as after a
        timeout: with its pipes closed the session ends and kills the group, whose id stays
        reserved until its leader is reaped. Without pidfds (not Linux) nothing is sent."""
        with self._pidfd_lock:
            for fd in (self.leader_pidfd, self.namespace_pidfd):
                if fd is not None and not self._closed:
                    with contextlib.suppress(OSError):
                        signal.pidfd_send_signal(fd, signal.SIGKILL)

    def close(self) -> None:
        """Kill, reap, wait for the namespace's PID 1 and release the fds; safe to call again
        (fds are closed only once)."""
        if self._closed:
            return
        self._closed = True
        self.kill_group()
        self.popen.wait()
        if self.namespace_pidfd is not None:
            wait_readable([self.namespace_pidfd], NAMESPACE_EXIT_SECONDS)
        self._release()

    def forget(self) -> None:
        """Release this object's copies of the pipes without signalling or waiting for the
        process: in a child of ``fork`` the process is the parent's (runtime/forks.py)."""
        if not self._closed:
            self._closed = True
            self._release()

    def _release(self) -> None:
        for stream in (self.popen.stdout, self.popen.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        for fd in (self.job_fd, self.message_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        with self._pidfd_lock:
            for fd in (self.namespace_pidfd, self.leader_pidfd):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)


def wait_readable(fds: Sequence[int], seconds: float) -> bool:
    """Wait up to ``seconds`` until one of ``fds`` is readable (a pidfd: its process has
    exited; a pipe: data or a hang-up); whether one is.

    With ``poll``, whatever the descriptors' numbers: ``select`` takes none above 1023
    (FD_SETSIZE), and a long-lived server holding a thousand sockets got pidfds past it,
    so every call raised ``ValueError: filedescriptor out of range in select()`` out of
    ``run`` and left its pipes and pidfds open. ``select`` only where the program removed
    ``poll`` (a green-thread library's monkey patch: eventlet deletes it)."""
    poll = getattr(select, "poll", None)
    if poll is None:
        return bool(select.select(list(fds), [], [], seconds)[0])
    poller = poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0, math.ceil(seconds * 1000))))


# Pipe capacity (Linux): fetch bodies travel in frames of up to ~350 KB; the default 64 KiB
# would split each into several writes and wake-ups.
_PIPE_BYTES = 1024 * 1024


def _widen(*fds: int) -> None:
    import fcntl

    for fd in fds:
        with contextlib.suppress(OSError, AttributeError):
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)


def start(spec: SandboxSpec) -> SandboxProcess:
    """Start the host; raises OSError when the process cannot be created
    (``fileview.SourceChanged``, with its kind, when a source of its file view changed
    before the child bound it; ``fileview.OutOfFiles`` when the view's descriptors ran out;
    ``fileview.IsolationFailed``, with the errno and the step, when the kernel refused
    another step of the OS layer)."""
    view = spec.file_view()
    # Every pipe end is made inside the try: a ^C's KeyboardInterrupt landing between two
    # pipes, or in the fork hooks' imports, left the ends made so far open.
    ends: list[int] = []
    report: list[int] = []  # read end, write end
    try:
        ends += _pipe()
        ends += _pipe()
        job_r, job_w, msg_r, msg_w = ends
        if spec.isolation.os_layer:
            report += _pipe()
        if spec.fetch and sys.platform.startswith("linux"):
            _widen(job_w, msg_w)
        settle_fork_hooks()
        popen = subprocess.Popen(
            spec.argv(job_r, msg_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(job_r, msg_w),
            env={},
            cwd="/" if view is not None else empty_directory(),
            start_new_session=True,
            preexec_fn=make_preexec(
                spec.isolation, os.getpid(), view, report[1] if report else None
            ),
        )
    except BaseException as exc:
        for fd in ends:
            os.close(fd)
        failure = _reported_failure(report, view)
        if failure is not None:
            raise failure from exc
        if isinstance(exc, subprocess.SubprocessError):  # the preexec setup failed
            raise OSError(f"the sandbox's isolation could not be applied: {exc}") from exc
        raise
    # Owned at once: whatever interrupts the rest (a ^C's KeyboardInterrupt in the thread that
    # started it) ends the process, instead of leaving Node waiting for ever on a job pipe
    # whose write end nothing would close.
    process = SandboxProcess(popen, job_w, msg_r, spec.isolation)
    child_ends = [job_r, msg_w]
    try:
        _reported_failure(report, view)
        while child_ends:
            os.close(child_ends.pop())
        if spec.isolation.os_layer:
            process.namespace_pidfd = _namespace_pidfd(popen.pid)
        process.leader_pidfd = _leader_pidfd(popen.pid)
    except BaseException:
        for fd in (*child_ends, *report):
            os.close(fd)
        process.close()
        raise
    return process


def write_to_host(fd: int, data: bytes | bytearray) -> int:
    """``os.write`` to the job pipe that never raises SIGPIPE: a host that is gone is
    ``BrokenPipeError`` (EPIPE), whatever this process does with the signal.

    Python ignores SIGPIPE, but a program may set it back to SIG_DFL (a command-line idiom,
    or Python embedded without its signal setup). A tool chooses when its host dies (a
    capability answer of a few MiB still being written, then a crash or a return): the
    write that followed killed the whole program (exit 141). The signal is blocked in this
    thread around the write, and the one the write made pending is taken before unblocking."""
    if signal.getsignal(signal.SIGPIPE) is signal.SIG_IGN:
        return os.write(fd, data)
    blocked = signal.SIGPIPE in signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPIPE})
    try:
        return os.write(fd, data)
    except BrokenPipeError:
        if not blocked and signal.SIGPIPE in signal.sigpending():
            signal.sigwait({signal.SIGPIPE})
        raise
    finally:
        if not blocked:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGPIPE})


def _pipe() -> tuple[int, int]:
    """``os.pipe()`` with both ends numbered above the standard descriptors.

    A program that closed its 0, 1 and 2 (a daemon embedding the SDK) got 0 and 1 for the job
    pipe; in the child ``Popen`` then put /dev/null and the log pipe on those numbers before
    exec, so the host read its job from /dev/null and every call was ``TOOL_CRASHED``."""
    read_end, write_end = os.pipe()
    try:
        read_end = _above_stdio(read_end)
    except OSError:
        os.close(write_end)
        raise
    try:
        return read_end, _above_stdio(write_end)
    except OSError:
        os.close(read_end)
        raise


def _above_stdio(fd: int) -> int:
    """``fd``, or (numbered 0 to 2) a close-on-exec copy of it numbered 3 or more, ``fd``
    closed."""
    if fd > 2:
        return fd
    import fcntl

    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    finally:
        os.close(fd)


def _reported_failure(report: list[int], view: fileview.FileView | None) -> OSError | None:
    """What the child reported on the pipe ``report`` (read end, write end; empty without the
    OS layer) about its isolation's failure (``fileview.reported_failure``), None when nothing.
    Each end is closed and taken out of the list. Read once the start is over, without
    blocking: every child holding the write end has exec'd (close-on-exec) or exited, so all
    it wrote is there."""
    if not report:
        return None
    try:
        os.set_blocking(report[0], False)
        try:
            written = os.read(report[0], 65536)
        except BlockingIOError:
            return None
    finally:
        while report:
            os.close(report.pop())
    return fileview.reported_failure(written, view, resource.getrlimit(resource.RLIMIT_NOFILE)[1])


def _leader_pidfd(pid: int) -> int | None:
    """A pidfd of the started process (not reaped yet: only its owner waits on it)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _namespace_pidfd(pid: int) -> int | None:
    """A pidfd of Node as PID 1 of its namespace: the started process's child, or, when
    that child is the second waiter of ``child.single_threaded``, its child. The first
    process below ``pid`` whose PID namespace is deeper than ``pid``'s.

    ``Popen`` returns only once its exec-error pipe is closed, which Node's process holds
    until it has exec'd Node, so it exists now. None when it is already gone.
    """
    depth = _namespace_depth(pid)
    for _ in range(2):
        try:
            with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
                child = int(f.read().split()[0])
        except (OSError, IndexError, ValueError):
            return None
        if _namespace_depth(child) > depth:
            with contextlib.suppress(OSError):
                return os.pidfd_open(child)
            return None
        pid = child
    return None


def _namespace_depth(pid: int) -> int:
    """How many PID namespaces ``pid`` is in (its ``NSpid`` entries; 0 when gone)."""
    try:  # bytes: its Name line is the process's own (any bytes a program named itself)
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"NSpid:"):
                    return len(line.split()) - 1
    except OSError:
        pass
    return 0
