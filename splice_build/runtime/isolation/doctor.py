"""``splice doctor``'s report: which layers a sandbox process gets on this machine, and why
a layer is missing. Built from the same detection the runtime uses (support.detect)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from splice_build.records import dataclass
from splice_build.runtime.isolation import rlimits
from splice_build.runtime.isolation.plan import plan_for
from splice_build.runtime.isolation.support import IsolationSupport, detect
from splice_build.runtime.limits import ADDRESS_SPACE_LIMIT_BYTES

_MIB = 1024 * 1024
_OFF_IN_PROCESS = "isolation = in-process: the OS layer is switched off"


@dataclass(frozen=True)
class Layer:
    name: str
    active: bool
    detail: str  # what it does when active, why it is not otherwise

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "active": self.active, "detail": self.detail}


def _node_layer(env: Mapping[str, str]) -> tuple[Layer, dict[str, Any] | None]:
    from splice_build.errors import SpliceError
    from splice_build.runtime.node import find_node

    try:
        node = find_node(env)
    except SpliceError as exc:
        return Layer("node permission model", False, exc.message), None
    detail = f"Node.js {node.version_text} --permission: file access only as the manifest grants"
    return Layer("node permission model", True, detail), {
        "path": str(node.path),
        "version": node.version_text,
        "permissionModel": True,
    }


def _namespace_layers(support: IsolationSupport, mode: str) -> list[Layer]:
    on = support.namespaces and mode != "in-process"
    why = _OFF_IN_PROCESS if mode == "in-process" else (support.namespaces_reason or "")
    return [
        Layer(
            "user namespace",
            on,
            "own uid/gid map; every capability dropped; no nested user namespace" if on else why,
        ),
        Layer(
            "pid namespace",
            on,
            "the tool is PID 1 of its own namespace; /proc lists only its processes" if on else why,
        ),
        Layer(
            "ipc namespace",
            on,
            "no System V IPC or POSIX queues shared with the host" if on else why,
        ),
        Layer(
            "network namespace",
            on,
            "every tool: only lo, down (its requests are performed by the parent)" if on else why,
        ),
    ]


def _file_view(support: IsolationSupport, mode: str) -> Layer:
    if mode == "in-process":
        return Layer("file view", False, _OFF_IN_PROCESS)
    if not support.file_view:
        return Layer("file view", False, str(support.file_view_reason))
    return Layer(
        "file view",
        True,
        "a fresh read-only root: Node and its libraries, the host, the package and the "
        "declared fs paths (read-only or writable as granted) at their own paths, "
        "/dev/{null,zero,random,urandom} and a private /proc; working directory /",
    )


def _core_limit(support: IsolationSupport, mode: str) -> Layer:
    where = (
        "/ of the file view"
        if mode != "in-process" and support.file_view
        else "an empty read-only directory"
    )
    return Layer(
        "core limit",
        True,
        f"RLIMIT_CORE 0: no core file whatever the user's limit; working directory {where}, "
        "never the package directory",
    )


def _process_limit(support: IsolationSupport, mode: str) -> Layer:
    """Read off the plan a sandbox process gets under ``mode`` (``require-os`` runs what
    ``auto`` plans, or nothing), so the report never claims a limit the runtime does not set:
    under ``in-process`` neither RLIMIT_NPROC nor the PID namespace's pid_max applies."""
    plan = plan_for("in-process" if mode == "in-process" else "auto", support)
    ways = []
    if plan.limits.processes is not None:
        ways.append(f"RLIMIT_NPROC {plan.limits.processes} in the user namespace")
    if plan.pid_max is not None:
        ways.append(f"pid_max {plan.pid_max} in the PID namespace")
    if ways:
        return Layer("process limit", True, "; ".join(ways))
    if mode == "in-process":
        why = _OFF_IN_PROCESS
    elif not support.namespaces:
        why = f"needs the namespaces ({support.namespaces_reason})"
    else:
        why = f"root is exempt from RLIMIT_NPROC and {support.pid_max_reason}"
    return Layer("process limit", False, why)


def machine_report(env: Mapping[str, str], mode: str) -> dict[str, Any]:
    """The JSON of ``splice doctor --json``."""
    support = detect()
    node_layer, node = _node_layer(env)
    limits = (
        f"address space {ADDRESS_SPACE_LIMIT_BYTES // _MIB} MiB, CPU {rlimits.CPU_SECONDS} s, "
        f"open files {rlimits.OPEN_FILES}, file size {rlimits.FILE_SIZE_BYTES // _MIB} MiB"
    )
    cgroup = support.cgroup
    layers = [
        node_layer,
        Layer(
            "in-process guards",
            True,
            "module guard, process locks; fetch is a shim whose requests the parent performs",
        ),
        *_namespace_layers(support, mode),
        _file_view(support, mode),
        Layer(
            "no_new_privs",
            support.no_new_privs,
            "no exec can gain privileges"
            if support.no_new_privs
            else str(support.no_new_privs_reason),
        ),
        Layer(
            "seccomp",
            support.seccomp.available and mode != "in-process",
            "isolation = in-process: the filter is not installed"
            if mode == "in-process"
            else support.seccomp.detail,
        ),
        Layer("resource limits", True, limits),
        _core_limit(support, mode),
        _process_limit(support, mode),
        Layer(
            "cgroup v2 memory limit",
            False,
            f"a delegated cgroup exists ({cgroup.detail}) but tools are not placed in "
            "cgroups; the address-space limit applies"
            if cgroup.usable
            else cgroup.detail,
        ),
    ]
    os_layer = mode != "in-process" and support.namespaces
    return {
        "isolation": mode,
        "osLayer": os_layer,
        "requireOsSatisfied": not support.missing_required(),
        "node": node,
        "layers": [layer.to_json() for layer in layers],
    }


def render_text(report: Mapping[str, Any]) -> str:
    lines = [
        f"isolation = {report['isolation']}: "
        + (
            "the OS layer is applied to every tool"
            if report["osLayer"]
            else "in-process guards only"
        )
    ]
    for layer in report["layers"]:
        mark = "on " if layer["active"] else "off"
        lines.append(f"  [{mark}] {layer['name']}: {layer['detail']}")
    return "\n".join(lines)
