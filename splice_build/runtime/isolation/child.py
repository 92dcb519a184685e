"""The code run in a sandbox child between fork and exec (``preexec_fn``), and its probe.

Without the OS layer the child arms the parent-death signal, takes ``CAP_FSETID`` from the
bounding set when it runs as root, sets the resource limits and ``no_new_privs`` and execs
Node. With it (``IsolationPlan.os_layer``):

1. the child (C1, the process ``Popen`` started) arms the parent-death signal and enters new
   user, PID, IPC, mount and network namespaces (the network one has only ``lo``, down,
   whatever the package's grants: its requests are performed by the parent), mapping its
   own uid and gid (a C1 the program's fork hooks made multi-threaded first forks a copy
   that does this, and waits for it: ``single_threaded``);
2. it forks C2, the first process of the new PID namespace (PID 1): a new PID namespace
   applies to children only. C1 closes every descriptor, blocks every signal, waits for C2
   and ends the way C2 ended (exit code or signal): the parent's ``Popen`` and process-group
   kill keep working,
   and Popen's exec-error pipe now belongs to C2 alone, so an exec failure is still reported;
3. C2 follows C1 (parent-death signal), builds the file view (fileview.py: a fresh root
   with only Node, the host, the package, the grants, four devices and a /proc of its PID
   namespace that lists only the tool's own processes; the working directory is its ``/``)
   or, where the kernel refuses the view, mounts that /proc over the host's; it sets the
   namespace's ``pid_max`` when the kernel allows it, forbids nested user namespaces
   (``max_user_namespaces`` 0), makes ``/proc`` read-only, applies the limits, drops every capability and sets ``no_new_privs``; then Popen execs
   Node in it.

In every mode but ``in-process`` the last step before exec is the seccomp allow-list
(seccomp.py), where the kernel allows it.

As PID 1 of its namespace Node ignores signals it has no handler for when they come from
inside (SIGXFSZ is ignored anyway, see rlimits.py); SIGKILL from the parent always works,
and when PID 1 ends the kernel kills everything else in the namespace.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

from splice_build.open_files import raise_open_file_limit
from splice_build.runtime.isolation import fileview, rlimits, seccomp
from splice_build.runtime.isolation.kernel import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    Kernel,
)
from splice_build.runtime.isolation.plan import IsolationPlan

EXIT_PARENT_GONE = 71
_WAITER_NAME = b"splice-ns-wait"


NAMESPACE_FLAGS = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNS | CLONE_NEWNET


def single_threaded(kernel: Kernel) -> None:
    """Go on in a process with this thread only, as ``unshare`` of a user namespace needs.

    A child of ``fork`` holds only the forking thread, but Python then runs the program's
    ``os.register_at_fork`` hooks in it, and some start a thread (OpenTelemetry's and
    Logfire's batch processors restart their workers): ``unshare`` then failed with EINVAL,
    so every call of such a program was TOOL_CRASHED, or, the probe failing the same way,
    ran without the OS layer under ``auto``. Such a child forks once more with libc alone
    (no hook runs) and waits for that copy, which goes on."""
    if len(os.listdir("/proc/self/task")) > 1:
        child = kernel.fork()
        if child > 0:
            become_waiter(kernel, child)
        kernel.parent_death_signal(int(signal.SIGKILL))


def enter_namespaces(kernel: Kernel, uid: int, gid: int) -> None:
    """Step 1 (in C1)."""
    single_threaded(kernel)
    kernel.unshare(NAMESPACE_FLAGS)
    kernel.map_ids(uid, gid)


def become_waiter(kernel: Kernel, child: int) -> None:
    """Step 2 in C1: hold nothing, run none of the program's code, wait for C2, end as it
    ended. Never returns.

    C1 is a copy of the program that started the call, never exec'd: a signal the program
    handles in Python (a host's SIGTERM, SIGHUP or SIGUSR1 handler; ``pkill -f`` matches C1's
    command line, which is the program's) ran that handler here, in the sandbox's mount
    view with every capability of its user namespace, and whatever it did ended the call
    (``TOOL_CRASHED``, its exit code). Every signal is blocked here instead: C1 ends by
    SIGKILL (its group's, or its parent-death signal) or as C2 ended."""
    kernel.set_name(_WAITER_NAME)
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    os.closerange(0, os.sysconf("SC_OPEN_MAX"))
    try:
        _pid, status = os.waitpid(child, 0)
    except ChildProcessError:
        os._exit(EXIT_PARENT_GONE)
    if os.WIFSIGNALED(status):
        kernel.die_like(os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def seal(kernel: Kernel, plan: IsolationPlan, view: fileview.FileView | None) -> None:
    """Step 3 up to the limits (in C2, PID 1 of the new namespace).

    C2 cannot check that C1 is still there once the signal is armed (its parent is outside
    its PID namespace: ``getppid`` is 0). If C1 died in between, it was either killed with
    its group (C2 too) or by its own parent-death signal, and then the job pipe has no
    writer left and the host exits by itself.
    """
    kernel.parent_death_signal(int(signal.SIGKILL))
    if view is not None:
        # The view holds descriptors at once (``FileView.descriptors``), beside every one the
        # program had (closed only at exec): under a soft limit of 64 it ran out, and every
        # call was TOOL_CRASHED with "No such file or directory" for Node. ``apply_limits``
        # sets the tool's own limit afterwards.
        raise_open_file_limit()
        fileview.build(kernel, view)
    else:
        kernel.mount_private_proc()
    if plan.pid_max is not None:
        kernel.set_pid_max(plan.pid_max)
    kernel.forbid_user_namespaces()
    kernel.read_only_proc()


def close_to_others() -> None:
    """The tool's umask: the program's, with the group's and others' write masked too unless
    it masks others' write already (a team's 002 keeps the group's write; the directories
    Splice makes follow the rule of project/creation_modes.py).

    A tool writes its output into the project (its write grants) under this umask: under a
    daemon's umask 0 its files were 0666 and its directories 0777, inside a grant's directory
    Splice made 0755, so any local user could rewrite what the tool wrote there (a generated
    file the project then builds from) before the program read it."""
    umask = os.umask(0o022)
    if umask & 0o002:
        os.umask(umask)
    else:
        os.umask(umask | 0o022)


def make_preexec(
    plan: IsolationPlan,
    parent_pid: int,
    view: fileview.FileView | None = None,
    report_fd: int | None = None,
) -> Callable[[], None]:
    """The ``preexec_fn`` for one sandbox process (libc is looked up here, in the parent);
    ``view`` is the file view to build (the OS layer with ``plan.file_view`` only). When a
    step of the OS layer fails (a planned source changed, the descriptors ran out, the kernel
    refused a step), that is written to ``report_fd`` (``fileview.failure_report``)."""
    assert view is None or (plan.os_layer and plan.file_view), "BUG: a view without its layer"
    kernel = Kernel.load()
    uid, gid = os.geteuid(), os.getegid()
    arch = seccomp.current_arch() if plan.seccomp else None
    socket_filter = seccomp.Filter.build(arch) if arch is not None else None

    # A server's listening sockets (splice_build/listen.py), closed first in the child so the
    # server's port refuses as soon as the server is gone; a program that made none never
    # imported that module, and nothing is imported for it here.
    listen = sys.modules.get("splice_build.listen")
    close_listening = listen.close_in_child if listen is not None else None

    def setup() -> None:
        if close_listening is not None:
            close_listening()
        if kernel is not None:
            kernel.parent_death_signal(int(signal.SIGKILL))
            if os.getppid() != parent_pid:  # the parent died before the signal was armed
                os._exit(EXIT_PARENT_GONE)
        if plan.os_layer:
            assert kernel is not None, "BUG: an OS layer without libc"
            try:
                enter_namespaces(kernel, uid, gid)
                child = kernel.fork()
                if child > 0:
                    become_waiter(kernel, child)
                seal(kernel, plan, view)
                kernel.drop_capabilities(plan.last_cap)
            except OSError as exc:
                if report_fd is not None:
                    os.write(report_fd, fileview.failure_report(exc))
                raise
        elif kernel is not None and os.geteuid() == 0:
            # Root keeps its capabilities without the OS layer, and with CAP_FSETID a file's
            # set-ID bits through the tool's writes: a tool rewrote a root-owned 04755
            # program in its write grant with its own code, still 04755 (file_modes.mjs
            # refuses only the bits a tool would set).
            kernel.drop_fsetid()
        if plan.no_new_privs and kernel is not None:
            kernel.no_new_privs()
        close_to_others()
        rlimits.apply_limits(plan.limits, kernel)
        if socket_filter is not None:
            socket_filter.install()

    return setup


def probe(kernel: Kernel, last_cap: int, report_fd: int) -> None:
    """In a throw-away forked child: every step of the OS layer, without exec. Writes
    ``ok <pid_max ok: 0|1> <processes seen in /proc> <file view: ok | why not>`` or
    ``fail <step: reason>`` to ``report_fd``, then exits. The file view tried holds the
    devices only; its root must list exactly ``dev`` and ``proc`` afterwards."""

    def report(text: str) -> None:
        os.write(report_fd, text.encode("utf-8", "replace"))

    try:
        enter_namespaces(kernel, os.geteuid(), os.getegid())
        child = kernel.fork()
    except OSError as exc:
        report(f"fail {exc.strerror}")
        os._exit(0)
    if child > 0:
        os.waitpid(child, 0)
        os._exit(0)
    try:
        kernel.parent_death_signal(int(signal.SIGKILL))
        kernel.mount_private_proc()
        seen = sum(name.isdigit() for name in os.listdir("/proc"))
        try:
            kernel.set_pid_max(rlimits.PID_MAX)
            pid_max = 1
        except OSError:
            pid_max = 0
        kernel.forbid_user_namespaces()
        kernel.read_only_proc()
        view = _probe_view(kernel)
        kernel.drop_capabilities(last_cap)
        report(f"ok {pid_max} {seen} {view}")
    except OSError as exc:
        report(f"fail {exc.strerror}")
    os._exit(0)


def _probe_view(kernel: Kernel) -> str:
    devices = [d for d in fileview.DEVICES if os.path.exists(d)]
    binds = tuple(fileview.Bind(d, d, fileview.DEVICE, False) for d in devices)
    try:
        fileview.build(kernel, fileview.FileView(binds))
        seen = sorted(os.listdir("/"))
        with open("/dev/urandom", "rb") as f:
            f.read(1)
    except OSError as exc:
        return str(exc.strerror or exc)
    return "ok" if seen == ["dev", "proc"] else f"the new root listed {seen}"
