"""What this machine's kernel allows, found once per process by trying it.

``detect()`` forks a throw-away child that performs every step of the OS layer without exec
(child.probe: namespaces, ID maps, the PID-1 fork, a private /proc, pid_max, a file view,
capability drop) and reads back which step failed and why; the seccomp filter (seccomp.detect: a
real ``socket()`` must fail) is tried in another child, which reports on the way whether it
could set ``no_new_privs`` (the filter needs it first).
Nothing is inferred from sysctl names or kernel versions, so what ``splice doctor`` reports
is what a sandbox process will get. A probe costs a few milliseconds; its result is cached.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from functools import lru_cache

from splice_build.records import dataclass
from splice_build.runtime.forks import fork_probe, reap
from splice_build.runtime.isolation import seccomp as seccomp_layer
from splice_build.runtime.isolation.cgroup import CgroupStatus, detect_cgroup
from splice_build.runtime.isolation.kernel import Kernel, last_capability


@dataclass(frozen=True)
class IsolationSupport:
    """The layers available here; each ``*_reason`` says why one is not (None when it is)."""

    namespaces: bool
    namespaces_reason: str | None
    pid_max: bool
    pid_max_reason: str | None
    no_new_privs: bool
    no_new_privs_reason: str | None
    root: bool
    last_cap: int
    cgroup: CgroupStatus
    seccomp: seccomp_layer.SeccompStatus
    file_view_reason: str | None = "needs the namespaces"  # None: a file view can be built

    @property
    def file_view(self) -> bool:
        return self.namespaces and self.file_view_reason is None

    def reasons(self, mode: str) -> tuple[str, ...]:
        """Why the OS layer is not applied under ``mode``."""
        if mode == "in-process":
            return ("isolation = in-process: the OS layer is switched off",)
        return (f"namespaces: {self.namespaces_reason}",) if self.namespaces_reason else ()

    def missing_required(self) -> tuple[str, ...]:
        """Every layer ``require-os`` requires that this machine lacks, with why (empty: all
        there). The mode promises the whole OS layer, not just its namespaces: a machine
        whose kernel refuses the seccomp filter, the file view or ``no_new_privs`` would
        otherwise run tools with every system call, or the whole host's files, while the
        user believes they asked for the sandbox (docs/security.md, "The OS layer")."""
        missing = list(self.reasons("require-os"))
        if not self.namespaces and not missing:
            missing.append("namespaces: unavailable")
        if self.namespaces and not self.file_view:
            missing.append(f"file view: {self.file_view_reason}")
        if not self.seccomp.available:
            missing.append(f"seccomp: {self.seccomp.detail}")
        if not self.no_new_privs:
            missing.append(f"no_new_privs: {self.no_new_privs_reason}")
        return tuple(missing)


def _run_probe(kernel: Kernel, last_cap: int) -> Callable[[], str]:
    """Fork the probe child; what returns its one-line report (``fail …`` when it said
    nothing)."""
    from splice_build.runtime.isolation.child import probe

    read_fd, write_fd = os.pipe()
    pid = fork_probe()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.close(read_fd)
            probe(kernel, last_cap, write_fd)
        finally:
            os._exit(0)
    os.close(write_fd)

    def collect() -> str:
        with contextlib.closing(os.fdopen(read_fd, "rb")) as reader:
            answer = reader.read(4096)
        reap(pid)
        return answer.decode("utf-8", "replace").strip() or "fail the probe died"

    return collect


_NNP_REFUSED = "prctl(PR_SET_NO_NEW_PRIVS) failed"


def _no_new_privs_reason(kernel: Kernel, seen: bool | None) -> str | None:
    """None when a child may set ``no_new_privs``, else why not. ``seen``: what the seccomp
    probe child found when it set it before its filter (its own child is forked only when
    that child did not say: a cold ``splice run`` waited ~3-12 ms for a second child making
    the same call)."""
    if seen is None:
        return _probe_no_new_privs(kernel)
    return None if seen else _NNP_REFUSED


def _probe_no_new_privs(kernel: Kernel) -> str | None:
    """None when a child may set ``no_new_privs``: it says so on a pipe (``forks.reap``)."""
    read_fd, write_fd = os.pipe()
    pid = fork_probe()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.close(read_fd)
            kernel.no_new_privs()
            os.write(write_fd, b"ok")
        finally:
            os._exit(0)
    os.close(write_fd)
    with contextlib.closing(os.fdopen(read_fd, "rb")) as reader:
        answer = reader.read(16)
    reap(pid)
    return None if answer == b"ok" else _NNP_REFUSED


@dataclass(frozen=True)
class _Started:
    """Probe children forked and not yet collected."""

    kernel: Kernel | None
    last_cap: int
    seccomp: Callable[[], seccomp_layer.SeccompStatus]
    report: Callable[[], str] | None


_started: _Started | None = None


def _start() -> _Started:
    kernel = Kernel.load()
    last_cap = last_capability()
    # The children are independent: they run side by side (on two cores, for the cost of one).
    # They are forked one right after the other: after a fork, each page the parent writes
    # faults once (copy-on-write), so the filter (seccomp.start_detect) is assembled before
    # both, not between them (~430 more faults).
    seccomp = (
        seccomp_layer.detect
        if seccomp_layer.detect.cache_info().currsize
        else seccomp_layer.start_detect()
    )
    report = None if kernel is None else _run_probe(kernel, last_cap)
    return _Started(kernel, last_cap, seccomp, report)


def prefetch() -> None:
    """Fork the probe children now; ``detect()`` collects them. ``splice run`` calls this
    before it verifies the package from bytes, so that the probes work while it hashes."""
    global _started
    if _started is None and not detect.cache_info().currsize:
        _started = _start()


@lru_cache(maxsize=1)
def detect() -> IsolationSupport:
    """The machine's support (cached for the life of the process)."""
    global _started
    started, _started = _started or _start(), None
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    kernel, last_cap, seccomp_status = started.kernel, started.last_cap, started.seccomp
    if kernel is None or started.report is None:
        why = "not Linux" if not sys.platform.startswith("linux") else "libc cannot be loaded"
        return IsolationSupport(
            False,
            why,
            False,
            why,
            False,
            why,
            root,
            last_cap,
            detect_cgroup(),
            seccomp_status(),
            f"needs the namespaces ({why})",
        )
    report = started.report()
    seccomp = seccomp_status()
    nnp_reason = _no_new_privs_reason(kernel, seccomp.no_new_privs)
    kind, _, rest = report.partition(" ")

    def unavailable(reason: str) -> IsolationSupport:
        return IsolationSupport(
            False,
            reason,
            False,
            reason,
            nnp_reason is None,
            nnp_reason,
            root,
            last_cap,
            detect_cgroup(),
            seccomp,
            f"needs the namespaces ({reason})",
        )

    if kind != "ok":
        return unavailable(f"the kernel refused them ({rest})")
    fields = rest.split(maxsplit=2)
    pid_max_ok, seen, view = (fields + ["0", "0", "the probe said nothing"][len(fields) :])[:3]
    if seen != "1":
        return unavailable(f"the private /proc listed {seen} processes instead of 1")
    return IsolationSupport(
        namespaces=True,
        namespaces_reason=None,
        pid_max=pid_max_ok == "1",
        pid_max_reason=None
        if pid_max_ok == "1"
        else "this kernel has no per-namespace pid_max (Linux 6.14 or newer)",
        no_new_privs=nnp_reason is None,
        no_new_privs_reason=nnp_reason,
        root=root,
        last_cap=last_cap,
        cgroup=detect_cgroup(),
        seccomp=seccomp,
        file_view_reason=None if view == "ok" else f"the kernel refused it ({view})",
    )
